package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docBlock returns the first ```sh block of the markdown file path after the
// heading heading.
func docBlock(t *testing.T, path, heading string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(data)
	i := strings.Index(text, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "%s has no heading %q", path, heading)
	text = text[i:]
	start := strings.Index(text, "```sh\n")
	require.GreaterOrEqual(t, start, 0, "no sh block after %q in %s", heading, path)
	text = text[start+len("```sh\n"):]
	end := strings.Index(text, "```")
	require.GreaterOrEqual(t, end, 0)
	return text[:end]
}

// exampleCopy is where TestExampleModuleAsDocumented copies the example
// module: outside the repository, at a path of its own for each checkout
// (the same path every run, so that the Go build and test caches serve a
// copy whose sources did not change).
func exampleCopy(t *testing.T, checkout string) string {
	t.Helper()
	h := sha256.Sum256([]byte(checkout))
	dir := filepath.Join(os.TempDir(), "beamgpu-example-"+hex.EncodeToString(h[:6]), "clipstep")
	require.NoError(t, os.RemoveAll(filepath.Dir(dir)))
	require.NoError(t, os.MkdirAll(filepath.Dir(dir), 0o755))
	t.Cleanup(func() { os.RemoveAll(filepath.Join(dir, "bin")) })
	return dir
}

// A step plugs in from outside the module, exactly as docs/writing-a-step.md
// says: the commands of its "From a copy to a run" block copy
// examples/clipstep (a module with its own go.mod: a step with CPU function,
// stub, codec, kernel and launch, its Beam package, its pipeline on job.Main
// and its executor) outside the repository, point it at this checkout, vet
// and test it, run its pipeline on prism with --backend=cpu, stub and gpu
// (through its own reference executor), and plan it for Dataflow. The
// outputs agree. (CI also builds, vets and tests the module with -tags cuda
// against the CUDA headers and checks its PTX: containers/build-cuda.sh.)
func TestExampleModuleAsDocumented(t *testing.T) {
	slowCheck(t)
	require.NoError(t, statSources())
	checkout, err := filepath.Abs("..")
	require.NoError(t, err)
	dir := exampleCopy(t, checkout)

	// The README's short version, from the repository's root.
	stdout, stderr := runDocumented(t, checkout, dir, docBlock(t, "../README.md", "## A step and a pipeline of your own"))
	assert.Regexp(t, `(?m)^  clip\s+cpu\s`, stderr, "the explain report")
	assert.Contains(t, stdout, "clippipe: done in")
	// clip.Input is step.Sized: the summary counts pixels, not batches.
	m := regexp.MustCompile(`(?m)^\s*clip\s+cpu\s+(\d+)\s+(\d+)\s`).FindStringSubmatch(stdout)
	require.NotNil(t, m, "the step's line of the summary:\n%s", stdout)
	assert.Greater(t, len(m[2]), len(m[1]), "more pixels than batches: %s", m[0])
	require.NoError(t, os.RemoveAll(dir))

	// docs/writing-a-step.md's, from anywhere.
	stdout, stderr = runDocumented(t, t.TempDir(), dir, docBlock(t, "../docs/writing-a-step.md", "## From a copy to a run"))

	out, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(out), "replace github.com/beamgpu/beamgpu => "+checkout, "the copy builds with this checkout")
	assert.Contains(t, stdout, "ok    clipstep.clip", "the executor's selftest")
	assert.Regexp(t, `(?m)^  clip\s+cpu\s`, stderr, "the explain report")
	assert.Regexp(t, `(?m)^  clip\s+stub\s`, stderr)
	assert.Regexp(t, `(?m)^  clip\s+gpu\s+clipstep\.clip`, stderr)
	assert.Contains(t, stdout, "STUB RUN: clip ran stand-ins", "the stub run says so")
	assert.Contains(t, stdout, "nothing was run", "the Dataflow plan")
	plan, err := os.ReadFile(filepath.Join(dir, "out", "plan", "plan.txt"))
	require.NoError(t, err)
	assert.Regexp(t, `type:nvidia-l4;count:1`, string(plan), "the GPU step carries its accelerator hint")

	results := map[string][]map[string]any{}
	for _, kind := range []string{"cpu", "gpu", "stub"} {
		data, err := os.ReadFile(filepath.Join(dir, "out", kind+".jsonl"))
		require.NoError(t, err)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var tile map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &tile), line)
			results[kind] = append(results[kind], tile)
		}
		require.Len(t, results[kind], 5, "five tiles in, five out (--backend=%s)", kind)
	}
	assert.Equal(t, results["cpu"], results["gpu"], "the GPU step, through the module's own executor, computes what the CPU does")
	clipped, nulls := 0, 0
	for i, tile := range results["cpu"] {
		stub := results["stub"][i]
		assert.Equal(t, tile["tile"], stub["tile"])
		assert.Equal(t, tile["names"], stub["names"])
		planes, stubPlanes := tile["planes"].([]any), stub["planes"].([]any)
		require.Len(t, stubPlanes, len(planes))
		for p := range planes {
			values, stubValues := planes[p].([]any), stubPlanes[p].([]any)
			require.Len(t, stubValues, len(values), "the stub keeps the shape")
			for j, v := range values {
				assert.Equal(t, 0.0, stubValues[j], "the stub computes nothing")
				if v == nil {
					nulls++
					continue
				}
				x := v.(float64)
				assert.True(t, x >= -0.5 && x <= 1, "clipped to [-0.5, 1]: %v", x)
				if x == -0.5 || x == 1 {
					clipped++
				}
			}
		}
	}
	assert.Positive(t, clipped, "some values were clipped")
	assert.Equal(t, 5, nulls, "NaN stays NaN, one per tile")
}

// runDocumented runs a documented block of commands in a shell in dir, with
// the checkout for /path/to/beamgpu and copy for ~/clipstep, and returns its
// stdout and stderr.
func runDocumented(t *testing.T, dir, copy, block string) (string, string) {
	t.Helper()
	checkout, err := filepath.Abs("..")
	require.NoError(t, err)
	script := strings.NewReplacer("/path/to/beamgpu", checkout, "~/clipstep", copy).Replace(block)
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	// A user's shell: none of the variables this test binary's executors
	// use (BEAMGPU_*) leaks into it.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BEAMGPU_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GOWORK=off", "GOFLAGS=-buildvcs=false")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "the documented commands:\n%s\nstdout:\n%s\nstderr:\n%s\n"+
		"(if go.mod or go.sum are out of date after a change of beamgpu's requirements: cd examples/clipstep && go mod tidy)",
		script, stdout.String(), stderr.String())
	return stdout.String(), stderr.String()
}

// The example module's go.mod is committed and complete: it builds in the
// repository as it stands (its replace directive points at the checkout).
func TestExampleModuleIsComplete(t *testing.T) {
	data, err := os.ReadFile("../examples/clipstep/go.mod")
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`(?m)^replace github.com/beamgpu/beamgpu => \.\./\.\.$`), string(data))
	assert.Regexp(t, regexp.MustCompile(`(?m)^tool github.com/beamgpu/beamgpu/cmd/beamgpu-ptx$`), string(data))
	assert.FileExists(t, "../examples/clipstep/go.sum")
}
