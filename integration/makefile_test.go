package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeMakeCommands returns the `make plan` and `make dataflow` command
// lines of the code blocks of the README and docs/, continuation lines
// joined, as a user pastes them into a shell.
func readmeMakeCommands(t *testing.T) []string {
	t.Helper()
	var text string
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		text += strings.ReplaceAll(string(data), "\\\n", " ") + "\n"
	}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if regexp.MustCompile(`^make (plan|dataflow)\b`).MatchString(line) {
			out = append(out, regexp.MustCompile(`\s+`).ReplaceAllString(line, " "))
		}
	}
	return out
}

// fakeGo is a stand-in for the go command that records each invocation's
// arguments, one file per call, one argument per line.
func fakeGo(t *testing.T) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, "go")
	script := "#!/bin/sh\nn=$(ls " + dir + "/call-* 2>/dev/null | wc -l)\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + dir + "/call-$n\n"
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
	return bin, dir
}

func calls(t *testing.T, dir string) [][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "call-*"))
	require.NoError(t, err)
	var out [][]string
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		out = append(out, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"))
	}
	return out
}

// The make commands of the README and docs/ work as written: pasted into a shell, every
// ARGS value reaches the pipeline as one argument, ';' and JSON included
// (before, the shell ran `count:1` as a command). make runs with a fake go
// command that records what it is given; the plan commands' arguments are
// then given to the real pipeline binary, which plans with them.
func TestReadmeMakeCommandsWorkAsWritten(t *testing.T) {
	t.Parallel()
	cmds := readmeMakeCommands(t)
	require.GreaterOrEqual(t, len(cmds), 4, "the make plan and make dataflow commands of the README and docs/: %q", cmds)
	sawSemicolon := false
	for _, cmd := range cmds {
		t.Run(cmd, func(t *testing.T) {
			gobin, dir := fakeGo(t)
			planDir := t.TempDir()
			line := strings.Replace(cmd, "make ", "make -s GO="+gobin+" PLAN_DIR="+planDir+" ", 1)
			sh := exec.Command("sh", "-c", line)
			sh.Dir = ".."
			out, err := sh.CombinedOutput()
			require.NoError(t, err, "%s\n%s", line, out)
			assert.NotContains(t, string(out), "not found")
			var runs [][]string
			for _, c := range calls(t, dir) {
				if c[0] == "run" {
					runs = append(runs, c)
				}
			}
			require.NotEmpty(t, runs)
			if m := regexp.MustCompile(`ARGS='([^']*)'`).FindStringSubmatch(cmd); m != nil {
				for _, want := range strings.Fields(m[1]) {
					for _, r := range runs {
						assert.Contains(t, r, want, "ARGS word %q is one argument", want)
					}
					sawSemicolon = sawSemicolon || strings.Contains(want, ";")
				}
			}
			for _, r := range runs {
				pipeline := strings.TrimPrefix(r[1], "./pipelines/")
				args := slices.Clone(r[2:])
				if strings.HasPrefix(cmd, "make dataflow") {
					assert.Contains(t, args, "--worker_binary=out/bin/"+pipeline+"-worker", "make dataflow stages the binary it built")
					assert.Contains(t, calls(t, dir)[0], "build", "and builds it first")
					// Offline, the submission is planned instead.
					args = append(args, "--plan_out="+filepath.Join(t.TempDir(), "p"))
				}
				if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--output=") }) {
					args = append(args, "--output="+t.TempDir())
				}
				code, stdout, stderr := runBin(t, pipeline, args...)
				require.Equal(t, 0, code, "%s %q\nstdout:\n%s\nstderr:\n%s", pipeline, args, stdout, stderr)
				assert.Contains(t, stdout, "nothing was run")
			}
		})
	}
	assert.True(t, sawSemicolon, "an ARGS example of the docs has a ';' in a value")
}

// make plan names a registry path even without IMAGE (a local tag is refused
// by the launcher), and says what the workers' containers need.
func TestMakePlanDefaults(t *testing.T) {
	t.Parallel()
	gobin, dir := fakeGo(t)
	cmd := exec.Command("make", "-s", "plan", "GO="+gobin, "PIPELINES=landsat")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	c := calls(t, dir)
	require.Len(t, c, 1)
	assert.Contains(t, c[0], "--sdk_container_image=us-central1-docker.pkg.dev/my-project/beamgpu/worker:dev")
	assert.Contains(t, string(out), "check df -h /dev/shm on a first worker")

	cmd = exec.Command("make", "-s", "dataflow", "GO="+gobin, "PROJECT=p", "STAGING=gs://b/s")
	cmd.Dir = ".."
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "IMAGE=beamgpu-worker:dev names no registry")
}
