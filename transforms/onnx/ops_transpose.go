package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Transpose (opsets 1, 13): the axes permuted by perm (default: reversed).
// A strided copy (strided.go): runs where the permutation keeps inner axes
// together, 2-D tiles where it moves the innermost one (NCHW to NHWC).

func init() {
	RegisterOp(OpDef{Name: "Transpose", Versions: []int{1, 13}, New: newTranspose})
}

type transpose struct {
	perm  []int        // nil: reversed
	plans stridedPlans // the run's copy, kept
}

func newTranspose(n *Node) (Kernel, error) {
	k := &transpose{}
	if p, ok := n.Attrs.Ints("perm"); ok {
		seen := make([]bool, len(p))
		k.perm = make([]int, len(p))
		for i, a := range p {
			if a < 0 || a >= int64(len(p)) || seen[a] {
				return nil, fmt.Errorf("attribute perm %v is not a permutation of 0 to %d", p, len(p)-1)
			}
			seen[a] = true
			k.perm[i] = int(a)
		}
	}
	return k, n.CheckArity(1, 1, 1, 1)
}

// permOf returns the permutation for rank r.
func (k *transpose) permOf(r int) ([]int, error) {
	if k.perm == nil {
		p := make([]int, r)
		for i := range p {
			p[i] = r - 1 - i
		}
		return p, nil
	}
	if len(k.perm) != r {
		return nil, fmt.Errorf("perm %v has %d axes, the input rank %d", k.perm, len(k.perm), r)
	}
	return k.perm, nil
}

func (k *transpose) Infer(in []Meta) ([]Meta, error) {
	p, err := k.permOf(len(in[0].Shape))
	if err != nil {
		return nil, err
	}
	out := make([]int, len(p))
	for i, a := range p {
		out[i] = in[0].Shape[a]
	}
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}

func (k *transpose) Run(in, out []nd.Array) error {
	c, ok, err := k.plans.get(in[:1], func() (strided, error) { return k.copyPlan(in[0].Shape, out[0].Shape) })
	if ok {
		runStrided(out[0].Data, in[0].Data, in[0].Type.Size(), c)
	}
	return err
}

// copyPlan is the strided copy from X (shape x) to the output (shape y)
// that transposes it; the CPU and the device run it.
func (k *transpose) copyPlan(x, y []int) (strided, error) {
	p, err := k.permOf(len(x))
	if err != nil {
		return strided{}, err
	}
	st := Strides(x)
	src := make([]int, len(p))
	for i, a := range p {
		src[i] = st[a]
	}
	return strided{shape: y, dstSt: Strides(y), srcSt: src}, nil
}
