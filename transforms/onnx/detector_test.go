package onnx_test

import (
	"fmt"
	"path/filepath"
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
	inputs, outputs := onnxtest.DataSets(t, detectorDir)
	require.Len(t, inputs, 4)
	counts := map[int]bool{}
	for k, in := range inputs {
		want := outputs[k]
		require.Len(t, want, 3)
		counts[want[0].Shape[0]] = true
		got, err := run(in)
		require.NoError(t, err, "set %d", k)
		require.Len(t, got, 3, "set %d", k)
		require.NoError(t, compareOutput(got[0], want[0], t.Logf), "set %d: boxes", k)
		require.NoError(t, compareOutput(got[1], want[1], nil), "set %d: scores", k)
		assert.Equal(t, want[2], got[2], "set %d: labels", k)
	}
	require.Greater(t, len(counts), 2, fmt.Sprintf("the images' detections should differ in number: %v", counts))
}
