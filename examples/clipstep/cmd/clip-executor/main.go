// Command clip-executor is this module's GPU executor.
//
// It is beamgpu's executor library serving the clip step: the CPU reference
// executor built as is, the CUDA one with -tags cuda.
package main

import (
	"os"

	_ "example.com/clipstep/clip"
	"github.com/beamgpu/beamgpu/transforms/step/serve"
)

func main() { os.Exit(serve.Main(os.Args[1:])) }
