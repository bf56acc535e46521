package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Tile (opsets 1, 6, 13): the input repeated repeats[i] times along each
// axis i. repeats is an int64 input known before the model runs (a
// constant, or computed from shapes), one non-negative count per axis. The
// copy is one strided copy (strided.go) of the input viewed with an axis of
// stride 0 before each of its own, [r0, d0, r1, d1, ...], so every element
// type moves and the device runs the same copy (on the host when the view
// has more than six dimensions after merging).

func init() {
	RegisterOp(OpDef{Name: "Tile", Versions: []int{6, 13}, New: newTile})
}

type tileKernel struct{}

func newTile(n *Node) (Kernel, error) {
	return tileKernel{}, n.CheckArity(2, 2, 1, 1)
}

// plan gives the output's shape and the copy, for input shape x and the
// repeats' metas.
func (tileKernel) plan(in []Meta) ([]int, strided, error) {
	x := in[0].Shape
	reps, err := KnownInts(in, 1, "input repeats")
	if err != nil {
		return nil, strided{}, err
	}
	if len(in[1].Shape) != 1 || len(reps) != len(x) {
		return nil, strided{}, fmt.Errorf("input repeats has shape %s: Tile of a rank-%d input takes %d repeats", nd.ShapeString(in[1].Shape), len(x), len(x))
	}
	out := make([]int, len(x))
	view := make([]int, 0, 2*len(x))
	src := make([]int, 0, 2*len(x))
	st := Strides(x)
	for i, r := range reps {
		if r < 0 || r > 1<<40 {
			return nil, strided{}, fmt.Errorf("input repeats has %d on axis %d: Tile takes a non-negative count", r, i)
		}
		out[i] = int(r) * x[i]
		view = append(view, int(r), x[i])
		src = append(src, 0, st[i])
	}
	if _, err := nd.Numel(out); err != nil {
		return nil, strided{}, fmt.Errorf("the output of shape %s: %w", nd.ShapeString(out), err)
	}
	return out, strided{shape: view, srcSt: src, dstSt: Strides(view)}, nil
}

func (k tileKernel) Infer(in []Meta) ([]Meta, error) {
	out, _, err := k.plan(in)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}

func (k tileKernel) Run(in, out []nd.Array) error {
	_, c, err := k.plan(ValueMetas(in))
	if err != nil {
		return err
	}
	copyStrided(out[0].Data, in[0].Data, in[0].Type.Size(), c)
	return nil
}
