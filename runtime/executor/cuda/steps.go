//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// Steps returns the device implementation of every step with a GPU op, by
// step name, each with the type of the step's CPU function, for
// stepops.Ops. Their errors wrap server.ErrOutOfMemory (the batch does not
// fit: the client splits it) and server.ErrFatal (the device is lost: the
// executor exits and the client starts another).
func (d *Device) Steps() map[string]any {
	refs := &refCache{d: d, m: map[*tensor.Reference]*RefHandle{}}
	return map[string]any{
		raster.StepTOA:     func(t raster.DNTile) (raster.Tile, error) { return serverErr(d.toaTile(t)) },
		raster.StepNDVI:    func(t raster.Tile) (raster.Tile, error) { return serverErr(d.ndviTile(t)) },
		raster.StepTOANDVI: func(t raster.DNTile) (raster.Tile, error) { return serverErr(d.toaNDVITile(t)) },
		raster.StepComposite: func(in raster.CompositeInput) (raster.RGBATile, error) {
			return serverErr(d.compositeTile(in))
		},
		tensor.StepStandardize: func(in tensor.StandardizeInput) (tensor.Batch, error) {
			x, err := d.Standardize(in.Batch.X, in.Batch.Rows, in.Batch.Cols, in.Scaler)
			return serverErr(withX(in.Batch, in.Batch.Cols, x), err)
		},
		tensor.StepDense: func(in tensor.DenseInput) (tensor.Batch, error) {
			l := in.Layer
			if in.Batch.Cols != l.In {
				return tensor.DenseBatch(in) // the CPU function's error, naming the batch
			}
			x, err := d.Dense(in.Batch.X, in.Batch.Rows, l.W, l.B, l.In, l.Out, l.ReLU)
			return serverErr(withX(in.Batch, l.Out, x), err)
		},
		tensor.StepSoftmax: func(b tensor.Batch) (tensor.Batch, error) {
			x, err := d.Softmax(b.X, b.Rows, b.Cols)
			return serverErr(withX(b, b.Cols, x), err)
		},
		tensor.StepArgmax: func(b tensor.Batch) (tensor.Predictions, error) {
			idx, err := d.Argmax(b.X, b.Rows, b.Cols)
			return serverErr(predictions(b, idx), err)
		},
		// Ranking a handful of classes is not worth a kernel: the executor
		// runs the CPU function (the selftest says so by passing as the CPU).
		tensor.StepTopK: tensor.TopKBatch,
		tensor.StepKNN: func(in tensor.KNNInput) (tensor.Predictions, error) {
			if in.K < 1 || in.K > KNNMaxK || in.K > in.Ref.Rows {
				return tensor.KNNBatch(in) // k beyond the kernel's lists: the CPU
			}
			h, err := refs.get(in.Ref)
			if err != nil {
				return serverErr(tensor.Predictions{}, err)
			}
			idx, dist, err := d.KNN(in.Query.X, in.Query.Rows, h, in.K)
			if err != nil {
				return serverErr(tensor.Predictions{}, err)
			}
			return tensor.Vote(in.Query, in.Ref, idx, dist, in.K, in.Weights), nil
		},
		tensor.StepMLP: func(in tensor.MLPInput) (tensor.Predictions, error) { return serverErr(d.mlp(in)) },
	}
}

// serverErr maps the device's errors onto the executor's.
func serverErr[T any](v T, err error) (T, error) {
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, ErrOutOfMemory):
		return v, fmt.Errorf("%w: %w", server.ErrOutOfMemory, err)
	case errors.Is(err, ErrFatal):
		return v, fmt.Errorf("%w: %w", server.ErrFatal, err)
	}
	return v, err
}

func withX(b tensor.Batch, cols int, x []float32) tensor.Batch {
	return tensor.Batch{Source: b.Source, Offset: b.Offset, Rows: b.Rows, Cols: cols, X: x, Labels: b.Labels}
}

func predictions(b tensor.Batch, idx []int32) tensor.Predictions {
	return tensor.Predictions{Source: b.Source, Offset: b.Offset, Labels: b.Labels, Predicted: idx, Scores: b.X, Classes: b.Cols}
}

func (d *Device) toaTile(t raster.DNTile) (raster.Tile, error) {
	if len(t.Cal) != len(t.DN) || !(t.SunElevation > 0 && t.SunElevation <= 90) {
		return raster.TOA(t) // the CPU function's error
	}
	sin := math.Sin(t.SunElevation * math.Pi / 180)
	out := raster.Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect}
	for i, dn := range t.DN {
		if len(dn) != t.Area() {
			return raster.TOA(t)
		}
		p, err := d.TOA(dn, t.Cal[i].Mult/sin, t.Cal[i].Add/sin)
		if err != nil {
			return raster.Tile{}, err
		}
		out.Names = append(out.Names, raster.BandName(t.Cal[i].Band))
		out.Data = append(out.Data, p)
	}
	return out, nil
}

// toaNDVITile runs the fused kernel: every band's reflectance and the NDVI
// of bands 4 and 5 in one pass.
func (d *Device) toaNDVITile(t raster.DNTile) (raster.Tile, error) {
	red, nir := -1, -1
	for i, c := range t.Cal {
		switch c.Band {
		case 4:
			red = i
		case 5:
			nir = i
		}
	}
	if red < 0 || nir < 0 || len(t.Cal) != len(t.DN) || !(t.SunElevation > 0 && t.SunElevation <= 90) {
		return raster.TOANDVI(t) // the CPU function's error
	}
	sin := math.Sin(t.SunElevation * math.Pi / 180)
	scale, offset := make([]float64, len(t.Cal)), make([]float64, len(t.Cal))
	out := raster.Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect}
	for i, c := range t.Cal {
		if len(t.DN[i]) != t.Area() {
			return raster.TOANDVI(t)
		}
		scale[i], offset[i] = c.Mult/sin, c.Add/sin
		out.Names = append(out.Names, raster.BandName(c.Band))
	}
	refl, ndvi, err := d.TOANDVI(t.DN, scale, offset, red, nir)
	if err != nil {
		return raster.Tile{}, err
	}
	out.Names = append(out.Names, raster.PlaneNDVI)
	out.Data = append(refl, ndvi)
	return out, nil
}

func (d *Device) ndviTile(t raster.Tile) (raster.Tile, error) {
	red, err := t.Plane(raster.BandName(4))
	if err != nil {
		return raster.Tile{}, err
	}
	nir, err := t.Plane(raster.BandName(5))
	if err != nil || len(red) != t.Area() || len(nir) != t.Area() {
		return raster.NDVITile(t)
	}
	p, err := d.NDVI(red, nir)
	return raster.Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect,
		Names: []string{raster.PlaneNDVI}, Data: [][]float32{p}}, err
}

func (d *Device) compositeTile(in raster.CompositeInput) (raster.RGBATile, error) {
	t, st := in.Tile, in.Stretch
	var ch [3][]float32
	for c, b := range []int{4, 3, 2} {
		p, err := t.Plane(raster.BandName(b))
		if err != nil || len(p) != t.Area() || len(st.Lo) != 3 || len(st.Hi) != 3 {
			return raster.CompositeTile(in) // the CPU function's error
		}
		ch[c] = p
	}
	pix, err := d.Composite(ch[0], ch[1], ch[2], [3]float32(st.Lo), [3]float32(st.Hi), st.Gamma)
	return raster.RGBATile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect, Pix: pix}, err
}

func (d *Device) mlp(in tensor.MLPInput) (tensor.Predictions, error) {
	if in.Model == nil {
		return tensor.MLPBatch(in)
	}
	if err := in.Batch.Validate(); err != nil {
		return tensor.Predictions{}, err
	}
	x, cols := in.Batch.X, in.Batch.Cols
	for _, l := range in.Model.Layers {
		if cols != l.In {
			return tensor.MLPBatch(in)
		}
		var err error
		if x, err = d.Dense(x, in.Batch.Rows, l.W, l.B, l.In, l.Out, l.ReLU); err != nil {
			return tensor.Predictions{}, err
		}
		cols = l.Out
	}
	probs, err := d.Softmax(x, in.Batch.Rows, cols)
	if err != nil {
		return tensor.Predictions{}, err
	}
	idx, err := d.Argmax(probs, in.Batch.Rows, cols)
	return predictions(withX(in.Batch, cols, probs), idx), err
}

// refCache keeps the reference sets uploaded to the device, one per
// Reference (the executor's side-data cache keeps the Reference alive).
type refCache struct {
	d  *Device
	mu sync.Mutex
	m  map[*tensor.Reference]*RefHandle
}

func (c *refCache) get(r *tensor.Reference) (*RefHandle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.m[r]; ok {
		return h, nil
	}
	if len(c.m) >= 2 { // the oldest sets go: device memory is the budget's
		for old, h := range c.m {
			_ = h.Free()
			delete(c.m, old)
		}
	}
	h, err := c.d.UploadReference(r.X, r.Rows, r.Cols)
	if err != nil {
		return nil, err
	}
	c.m[r] = h
	return h, nil
}
