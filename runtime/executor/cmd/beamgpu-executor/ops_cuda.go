//go:build cuda

package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/cuda"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/runtime/executor/stepops"
)

// The device-memory budget of a CUDA executor: BEAMGPU_GPU_MEMORY_FRACTION
// (default 0.8) of the GPU's memory, divided among BEAMGPU_GPU_PROCESSES
// (default 1) processes that share the GPU, as several SDK harness
// processes or MPS clients on one worker do.
const (
	envFraction  = client.EnvMemoryFraction
	envProcesses = client.EnvProcesses
)

var (
	dev     *cuda.Device
	openErr error
)

// registerStepOps opens GPU 0 and registers the steps' ops served by its
// kernels. Without a usable GPU it registers nothing and the executor
// announces no device: clients then fall back to the CPU (auto) or refuse
// (--backend=gpu), with openErr as the reason.
func registerStepOps() {
	dev, openErr = cuda.Open(0, 0)
	if openErr != nil {
		return
	}
	fraction, processes := client.DefaultMemoryFraction, 1
	if v, err := strconv.ParseFloat(os.Getenv(envFraction), 64); err == nil && v > 0 && v <= 1 {
		fraction = v
	}
	if v, err := strconv.Atoi(os.Getenv(envProcesses)); err == nil && v > 0 {
		processes = v
	}
	dev.SetBudget(cuda.ShareBudget(dev.Info().TotalBytes, fraction, processes))
	ops, err := stepops.Ops(dev.Steps())
	if err != nil {
		openErr = err
		return
	}
	for _, op := range ops {
		server.Register(op)
	}
}

func build() executor.Build {
	return executor.Build{Kind: "cuda", Device: func() string {
		if openErr != nil {
			fmt.Fprintln(os.Stderr, "beamgpu-executor: no usable GPU:", openErr)
			return ""
		}
		return dev.Info().String()
	}, NoDevice: func() string {
		if openErr != nil {
			return openErr.Error()
		}
		return ""
	}}
}
