package onnx_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// detectorDir holds a small FPN detector exported from PyTorch with its
// post-processing (torchvision's batched_nms: an If around
// NonMaxSuppression, boolean indexing as NonZero, TopK) and ONNX Runtime's
// outputs for four images (containers/onnx/export_detector.py).
const detectorDir = "testdata/detector"

// The detector's boxes, scores and labels equal ONNX Runtime's for each
// image on the CPU, the number of detections differing image to image (its
// outputs' shapes come from the data).
func TestDetector(t *testing.T) {
	m, err := onnxtest.LoadFile(filepath.Join(detectorDir, "model.onnx"))
	require.NoError(t, err)
	checkDetectorModel(t, func(in []nd.Array) ([]nd.Array, error) { return m.Run(in) })
}

// The same on the emulated device: its steps on the device, the nodes whose
// shapes come from the data on the host between the plans.
func TestDetectorOnDevice(t *testing.T) {
	dev := emulator(t)
	m, err := onnxtest.LoadFile(filepath.Join(detectorDir, "model.onnx"))
	require.NoError(t, err)
	checkDetectorModel(t, func(in []nd.Array) ([]nd.Array, error) {
		out, onHost, err := runOnDevice(dev, m, in)
		t.Logf("on the host: %v", onHost)
		return out, err
	})
}

func checkDetectorModel(t *testing.T, run func([]nd.Array) ([]nd.Array, error)) {
	sets, err := filepath.Glob(filepath.Join(detectorDir, "test_data_set_*"))
	require.NoError(t, err)
	require.Len(t, sets, 4)
	counts := map[int]bool{}
	for _, set := range sets {
		read := func(kind string) []nd.Array {
			files, err := filepath.Glob(filepath.Join(set, kind+"_*.pb"))
			require.NoError(t, err)
			sort.Strings(files)
			var out []nd.Array
			for _, f := range files {
				out = append(out, onnxtest.ReadTensor(t, f))
			}
			return out
		}
		in, want := read("input"), read("output")
		require.Len(t, want, 3)
		counts[want[0].Shape[0]] = true
		got, err := run(in)
		require.NoError(t, err, set)
		require.Len(t, got, 3, set)
		require.NoError(t, compareOutput(got[0], want[0], t.Logf), "%s: boxes", set)
		require.NoError(t, compareOutput(got[1], want[1], nil), "%s: scores", set)
		assert.Equal(t, want[2], got[2], "%s: labels", set)
	}
	require.Greater(t, len(counts), 2, fmt.Sprintf("the images' detections should differ in number: %v", counts))
}
