package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// A fused Transpose back from channels last + a per-channel scale + a
// residual Add: ConvNeXt's block end (its MLP's output, N x H x W x C,
// transposed to N x C x H x W, times the layer scale, a C x 1 x 1
// constant, plus the block's input), planned as one step (plan_fuse.go):
// each image's 16 channels at a time are transposed into a buffer that
// stays in cache (16 x 16 register blocks), scaled and added to the
// residual there, one pass over the values instead of three (the
// transpose's, the Mul's and the Add's). Each operation is the operator's
// own, in its operands' order, so the outputs are the unfused plan's bit
// for bit.

// fusedScaleAdd is the kernel of a fused Transpose (perm 0, 3, 1, 2) +
// Mul + Add: inputs U (N x H x W x C), the scale S (C values) and the
// residual X (N x C x H x W), one output.
type fusedScaleAdd struct {
	mul, add *ewBinary
	// mulT is the Mul's input that the Transpose's output is (0 or 1),
	// addM the Add's that the Mul's output is.
	mulT, addM int
}

func (k *fusedScaleAdd) Infer(in []Meta) ([]Meta, error) {
	u, x := in[0].Shape, in[2].Shape
	if len(u) != 4 || len(x) != 4 || u[0] != x[0] || u[1] != x[2] || u[2] != x[3] || u[3] != x[1] || numel(in[1].Shape) != x[1] {
		return nil, fmt.Errorf("a channels-last %v, a scale %v and a residual %v that do not match", u, in[1].Shape, x)
	}
	return []Meta{{Type: nd.Float32, Shape: x}}, nil
}

// Overwrites reports that the output may be written over the residual X:
// each value of X is read just before the output's at its place is
// written (the residual stream of a network in one buffer).
func (k *fusedScaleAdd) Overwrites(out int, in []Meta) (int, bool) { return 2, out == 0 }

func (k *fusedScaleAdd) Run(in, out []nd.Array) error {
	x := in[2].Shape
	r := scaleAddRun{k: k, u: nd.MustAs[float32](in[0]), s: nd.MustAs[float32](in[1]), x: nd.MustAs[float32](in[2]),
		y: nd.MustAs[float32](out[0]), c: x[1], p: x[2] * x[3]}
	r.cb = (r.c + nchwcBlock - 1) / nchwcBlock
	parallel.EachWith(x[0]*r.cb, 3*nchwcBlock*r.p, r, (*scaleAddRun).block)
	return nil
}

// scaleAddRun is a run of a fused scale and add: c channels of p positions
// an image, cb blocks of 16 channels.
type scaleAddRun struct {
	k          *fusedScaleAdd
	u, s, x, y []float32
	c, p, cb   int
}

// block computes channels (t%cb)*16 on of image t/cb.
func (r *scaleAddRun) block(t int) {
	const B = nchwcBlock
	img, c0 := t/r.cb, (t%r.cb)*B
	chans, p := min(B, r.c-c0), r.p
	buf := getFloats(chans * p)
	defer putFloats(buf)
	tb := (*buf)[:chans*p] // the block's channels, a row of p each
	u := r.u[img*p*r.c:][:p*r.c]
	q := 0
	if chans == B {
		for ; q+B <= p && transpose16(tb[q:], p, u[q*r.c+c0:], r.c); q += B {
		}
	}
	for ; q < p; q++ {
		for l := range chans {
			tb[l*p+q] = u[q*r.c+c0+l]
		}
	}
	for l := range chans {
		row, c := tb[l*p:(l+1)*p], c0+l
		if r.k.mulT == 0 {
			arith(ewMul, row, 1, r.s[c:c+1], 0, row, false)
		} else {
			arith(ewMul, r.s[c:c+1], 0, row, 1, row, false)
		}
		x, y := r.x[(img*r.c+c)*p:][:p], r.y[(img*r.c+c)*p:][:p]
		if r.k.addM == 0 {
			arith(ewAdd, row, 1, x, 1, y, false)
		} else {
			arith(ewAdd, x, 1, row, 1, y, false)
		}
	}
}
