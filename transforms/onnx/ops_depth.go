package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// DepthToSpace (opsets 1, 11, 13; modes DCR and CRD) and SpaceToDepth (1,
// 13): rearrangements of an N x C x H x W array's channels into blocks of
// its spatial positions and back. Each is one strided copy of a 6-D view
// (strided.go), the reshape-transpose-reshape of ONNX's description, so
// every element type moves, and the device runs the same copy;
// SpaceToDepth of float32s by 2 cuts rows into even and odd columns on a
// vector kernel instead.

func init() {
	RegisterOp(OpDef{Name: "DepthToSpace", Versions: []int{1, 11, 13}, New: newDepth(true)})
	RegisterOp(OpDef{Name: "SpaceToDepth", Versions: []int{1, 13}, New: newDepth(false)})
}

type depthSpace struct {
	toSpace bool
	crd     bool // DepthToSpace's mode CRD (else DCR)
	block   int
}

func newDepth(toSpace bool) func(n *Node) (Kernel, error) {
	return func(n *Node) (Kernel, error) {
		if err := n.CheckArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		a := n.Attrs
		k := &depthSpace{toSpace: toSpace}
		if !a.Has("blocksize") {
			a.Fail("attribute blocksize is required")
		}
		b := a.Int("blocksize", 1)
		if b < 1 || b > 1<<20 {
			a.Fail("attribute blocksize is %d, want at least 1", b)
		}
		k.block = int(b)
		if toSpace && n.Since >= 11 {
			mode := a.String("mode", "DCR")
			a.OneOf("mode", mode, "DCR", "CRD")
			k.crd = mode == "CRD"
		}
		return k, a.Err()
	}
}

func (k *depthSpace) name() string {
	if k.toSpace {
		return "DepthToSpace"
	}
	return "SpaceToDepth"
}

// plan gives the output's shape and the copy from X (shape x).
func (k *depthSpace) plan(x []int) ([]int, strided, error) {
	if len(x) != 4 {
		return nil, strided{}, fmt.Errorf("input X has shape %s: %s takes N x C x H x W", nd.ShapeString(x), k.name())
	}
	n, c, h, w, b := x[0], x[1], x[2], x[3], k.block
	var view, perm, out []int
	switch {
	case k.toSpace && c%(b*b) != 0:
		return nil, strided{}, fmt.Errorf("input X has %d channels, not a multiple of blocksize² = %d", c, b*b)
	case k.toSpace && k.crd: // [N, C', b, b, H, W] -> [N, C', H, b, W, b]
		view, perm = []int{n, c / (b * b), b, b, h, w}, []int{0, 1, 4, 2, 5, 3}
		out = []int{n, c / (b * b), h * b, w * b}
	case k.toSpace: // DCR: [N, b, b, C', H, W] -> [N, C', H, b, W, b]
		view, perm = []int{n, b, b, c / (b * b), h, w}, []int{0, 3, 4, 1, 5, 2}
		out = []int{n, c / (b * b), h * b, w * b}
	case h%b != 0 || w%b != 0:
		return nil, strided{}, fmt.Errorf("input X has shape %s: H and W must be multiples of blocksize %d", nd.ShapeString(x), b)
	default: // [N, C, H', b, W', b] -> [N, b, b, C, H', W']
		view, perm = []int{n, c, h / b, b, w / b, b}, []int{0, 3, 5, 1, 2, 4}
		out = []int{n, c * b * b, h / b, w / b}
	}
	if _, err := nd.Numel(out); err != nil {
		return nil, strided{}, err
	}
	st := Strides(view)
	cp := strided{shape: make([]int, 6), srcSt: make([]int, 6)}
	for i, p := range perm {
		cp.shape[i], cp.srcSt[i] = view[p], st[p]
	}
	cp.dstSt = Strides(cp.shape)
	return out, cp, nil
}

func (k *depthSpace) Infer(in []Meta) ([]Meta, error) {
	out, _, err := k.plan(in[0].Shape)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}

func (k *depthSpace) Run(in, out []nd.Array) error {
	_, c, err := k.plan(in[0].Shape)
	if err != nil {
		return err
	}
	if !k.toSpace && k.block == 2 && in[0].Type == nd.Float32 {
		spaceToDepth2(nd.MustAs[float32](out[0]), nd.MustAs[float32](in[0]), in[0].Shape)
		return nil
	}
	copyStrided(out[0].Data, in[0].Data, in[0].Type.Size(), c)
	return nil
}

// spaceToDepth2 is SpaceToDepth of float32s with blocksize 2 (a YOLO
// stem's, a U-Net's): each input row of a plane is cut into its even and
// odd columns (deint2's kernel), which go to the output planes of its
// block offsets; planes on all cores. The same copy as the strided one.
func spaceToDepth2(y, x []float32, shape []int) {
	n, c, h, w := shape[0], shape[1], shape[2], shape[3]
	hh, wh := h/2, w/2
	plane := hh * wh // an output plane
	parallel.For(n*c, h*w, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			b, ch := p/c, p%c
			for r := range 2 { // the row offset in the block
				even := y[((b*4+2*r)*c+ch)*plane:]
				odd := y[((b*4+2*r+1)*c+ch)*plane:]
				deint2(even, odd, x[(p*h+r)*w:], hh, wh, wh, 2*w)
			}
		}
	})
}
