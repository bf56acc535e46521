package integration

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clipModule writes the module of testdata/clipstep into a new directory, as
// a user's module beside the library: its go.mod requires beamgpu and
// replaces it with this checkout. It returns the module's directory.
func clipModule(t *testing.T) string {
	t.Helper()
	require.NoError(t, statSources())
	dir := t.TempDir()
	err := filepath.WalkDir("testdata/clipstep", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/clipstep", path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	require.NoError(t, err)
	checkout, err := filepath.Abs("..")
	require.NoError(t, err)
	mod := "module example.com/clipstep\n\ngo 1.26\n\nrequire github.com/beamgpu/beamgpu v0.0.0\n\nreplace github.com/beamgpu/beamgpu => " + checkout + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644))
	sum, err := os.ReadFile("../go.sum")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	return dir
}

// goIn runs the go command in dir, the module's requirements completed from
// beamgpu's (-mod=mod), and returns its output.
func goIn(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off"), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// A step plugs in from outside the module: a throwaway module defines its
// own step (clip: CPU function, stub, codec, a .cu kernel with its PTX and
// the CUDA launch behind the cuda tag) and its own executor main from the
// library. The executor is built without cgo (the reference executor) and a
// small pipeline of the module runs on prism with --backend=cpu, gpu (through
// that executor) and stub. (CI also compiles the module with -tags cuda
// against the CUDA headers and runs its launch's check: build-cuda.sh.)
func TestAStepFromAnotherModule(t *testing.T) {
	dir := clipModule(t)
	bin := filepath.Join(dir, "bin")
	goIn(t, dir, []string{"CGO_ENABLED=0"}, "build", "-o", bin+"/", "./cmd/clip-executor", "./cmd/clippipe")

	out, err := exec.Command(filepath.Join(bin, "clip-executor"), "selftest").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "ok    clipstep.clip")
	out, err = exec.Command(filepath.Join(bin, "clip-executor"), "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "ops: clipstep.clip, ", "the executor serves the module's step (and the raster steps: the module links their family for raster.Tile)")

	results := map[string][]map[string]any{}
	for _, kind := range []string{"cpu", "gpu", "stub"} {
		file := filepath.Join(dir, kind+".jsonl")
		cmd := exec.Command(filepath.Join(bin, "clippipe"), "--output="+file, "--backend="+kind,
			"--gpu_executor="+filepath.Join(bin, "clip-executor"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Run(), "--backend=%s:\n%s", kind, stderr.String())
		assert.Regexp(t, `clip\s+`+kind, stderr.String(), "the explain report")
		data, err := os.ReadFile(file)
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
