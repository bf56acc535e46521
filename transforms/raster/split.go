package raster

import "fmt"

// Halving batches that do not fit the GPU executor's memory (step.GPU's
// Split and Merge): a tile is cut into its top and bottom rows, whose planes
// are contiguous in a row-major plane, and the two outputs stacked back.

// splitWindow cuts a window into its top h/2 rows and the rest.
func splitWindow(r Rect) (top, bottom Rect, ok bool) {
	if r.H < 2 {
		return r, r, false
	}
	h := r.H / 2
	return Rect{X: r.X, Y: r.Y, W: r.W, H: h}, Rect{X: r.X, Y: r.Y + h, W: r.W, H: r.H - h}, true
}

func splitPlanes[T any](planes [][]T, n int) (top, bottom [][]T) {
	for _, p := range planes {
		top, bottom = append(top, p[:n:n]), append(bottom, p[n:])
	}
	return top, bottom
}

func splitDNTile(t DNTile) (DNTile, DNTile, bool) {
	r1, r2, ok := splitWindow(t.Rect)
	if !ok || checkPlanes(t.ID(), t.Rect, t.DN) != nil {
		return t, t, false
	}
	a, b := t, t
	a.Rect, b.Rect = r1, r2
	a.DN, b.DN = splitPlanes(t.DN, r1.Area())
	return a, b, true
}

func splitTile(t Tile) (Tile, Tile, bool) {
	r1, r2, ok := splitWindow(t.Rect)
	if !ok || checkPlanes(t.ID(), t.Rect, t.Data) != nil {
		return t, t, false
	}
	a, b := t, t
	a.Rect, b.Rect = r1, r2
	a.Data, b.Data = splitPlanes(t.Data, r1.Area())
	return a, b, true
}

// mergeTiles stacks b's rows under a's.
func mergeTiles(a, b Tile) (Tile, error) {
	if a.X != b.X || a.W != b.W || a.Y+a.H != b.Y || len(a.Data) != len(b.Data) {
		return Tile{}, fmt.Errorf("merging tiles %s and %s: not one above the other", a.ID(), b.ID())
	}
	out := a
	out.H += b.H
	out.Data = make([][]float32, len(a.Data))
	for i := range a.Data {
		out.Data[i] = append(append(make([]float32, 0, len(a.Data[i])+len(b.Data[i])), a.Data[i]...), b.Data[i]...)
	}
	return out, nil
}

func mergeRGBA(a, b RGBATile) (RGBATile, error) {
	if a.X != b.X || a.W != b.W || a.Y+a.H != b.Y {
		return RGBATile{}, fmt.Errorf("merging tiles %s and %s: not one above the other", a.ID(), b.ID())
	}
	out := a
	out.H += b.H
	out.Pix = append(append(make([]uint8, 0, len(a.Pix)+len(b.Pix)), a.Pix...), b.Pix...)
	return out, nil
}
