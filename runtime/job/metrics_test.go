package job

import (
	"bytes"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/stretchr/testify/assert"
)

// The summary says why auto ran the GPU steps on the CPU (the executor's
// reason: here a driver too old), and how many batches fell back at run time.
func TestSummarySaysWhyTheGPUWasNotUsed(t *testing.T) {
	const why = "GPU executor /opt/beamgpu/bin/beamgpu-executor reports no usable device: cuda: the NVIDIA driver 470.223.02 (CUDA 11.4) is too old"
	sel := backend.MustNew(backend.Config{Default: backend.Auto, Executor: backend.NoExecutor{Why: why}})
	sel.Resolve(backend.Step{Name: "read"})
	sel.Resolve(backend.Step{Name: "toa_ndvi", GPUOp: "raster.toa_ndvi"})
	assert.Equal(t, why, CPUInsteadOfGPU(sel.Report()))

	m := Metrics{Steps: []StepCounts{{Step: "read", Impl: backend.CPU}, {Step: "toa_ndvi", Impl: backend.GPU, Fallbacks: 3}},
		CPUInsteadOfGPU: CPUInsteadOfGPU(sel.Report())}
	var out bytes.Buffer
	m.PrintSteps(&out, "pixels")
	assert.Contains(t, out.String(), "GPU steps ran on the CPU (--backend=auto): "+why+"\n")
	assert.Contains(t, out.String(), "3 batch(es) of GPU steps ran on the CPU because the GPU executor could not run them")

	gpu := backend.MustNew(backend.Config{Default: backend.CPU})
	gpu.Resolve(backend.Step{Name: "toa_ndvi", GPUOp: "raster.toa_ndvi"})
	assert.Empty(t, CPUInsteadOfGPU(gpu.Report()), "asked for the CPU: nothing to explain")
}
