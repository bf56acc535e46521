package integration

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docFiles are the markdown files a reader of the repository reads: the
// README, docs/ and the READMEs beside the code.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"../README.md", "../examples/clipstep/README.md", "../containers/k8s/README.md"}
	more, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, more)
	return append(files, more...)
}

// prose returns text without its fenced code blocks and inline code, where
// brackets and parentheses are code, not links.
func prose(text string) string {
	text = regexp.MustCompile("(?s)```.*?```").ReplaceAllString(text, "")
	return regexp.MustCompile("`[^`\n]*`").ReplaceAllString(text, "")
}

// Every link of the README and docs/ to a file of the repository resolves,
// inside the repository; nothing in the repository points outside it (a
// local path on the machine it was written on, a sibling checkout).
func TestDocLinksStayInTheRepository(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(prose(string(data)), -1) {
			target := m[1]
			if strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "#") {
				continue
			}
			path := filepath.Join(filepath.Dir(f), strings.SplitN(target, "#", 2)[0])
			abs, err := filepath.Abs(path)
			require.NoError(t, err)
			rel, err := filepath.Rel(root, abs)
			require.NoError(t, err)
			assert.False(t, strings.HasPrefix(rel, ".."), "%s: link %s leaves the repository", f, target)
			_, err = os.Stat(abs)
			assert.NoError(t, err, "%s: link %s", f, target)
		}
	}
	out, err := exec.Command("git", "-C", root, "grep", "-n", "-I", "-E", `\.\./shared/|/work/(shared|wt|main)`, "--", ".", ":!integration/docs_test.go").CombinedOutput()
	if err == nil {
		t.Errorf("the repository points outside itself:\n%s", out)
	}
}

// The commands of the README and docs/ name what exists: every make target
// is one of the Makefile's, every package a go command runs from the
// repository's root (or the example module's) is there.
func TestDocCommandsNameWhatExists(t *testing.T) {
	mk, err := exec.Command("make", "-C", "..", "-s", "help").CombinedOutput()
	require.NoError(t, err, "%s", mk)
	targets := map[string]bool{}
	for _, line := range strings.Split(string(mk), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			targets[f[0]] = true
		}
	}
	makeRef := regexp.MustCompile("(?m)(?:^|`|&& |; )make ([a-z][a-z0-9-]*)")
	goRef := regexp.MustCompile(`go (?:run|build|test|vet)(?: -[^ ]+)* (\./[A-Za-z0-9_./-]+)`)
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range makeRef.FindAllStringSubmatch(string(data), -1) {
			assert.True(t, targets[m[1]], "%s: make %s is no target of the Makefile", f, m[1])
		}
		for _, m := range goRef.FindAllStringSubmatch(string(data), -1) {
			pkg := strings.TrimSuffix(strings.TrimSuffix(m[1], "/..."), "/")
			_, inRoot := os.Stat(filepath.Join("..", pkg))
			_, inExample := os.Stat(filepath.Join("../examples/clipstep", pkg))
			assert.True(t, inRoot == nil || inExample == nil, "%s: %s names no directory", f, m[0])
		}
	}
}

// The Go code of every package's documentation is real: each line of a
// snippet that parses as Go is a line (or part of one) of the repository's
// Go sources, examples included, so that go vet and go test check it.
func TestPackageDocSnippetsAreCompiledCode(t *testing.T) {
	root := ".."
	var sources []string
	var docs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sources = append(sources, string(data))
		docs = append(docs, path)
		return nil
	})
	require.NoError(t, err)
	code := map[string]bool{}
	for _, src := range sources {
		for _, line := range strings.Split(src, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "//") {
				code[l] = true
			}
		}
	}
	inCode := func(l string) bool {
		if code[l] {
			return true
		}
		for c := range code {
			if strings.Contains(c, l) {
				return true
			}
		}
		return false
	}
	checked := 0
	for _, path := range docs {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil || f.Doc == nil {
			continue
		}
		var p comment.Parser
		for _, block := range p.Parse(packageDoc(f.Doc)).Content {
			c, ok := block.(*comment.Code)
			if !ok || !isGo(c.Text) {
				continue
			}
			checked++
			for _, line := range strings.Split(c.Text, "\n") {
				l := strings.TrimSpace(line)
				if i := strings.Index(l, " //"); i >= 0 && !strings.Contains(l[:i], `"`) {
					l = strings.TrimSpace(l[:i])
				}
				if l == "" || strings.HasPrefix(l, "//") || l == "}" || l == ")" || l == "})" {
					continue
				}
				assert.True(t, inCode(l), "%s: the package doc's snippet line %q is in no Go source", path, l)
			}
		}
	}
	assert.Positive(t, checked, "package docs with Go snippets")
}

func packageDoc(g *ast.CommentGroup) string { return g.Text() }

// isGo reports whether a code block of a doc comment is Go (a declaration
// or statements, with a Go keyword, := or a qualified call), not a shell
// command, a formula, a table or a diagram.
func isGo(text string) bool {
	if !regexp.MustCompile(`\b(func|import|var|type|return)\b|:=|\b[A-Za-z_]\w*\.[A-Z]\w*[({\[]`).MatchString(text) {
		return false
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+text, 0); err == nil {
		return true
	}
	_, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+text+"\n}", 0)
	return err == nil
}
