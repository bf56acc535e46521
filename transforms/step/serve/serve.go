// Package serve makes an executor binary of the step families a main
// imports: it serves every registered step's GPU op, with the step's CPU
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
)

// Main runs the executor command line over the registered steps and returns
// the exit status.
func Main(args []string) int {
	b, ops := build()
	for _, op := range ops {
		server.Register(op)
	}
	return executor.Main(b, args, os.Stdout, os.Stderr)
}
