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

// The per-device metrics ("STEP.deviceN.METRIC") parse, and the summary
// prints a line per device with its share of the batches.
func TestSummaryShowsPerDeviceCounts(t *testing.T) {
	for metric, want := range map[string]struct {
		dev  int
		what string
		ok   bool
	}{
		"device0.batches":  {0, "batches", true},
		"device12.busy_ns": {12, "busy_ns", true},
		"device.batches":   {},
		"devicex.bytes":    {},
		"device3":          {},
		"batches":          {},
	} {
		dev, what, ok := deviceMetric(metric)
		assert.Equal(t, want.ok, ok, metric)
		if ok {
			assert.Equal(t, want.dev, dev, metric)
			assert.Equal(t, want.what, what, metric)
		}
	}
	m := Metrics{Devices: []DeviceCounts{{Device: 0, Batches: 3, Bytes: 2e6, BusyNS: 5e8}, {Device: 1, Batches: 1, Bytes: 1e6, BusyNS: 25e7}}}
	var out bytes.Buffer
	m.PrintSteps(&out, "items")
	assert.Contains(t, out.String(), "GPU device  batches    MB  busy s  share")
	assert.Contains(t, out.String(), "0        3  2.00   0.500    75%")
	assert.Contains(t, out.String(), "1        1  1.00   0.250    25%")
	out.Reset()
	Metrics{}.PrintSteps(&out, "items")
	assert.NotContains(t, out.String(), "GPU device", "no device table when no batch ran on an executor")
}
