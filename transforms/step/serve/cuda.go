//go:build cuda && !beamgpu_oplist

package serve

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/cuda"
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// The device-memory budget of a CUDA executor, on each of its GPUs:
// BEAMGPU_GPU_MEMORY_FRACTION (default 0.8) of that GPU's memory, divided
// among BEAMGPU_GPU_PROCESSES (default 1) processes that share the GPUs, as
// several SDK harness processes or MPS clients on one worker do (each
// process sees every GPU of the worker, so each GPU is shared by all).
const (
	envFraction  = client.EnvMemoryFraction
	envProcesses = client.EnvProcesses
)

// engines runs a launch on the GPU its batch was placed on (server.DeviceOf):
// the steps' ops are made once, over it, and need not know how many GPUs
// there are.
type engines []*cuda.Device

func (e engines) Launch(ctx context.Context, op string, output func(n int) ([]byte, error), fn func(c gpu.Call) error) error {
	i := server.DeviceOf(ctx)
	if i < 0 || i >= len(e) {
		return fmt.Errorf("executor: batch placed on device %d of %d", i, len(e))
	}
	return e[i].Launch(ctx, op, output, fn)
}

// openAll opens every GPU the process sees (CUDA_VISIBLE_DEVICES), each with
// its own context, lanes, buffer pool, resident data and budget.
func openAll() ([]*cuda.Device, error) {
	n, err := cuda.Visible()
	if err != nil {
		return nil, err
	}
	fraction, processes := client.DefaultMemoryFraction, 1
	if v, err := strconv.ParseFloat(os.Getenv(envFraction), 64); err == nil && v > 0 && v <= 1 {
		fraction = v
	}
	if v, err := strconv.Atoi(os.Getenv(envProcesses)); err == nil && v > 0 {
		processes = v
	}
	var devs []*cuda.Device
	for i := range n {
		d, err := cuda.Open(i, 0)
		if err != nil {
			for _, o := range devs {
				o.Close()
			}
			return nil, fmt.Errorf("GPU %d of %d visible: %w", i, n, err)
		}
		d.SetBudget(cuda.ShareBudget(d.Info().TotalBytes, fraction, processes))
		devs = append(devs, d)
	}
	return devs, nil
}

// build opens every visible GPU and serves every GPU op whose step has a
// CUDA launch on them. Without a usable GPU it serves nothing and announces
// no device: clients then fall back to the CPU (auto) or refuse
// (--backend=gpu), with the reason.
func build() (executor.Build, []server.Op) {
	devs, err := openAll()
	b := executor.Build{Kind: "cuda", Devices: func() []string {
		if err != nil {
			slog.Error("beamgpu-executor: no usable GPU", "error", err)
			return nil
		}
		names := make([]string, len(devs))
		for i, d := range devs {
			names[i] = d.Info().String()
		}
		return names
	}, NoDevice: func() string {
		if err != nil {
			return err.Error()
		}
		return ""
	}}
	if err != nil {
		return b, nil
	}
	// The shared-memory arenas, page-locked once each (portable: for every
	// GPU's context), are where batches are copied to and from the devices:
	// one DMA each way. The first GPU still usable registers them.
	b.OnArena = func(data []byte) (func(), error) {
		var last error
		for _, d := range devs {
			release, err := d.RegisterHost(data)
			if err == nil {
				return release, nil
			}
			last = err
		}
		return nil, last
	}
	var ops []server.Op
	for _, s := range step.All() {
		if s.Backend().GPUOp == "" {
			continue
		}
		if op := s.LaunchOp(engines(devs)); op != nil {
			ops = append(ops, op)
		} else {
			b.Missing = append(b.Missing, fmt.Sprintf("%s (step %s): no CUDA launch registered", s.Backend().GPUOp, s.Name()))
		}
	}
	return b, ops
}
