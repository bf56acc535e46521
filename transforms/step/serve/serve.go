// Package serve makes a GPU executor binary of the step families a main imports.
//
// It serves every registered step's GPU op, with the step's CPU
// function in a build without tags (the CPU reference executor, CGO_ENABLED=0),
// and with the step's CUDA launch on the GPU in a build with the cuda tag.
// The executor of beamgpu's own pipelines (pipelines/beamgpu-executor) is
//
//	package main
//
//	import (
//		"os"
//
//		_ "github.com/beamgpu/beamgpu/transforms/raster"
//		_ "github.com/beamgpu/beamgpu/transforms/tensor"
//		"github.com/beamgpu/beamgpu/transforms/step/serve"
//	)
//
//	func main() { os.Exit(serve.Main(os.Args[1:])) }
//
// and a user's module makes its own the same way, importing its own
// families. It links no Beam package: the families' step packages are pure
// Go, their Beam DoFns live apart.
//
// The command line is runtime/executor's (serve, selftest, version). In the
// CUDA build, a GPU op whose step has no CUDA launch registered is not served
// (clients then run that step on the CPU under --backend=auto, and refuse
// --backend=gpu for it, saying why), and selftest fails naming it.
package serve

import (
	"os"

	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/runtime/executor/testops"
)

// Main runs the executor command line over the registered steps and returns
// the exit status: runtime/executor's commands (serve, selftest, version),
// and bench, the GPU benchmark (bench --help says what it measures).
func Main(args []string) int {
	if len(args) > 0 && args[0] == "bench" {
		return bench(args[1:], os.Stdout, os.Stderr)
	}
	b, ops := build()
	// Two harmless transport probes: echo (there and back) and discard (in
	// only), for the benchmark and for diagnosing a machine; the other test
	// ops (crash, fatal, sleep) only test builds serve.
	ops = append(ops, testops.Probes()...)
	for _, op := range ops {
		server.Register(op)
	}
	return executor.Main(b, args, os.Stdout, os.Stderr)
}
