package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// A stub run says so: in its summary, in metrics.json, and by writing
// under out/stub/fashion when no --output is given.
func TestStubRunSaysSo(t *testing.T) {
	src := slice(t, t.TempDir(), "t10k", 50)
	for _, c := range []struct {
		kind backend.Kind
		stub bool
	}{{backend.Stub, true}, {backend.CPU, false}} {
		out := t.TempDir()
		var buf bytes.Buffer
		_, err := execute(context.Background(), Config{Sources: []tensor.Source{src}, Output: out, Model: ModelMLP, MLP: testModel},
			selector(t, c.kind), &buf)
		require.NoError(t, err)
		var m metrics
		data, err := os.ReadFile(filepath.Join(out, metricsFile))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &m))
		assert.Equal(t, c.stub, m.Stub, c.kind)
		if c.stub {
			assert.Contains(t, buf.String(), "STUB RUN: decode, standardize, mlp ran stand-ins")
			assert.Equal(t, []string{"decode", "standardize", "mlp"}, m.StubSteps)
		} else {
			assert.NotContains(t, buf.String(), "STUB RUN")
		}
	}

	defer func() { flags.Backend.Backend, *output = string(backend.Auto), defaultOutput }()
	flags.Backend.Backend = string(backend.Stub)
	assert.Equal(t, stubOutput, outputDir())
	*output = t.TempDir()
	assert.Equal(t, *output, outputDir(), "--output given")
	flags.Backend.Backend, *output = string(backend.CPU), defaultOutput
	assert.Equal(t, defaultOutput, outputDir())
}

// confusion.png names its axes and its classes: the title, "true class"
// (written upwards) and "predicted class", each class name at its row, and
// upwards at its column, are drawn where they belong.
func TestConfusionPictureIsLabelled(t *testing.T) {
	conf := make([][]int, 10)
	for i := range conf {
		conf[i] = make([]int, 10)
		conf[i][i] = 900
		conf[i][(i+3)%10] = 100
	}
	img := confusionImage(conf)
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	require.NoError(t, os.WriteFile(filepath.Join(t.TempDir(), "confusion.png"), buf.Bytes(), 0o644))

	// ink returns the dark pixels of s written with the picture's font at x, y.
	ink := func(x, y int, s string) []image.Point {
		ref := image.NewGray(image.Rect(0, 0, x+len(s)*7+1, y+20))
		d := &font.Drawer{Dst: ref, Src: image.NewUniform(color.White), Face: basicfont.Face7x13, Dot: fixed.P(x, y+4)}
		d.DrawString(s)
		var pts []image.Point
		for py := 0; py < ref.Rect.Dy(); py++ {
			for px := 0; px < ref.Rect.Dx(); px++ {
				if ref.GrayAt(px, py).Y > 128 {
					pts = append(pts, image.Pt(px, py))
				}
			}
		}
		return pts
	}
	dark := func(p image.Point) bool { r, g, b, _ := img.At(p.X, p.Y).RGBA(); return r+g+b < 3*0x4000 }
	const cell, left, top = 44, 18 + 90 + 6, 22 + 18 + 84 + 6
	for r, name := range ClassNames {
		pts := ink(18+90-len(name)*7, top+r*cell+cell/2, name)
		require.NotEmpty(t, pts)
		for _, p := range pts {
			require.True(t, dark(p), "row %d: %q at %v", r, name, p)
		}
		// The column's name, upwards: pixel (tx, ty) of the text is at
		// (x+ty-6, y-tx) with x the column's centre and y just above the matrix.
		for _, p := range ink(0, 6, name) {
			q := image.Pt(left+r*cell+cell/2+p.Y-6, top-6-p.X)
			require.True(t, dark(q), "column %d: %q", r, name)
		}
	}
	for _, p := range ink(left+10*cell/2-len("predicted class")*7/2, 22+9, "predicted class") {
		require.True(t, dark(p), "predicted class")
	}
	for _, p := range ink(0, 6, "true class") {
		q := image.Pt(9+p.Y-6, top+10*cell/2+len("true class")*7/2-p.X)
		require.True(t, dark(q), "true class")
	}
}
