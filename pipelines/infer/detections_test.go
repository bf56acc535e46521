package main

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// detectorModel is a small FPN detector exported from PyTorch with its
// post-processing (containers/onnx/export_detector.py): image [1, 3, 96,
// 96] -> boxes [K, 4], scores [K], labels [K], K its detections.
const detectorModel = "../../transforms/onnx/testdata/detector/model.onnx"

// landsatCrops writes RGB PNGs of the committed Landsat 8 crop (bands 4, 3,
// 2, stretched to 8 bits): size x size windows at the offsets given.
func landsatCrops(t *testing.T, dir string, size int, offsets [][2]int) []string {
	t.Helper()
	var bands [3][]uint16
	var w int
	for i, b := range []int{4, 3, 2} {
		f, err := os.Open(filepath.Join(raster.SampleSceneDir(), raster.SampleSceneID+"_B"+string(rune('0'+b))+".TIF"))
		require.NoError(t, err)
		var h int
		w, h, bands[i], err = raster.DecodeBand(f, "band")
		f.Close()
		require.NoError(t, err)
		require.GreaterOrEqual(t, h, size)
	}
	lo, hi := uint16(math.MaxUint16), uint16(0)
	for _, b := range bands {
		for _, v := range b {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	var paths []string
	for k, o := range offsets {
		img := image.NewRGBA(image.Rect(0, 0, size, size))
		for y := 0; y < size; y++ {
			for x := 0; x < size; x++ {
				var c [3]uint8
				for i := range c {
					v := bands[i][(o[1]+y)*w+o[0]+x]
					c[i] = uint8(255 * float64(v-lo) / float64(hi-lo))
				}
				img.Set(x, y, color.RGBA{c[0], c[1], c[2], 255})
			}
		}
		p := filepath.Join(dir, "tile"+string(rune('a'+k))+".png")
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, png.Encode(f, img))
		require.NoError(t, f.Close())
		paths = append(paths, p)
	}
	return paths
}

// A detector on Landsat tiles (resized to its 96 x 96): each image's boxes,
// scores and labels are in predictions.jsonl under its path, as many as it
// has detections, equal to the model run on the image alone.
func TestDetectorOnImages(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	paths := landsatCrops(t, dir, 32, [][2]int{{0, 0}, {9, 9}, {4, 0}, {0, 8}})
	code, text, err := runInfer(t, "--model="+detectorModel, "--input="+filepath.Join(dir, "*.png"), "--output="+out,
		"--resize=96x96", "--mean=0.5,0.5,0.5", "--std=0.25,0.25,0.25", "--backend=cpu")
	require.NoError(t, err)
	require.Equal(t, 0, code, text)
	assert.Contains(t, text, "rows: 4 in, 4 predicted, 0 failed")
	m, err := onnxstep.Load(context.Background(), detectorModel)
	require.NoError(t, err)
	type line struct {
		outputsJSON
		Key string `json:"key"`
	}
	got := readLines[line](t, filepath.Join(out, rowsFile))
	require.Len(t, got, len(paths))
	counts := map[int]bool{}
	for i, p := range paths {
		require.Equal(t, p, got[i].Key)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		x, err := Preprocess{Height: 96, Width: 96, Layout: LayoutNCHW, Channels: 3, Mean: []float32{0.5, 0.5, 0.5}, Std: []float32{0.25, 0.25, 0.25}}.Image(data)
		require.NoError(t, err)
		x.Shape = append([]int{1}, x.Shape...)
		want, err := m.Run([]nd.Array{x})
		require.NoError(t, err)
		counts[want[0].Shape[0]] = true
		for k, name := range []string{"boxes", "scores", "labels"} {
			g := got[i].Outputs[name]
			require.Equal(t, want[k].Shape, g.Shape, "%s: %s", p, name)
			assert.InDeltaSlice(t, nd.Float64s(want[k]), derefs(g.Values), 1e-4, "%s: %s", p, name)
		}
	}
	t.Logf("detections per image: %v", counts)
	assert.Greater(t, len(counts), 1, "the tiles' detections should differ in number")
}
