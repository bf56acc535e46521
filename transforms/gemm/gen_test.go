package gemm

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// kernel_amd64.s is what gen_amd64.go writes (run go generate after
// changing the generator).
func TestGeneratedKernelsUpToDate(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to run the generator")
	}
	out := filepath.Join(t.TempDir(), "kernel_amd64.s")
	cmd := exec.Command(goBin, "run", "gen_amd64.go", "-o", out)
	cmd.Env = append(os.Environ(), "GOOS=", "GOARCH=")
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	got, err := os.ReadFile("kernel_amd64.s")
	require.NoError(t, err)
	require.True(t, string(want) == string(got), "kernel_amd64.s differs from what gen_amd64.go writes: run go generate ./transforms/gemm")
}
