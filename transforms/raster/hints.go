package raster

import (
	"path/filepath"
	"runtime"

	"github.com/beamgpu/beamgpu/runtime/backend"
)

// gpuHints are the resource hints of the raster GPU steps: one T4 is ample
// for per-pixel arithmetic, and 16 GB of RAM holds a full scene's bands. The
// 5xx driver is what the CUDA 12 worker image needs (a T4's default driver
// on Dataflow is a 4xx one; see runtime/dataflow's gpu-driver rule).
var gpuHints = backend.Hints{
	Accelerator: "type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx",
	MinRAMBytes: 16e9,
}

// SampleSceneDir returns the directory of the Landsat 8 crop committed with
// the landsat pipeline (LC08_L1TP_195025_20130707_20170503_01_T1), found from
// this source file's location: it is for tests and the steps' Sample inputs.
func SampleSceneDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "pipelines", "landsat", "testdata", SampleSceneID)
}

// SampleSceneID is the product ID of the committed Landsat 8 crop.
const SampleSceneID = "LC08_L1TP_195025_20130707_20170503_01_T1"

// DefaultBands are the bands the landsat pipeline reads: blue, green, red, NIR.
var DefaultBands = []int{2, 3, 4, 5}
