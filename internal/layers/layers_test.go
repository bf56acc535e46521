package layers_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/beamgpu/beamgpu/"

// beam is what every rule that forbids Beam forbids.
const beam = "github.com/apache/beam/"

// A rule: no package under one of from (a package path relative to the
// module, or a prefix ending in "/") may import a path under never (the
// same form; beam for Beam), unless it is under allow.
type rule struct {
	from, never, allow []string
	why                string
}

var rules = []rule{
	{from: []string{"runtime/"}, never: []string{"transforms/", "stubs/", "pipelines/"},
		why: "runtime/ is the lowest floor: it imports nothing from the steps or the pipelines"},
	{from: []string{"internal/", "transforms/nd", "transforms/gemm", "transforms/wire", "transforms/step/files"},
		never: []string{"runtime/", "transforms/", "stubs/", "pipelines/", beam}, allow: []string{"transforms/wire", "transforms/nd", "transforms/gemm"},
		why: "neutral ground lies below every family and the runtime"},
	{from: []string{"transforms/"}, never: []string{"stubs/", "pipelines/"},
		why: "the steps lie below their stubs and the pipelines"},
	{from: []string{"stubs/"}, never: []string{"pipelines/"},
		why: "the stubs lie below the pipelines"},
	{from: []string{"transforms/step", "transforms/step/serve", "transforms/step/steptest"}, never: []string{beam},
		why: "the step framework imports no Beam (stepbeam runs steps in Beam), so that executors link it"},
	{from: []string{"transforms/onnx", "transforms/onnx/onnxpb"},
		never: []string{"transforms/step", "transforms/step/", "runtime/", beam}, allow: []string{"runtime/executor/gpu"},
		why: "transforms/onnx is the ONNX runtime alone; its step is transforms/onnx/onnxstep"},
	{from: []string{"transforms/onnx/onnxstep", "transforms/raster", "transforms/tensor"}, never: []string{beam},
		why: "a step family imports no Beam (its Beam package does), so that the executor links it"},
	{from: []string{"transforms/text/"}, never: []string{"runtime/", "transforms/", beam}, allow: []string{"transforms/text/"},
		why: "transforms/text is text processing alone (tokenizers): no Beam, no step framework, so that any pipeline or step uses it"},
	{from: []string{"transforms/raster"}, never: []string{"transforms/tensor", "transforms/onnx"}, why: "a family imports no other family"},
	{from: []string{"transforms/tensor"}, never: []string{"transforms/raster", "transforms/onnx"}, why: "a family imports no other family"},
	{from: []string{"transforms/onnx/"}, never: []string{"transforms/raster", "transforms/tensor"}, why: "a family imports no other family"},
}

// under reports whether p is pattern (a package) or under it (a prefix
// ending in "/"); beam matches Beam's packages.
func under(p, pattern string) bool {
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(p+"/", pattern) || strings.HasPrefix(p, pattern)
	}
	return p == pattern
}

func matches(p string, patterns []string) bool {
	for _, q := range patterns {
		if under(p, q) {
			return true
		}
	}
	return false
}

// imports returns, per package directory (relative to the module root),
// its files' imports: module paths relative to the module, Beam's as they
// are, the rest left out. Tests, testdata and the example module (a module
// of its own) are not read.
func imports(t *testing.T, root string) map[string]map[string][]string {
	pkgs := map[string]map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata"), rel == "examples":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			switch {
			case strings.HasPrefix(p, module):
				p = strings.TrimPrefix(p, module)
			case strings.HasPrefix(p, beam):
			default:
				continue
			}
			if pkgs[dir] == nil {
				pkgs[dir] = map[string][]string{}
			}
			pkgs[dir][p] = append(pkgs[dir][p], filepath.Base(path))
		}
		return nil
	})
	require.NoError(t, err)
	return pkgs
}

// TestLayers holds every package to the rules.
func TestLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module root")
	pkgs := imports(t, root)
	require.Contains(t, pkgs, "transforms/onnx", "the walk found the packages")
	var broken []string
	for dir, imps := range pkgs {
		for _, r := range rules {
			if !matches(dir, r.from) {
				continue
			}
			for p, files := range imps {
				if matches(p, r.never) && !matches(p, r.allow) && !(p == dir || strings.HasPrefix(p, dir+"/") && !matches(p, []string{beam})) {
					broken = append(broken, dir+"/"+strings.Join(files, ",")+" imports "+p+": "+r.why)
				}
			}
		}
	}
	sort.Strings(broken)
	assert.Empty(t, broken)
}

// The rules catch what they are for: a runtime package importing a step,
// and the ONNX runtime importing the step framework.
func TestRulesBite(t *testing.T) {
	check := func(dir, imp string) bool {
		for _, r := range rules {
			if matches(dir, r.from) && matches(imp, r.never) && !matches(imp, r.allow) {
				return true
			}
		}
		return false
	}
	assert.True(t, check("runtime/launch", "transforms/step"))
	assert.True(t, check("transforms/onnx", "transforms/step/files"))
	assert.True(t, check("transforms/onnx", "runtime/backend"))
	assert.False(t, check("transforms/onnx", "runtime/executor/gpu"))
	assert.True(t, check("transforms/nd", "transforms/tensor"))
	assert.True(t, check("transforms/step", beam+"sdks/v2/go/pkg/beam"))
	assert.False(t, check("transforms/step/stepbeam", beam+"sdks/v2/go/pkg/beam"))
	assert.True(t, check("transforms/tensor", "transforms/onnx"))
	assert.False(t, check("transforms/onnx/onnxstep", "transforms/step"))
}
