//go:build cuda && !beamgpu_oplist

package serve

import (
	"fmt"
	"os"
	"strconv"

	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/cuda"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// The device-memory budget of a CUDA executor: BEAMGPU_GPU_MEMORY_FRACTION
// (default 0.8) of the GPU's memory, divided among BEAMGPU_GPU_PROCESSES
// (default 1) processes that share the GPU, as several SDK harness processes
// or MPS clients on one worker do.
const (
	envFraction  = client.EnvMemoryFraction
	envProcesses = client.EnvProcesses
)

// build opens GPU 0 and serves every GPU op whose step has a CUDA launch with
// it. Without a usable GPU it serves nothing and announces no device: clients
// then fall back to the CPU (auto) or refuse (--backend=gpu), with the reason.
func build() (executor.Build, []server.Op) {
	dev, err := cuda.Open(0, 0)
	b := executor.Build{Kind: "cuda", Device: func() string {
		if err != nil {
			fmt.Fprintln(os.Stderr, "beamgpu-executor: no usable GPU:", err)
			return ""
		}
		return dev.Info().String()
	}, NoDevice: func() string {
		if err != nil {
			return err.Error()
		}
		return ""
	}}
	if err != nil {
		return b, nil
	}
	fraction, processes := client.DefaultMemoryFraction, 1
	if v, err := strconv.ParseFloat(os.Getenv(envFraction), 64); err == nil && v > 0 && v <= 1 {
		fraction = v
	}
	if v, err := strconv.Atoi(os.Getenv(envProcesses)); err == nil && v > 0 {
		processes = v
	}
	dev.SetBudget(cuda.ShareBudget(dev.Info().TotalBytes, fraction, processes))
	// The shared-memory arenas, page-locked once each, are where batches are
	// copied to and from the device: one DMA each way.
	b.OnArena = dev.RegisterHost
	var ops []server.Op
	for _, s := range step.All() {
		if s.Backend().GPUOp == "" {
			continue
		}
		if op := s.LaunchOp(dev); op != nil {
			ops = append(ops, op)
		} else {
			b.Missing = append(b.Missing, fmt.Sprintf("%s (step %s): no CUDA launch registered", s.Backend().GPUOp, s.Name()))
		}
	}
	return b, ops
}
