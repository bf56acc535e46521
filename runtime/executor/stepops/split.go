package stepops

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// Halving batches that do not fit the executor: by rows, for tiles (their
// planes are row-major) and for batches of rows alike.

func halfRows(rows int) (int, bool) { return rows / 2, rows >= 2 }

func splitBatch(b tensor.Batch) (tensor.Batch, tensor.Batch, bool) {
	h, ok := halfRows(b.Rows)
	if !ok {
		return b, b, false
	}
	return b.Slice(0, h), b.Slice(h, b.Rows), true
}

// splitOn splits an input by the rows of the batch that rows points at,
// keeping the rest of the input (a scaler, a layer, a model) in both halves.
func splitOn[In any](rows func(*In) *tensor.Batch) func(In) (In, In, bool) {
	return func(in In) (In, In, bool) {
		a, b, ok := splitBatch(*rows(&in))
		x, y := in, in
		*rows(&x), *rows(&y) = a, b
		return x, y, ok
	}
}

func mergeBatches(a, b tensor.Batch) (tensor.Batch, error) {
	return tensor.Concat([]tensor.Batch{a, b})
}

func mergePredictions(a, b tensor.Predictions) (tensor.Predictions, error) {
	if a.Classes != b.Classes || a.Source != b.Source || a.Offset+len(a.Predicted) != b.Offset {
		return tensor.Predictions{}, fmt.Errorf("merging predictions %s and %s: not consecutive", a.ID(), b.ID())
	}
	out := a
	out.Predicted = append(append([]int32(nil), a.Predicted...), b.Predicted...)
	if a.Labels != nil || b.Labels != nil {
		out.Labels = append(append([]int32(nil), a.Labels...), b.Labels...)
	}
	if a.Scores != nil || b.Scores != nil {
		out.Scores = append(append([]float32(nil), a.Scores...), b.Scores...)
	}
	return out, nil
}

// splitWindow cuts a window of w columns into its top h rows and the rest.
func splitWindow(r raster.Rect) (top, bottom raster.Rect, ok bool) {
	h, ok := halfRows(r.H)
	if !ok {
		return r, r, false
	}
	return raster.Rect{X: r.X, Y: r.Y, W: r.W, H: h}, raster.Rect{X: r.X, Y: r.Y + h, W: r.W, H: r.H - h}, true
}

func splitPlanes[T any](planes [][]T, w, h int) (top, bottom [][]T) {
	for _, p := range planes {
		top, bottom = append(top, p[:w*h]), append(bottom, p[w*h:])
	}
	return top, bottom
}

func splitDNTile(t raster.DNTile) (raster.DNTile, raster.DNTile, bool) {
	r1, r2, ok := splitWindow(t.Rect)
	if !ok {
		return t, t, false
	}
	a, b := t, t
	a.Rect, b.Rect = r1, r2
	a.DN, b.DN = splitPlanes(t.DN, r1.W, r1.H)
	return a, b, true
}

func splitTile(t raster.Tile) (raster.Tile, raster.Tile, bool) {
	r1, r2, ok := splitWindow(t.Rect)
	if !ok {
		return t, t, false
	}
	a, b := t, t
	a.Rect, b.Rect = r1, r2
	a.Data, b.Data = splitPlanes(t.Data, r1.W, r1.H)
	return a, b, true
}

// mergeTiles stacks b's rows under a's.
func mergeTiles(a, b raster.Tile) (raster.Tile, error) {
	if a.X != b.X || a.W != b.W || a.Y+a.H != b.Y || len(a.Data) != len(b.Data) {
		return raster.Tile{}, fmt.Errorf("merging tiles %s and %s: not one above the other", a.ID(), b.ID())
	}
	out := a
	out.H += b.H
	out.Data = make([][]float32, len(a.Data))
	for i := range a.Data {
		out.Data[i] = append(append([]float32(nil), a.Data[i]...), b.Data[i]...)
	}
	return out, nil
}

func mergeRGBA(a, b raster.RGBATile) (raster.RGBATile, error) {
	if a.X != b.X || a.W != b.W || a.Y+a.H != b.Y {
		return raster.RGBATile{}, fmt.Errorf("merging tiles %s and %s: not one above the other", a.ID(), b.ID())
	}
	out := a
	out.H += b.H
	out.Pix = append(append([]uint8(nil), a.Pix...), b.Pix...)
	return out, nil
}
