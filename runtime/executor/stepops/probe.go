package stepops

import (
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
)

// Executor points the GPU implementations at the executor binary path ("":
// $BEAMGPU_EXECUTOR, else client.DefaultPath) and returns what the backend
// selector asks: whether that executor can be started and serves a device,
// and if not, why. Pipelines call it with --gpu_executor.
func Executor(path string) backend.Executor {
	SetExecutor(path)
	return client.Probe(path)
}
