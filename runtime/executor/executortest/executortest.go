// Package executortest lets a test binary serve as the GPU executor, so
// that tests run steps with --backend=gpu through a real second process (the
// CPU reference ops, over the real protocol and shared memory) without
// building the executor binary.
//
// In the test package:
//
//	func TestMain(m *testing.M) {
//		executortest.MaybeServe() // in the child: serve, then exit
//		executortest.Use()        // in the parent: GPU ops go to a child
//		ptest.Main(m)
//	}
package executortest

import (
	"os"

	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/runtime/executor/stepops"
	"github.com/beamgpu/beamgpu/runtime/executor/testops"
)

// env marks the child process started as an executor.
const env = "BEAMGPU_EXECUTORTEST_SERVE"

// MaybeServe, in a process started as an executor by Use, registers the
// reference ops, serves, and exits; elsewhere it returns at once.
func MaybeServe() {
	if os.Getenv(env) != "1" {
		return
	}
	for _, op := range testops.All() {
		server.Register(op)
	}
	for _, op := range stepops.ReferenceOps() {
		server.Register(op)
	}
	b := executor.Build{Kind: "reference (CPU, test binary)", Device: func() string { return "cpu-reference (test binary)" }}
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "serve" {
		// Test executors poison their outputs: an op that leaves part of
		// one unwritten fails the equivalence tests.
		args = append([]string{"serve", "--poison_outputs"}, args[1:]...)
	}
	os.Exit(executor.Main(b, args, os.Stdout, os.Stderr))
}

// Use points the steps' GPU implementations at this test binary (started
// again as an executor) and returns its path, for backend.Config.Executor
// through stepops.Executor.
func Use() string {
	os.Setenv(env, "1") // inherited by the executors this process starts
	path, err := os.Executable()
	if err != nil {
		path = os.Args[0]
	}
	stepops.SetExecutor(path)
	return path
}
