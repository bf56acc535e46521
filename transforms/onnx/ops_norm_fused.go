package onnx

import (
	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// A fused Add + LayerNormalization (ONNX Runtime's SkipLayerNormalization,
// https://onnxruntime.ai/docs/performance/model-optimizations/graph-optimizations.html):
// a float32 Add whose output only a LayerNormalization along the last axis
// reads, planned as one step (plan_fuse.go): each row's sum, then its
// normalisation while the row is in cache, one pass over the values
// instead of two. The Add may broadcast along every axis but the last
// (a transformer's embeddings: tokens plus positions). Each operation is
// the operator's own, so the outputs are the unfused plan's bit for bit.
// The Adds that follow a MatMul fuse with it instead (ops_matmul_fused.go).

// fusedAddNorm is the kernel of a fused Add + LayerNormalization: inputs
// A, B, Scale and B of the normalisation (left out without one), one
// output.
type fusedAddNorm struct {
	add   *ewBinary
	ln    *layerNorm
	bases byShapes[[2][]int] // the rows' offsets in A and B, kept
}

func (k *fusedAddNorm) Infer(in []Meta) ([]Meta, error) {
	out, err := BroadcastShapes(in[0].Shape, in[1].Shape)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: nd.Float32, Shape: out}}, nil
}

func (k *fusedAddNorm) Run(in, out []nd.Array) error {
	shape := out[0].Shape
	y := nd.MustAs[float32](out[0])
	if len(y) == 0 {
		return nil
	}
	n := shape[len(shape)-1]
	lead := shape[:len(shape)-1]
	a, b := nd.MustAs[float32](in[0]), nd.MustAs[float32](in[1])
	bases, _ := k.bases.get(func() ([2][]int, error) {
		return [2][]int{
			batchBases(lead, BroadcastStrides(in[0].Shape, shape)[:len(lead)]),
			batchBases(lead, BroadcastStrides(in[1].Shape, shape)[:len(lead)]),
		}, nil
	}, in[0].Shape, in[1].Shape, shape)
	r := addNormRun{y: y, a: a, b: b, aBase: bases[0], bBase: bases[1], scale: nd.MustAs[float32](in[2]), n: n, epsilon: k.ln.epsilon}
	if len(in) > 3 && in[3].Type != nd.Undefined {
		r.bias = nd.MustAs[float32](in[3])
	}
	parallel.ForWith(len(r.aBase), 4*n, r, (*addNormRun).rows)
	return nil
}

// addNormRun is a run of a fused Add + LayerNormalization: rows of n,
// each A's and B's at their bases.
type addNormRun struct {
	y, a, b, scale, bias []float32
	aBase, bBase         []int
	n                    int
	epsilon              float64
}

// rows computes rows lo..hi.
func (r *addNormRun) rows(lo, hi int) {
	n := r.n
	for i := lo; i < hi; i++ {
		arith(ewAdd, r.a[r.aBase[i]:r.aBase[i]+n], 1, r.b[r.bBase[i]:r.bBase[i]+n], 1, r.y[i*n:(i+1)*n], false)
	}
	layerNormRowsF32(r.y[lo*n:hi*n], r.y[lo*n:hi*n], r.scale, r.bias, n, r.epsilon)
}

// Launch runs the Add's kernel, then LayerNormalization's in place.
func (k *fusedAddNorm) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in...) {
		return ErrOnHost
	}
	if err := k.add.Launch(d, in[:2], out); err != nil {
		return err
	}
	return k.ln.Launch(d, []DevArray{out[0], in[2], arrayOf(in, 3)}, out)
}
