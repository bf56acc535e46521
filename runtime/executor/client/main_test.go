package client_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// executorBin is the reference executor, built once for the package's tests
// and benchmarks: they go through the real out-of-process binary.
var executorBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "beamgpu-executor-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	executorBin = filepath.Join(dir, "beamgpu-executor")
	build := exec.Command("go", "build", "-o", executorBin, "github.com/beamgpu/beamgpu/runtime/executor/cmd/beamgpu-executor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the reference executor:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
