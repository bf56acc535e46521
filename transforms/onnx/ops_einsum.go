package onnx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Einsum (opset 12): the forms exporters emit, one letter per axis, such as
// batched matrix products ("bhqd,bhkd->bhqk"), transposes ("ij->ji"),
// reductions ("bij->bi"), inner and outer products; with or without an
// explicit output ("ij,jk" is "ij,jk->ik": the letters met once, in
// alphabetical order). A letter appears at most once per operand. Other
// forms (an ellipsis, a diagonal such as "ii->i") are refused at load
// naming the equation. A batched matrix product of two float32 operands
// runs on package gemm (ops_einsum_gemm.go); otherwise each output element
// sums the products over the letters not in the output, in float64 for
// floats (int64 for integers), rounded once. On the device Einsum runs on
// the host.

func init() {
	RegisterOp(OpDef{Name: "Einsum", Versions: []int{12}, New: newEinsum})
}

type einsumKernel struct {
	eq     string
	ops    [][]int // each operand's letters, as indices into letters
	out    []int   // the output's letters
	nlet   int     // the letters
	reduce []int   // the letters summed over
	// product is the equation's letters by role when it is a batched
	// matrix product (ops_einsum_gemm.go), nil otherwise.
	product *einsumProduct
}

func newEinsum(n *Node) (Kernel, error) {
	if err := n.CheckArity(1, 1<<10, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	eq := strings.ReplaceAll(a.String("equation", ""), " ", "")
	if err := a.Err(); err != nil {
		return nil, err
	}
	k, err := parseEinsum(eq, len(n.Inputs))
	if err != nil {
		return nil, fmt.Errorf("attribute equation %q: %w", eq, err)
	}
	return k, nil
}

func parseEinsum(eq string, inputs int) (*einsumKernel, error) {
	if strings.Contains(eq, "...") {
		return nil, fmt.Errorf("an ellipsis is not supported (Einsum takes one letter per axis)")
	}
	lhs, rhs, explicit := strings.Cut(eq, "->")
	k := &einsumKernel{eq: eq}
	index := map[rune]int{}
	count := map[rune]int{}
	letter := func(r rune) (int, error) {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return 0, fmt.Errorf("%q is not a letter", r)
		}
		i, ok := index[r]
		if !ok {
			i = len(index)
			index[r] = i
		}
		return i, nil
	}
	terms := strings.Split(lhs, ",")
	if len(terms) != inputs {
		return nil, fmt.Errorf("%d operands for %d inputs", len(terms), inputs)
	}
	for _, term := range terms {
		var op []int
		for _, r := range term {
			i, err := letter(r)
			if err != nil {
				return nil, err
			}
			if slices.Contains(op, i) {
				return nil, fmt.Errorf("letter %q repeats in operand %q (a diagonal is not supported)", r, term)
			}
			op = append(op, i)
			count[r]++
		}
		k.ops = append(k.ops, op)
	}
	if !explicit {
		var once []rune
		for r, c := range count {
			if c == 1 {
				once = append(once, r)
			}
		}
		slices.Sort(once)
		rhs = string(once)
	}
	for _, r := range rhs {
		i, ok := index[r]
		if !ok {
			return nil, fmt.Errorf("output letter %q is in no operand", r)
		}
		if slices.Contains(k.out, i) {
			return nil, fmt.Errorf("output letter %q repeats", r)
		}
		k.out = append(k.out, i)
	}
	k.nlet = len(index)
	for i := range k.nlet {
		if !slices.Contains(k.out, i) {
			k.reduce = append(k.reduce, i)
		}
	}
	if f, ok := k.productForm(); ok {
		k.product = &f
	}
	return k, nil
}

// sizes gives each letter's length from the inputs' shapes.
func (k *einsumKernel) sizes(in []Meta) ([]int, error) {
	size := make([]int, k.nlet)
	for i := range size {
		size[i] = -1
	}
	for j, op := range k.ops {
		s := in[j].Shape
		if len(s) != len(op) {
			return nil, fmt.Errorf("input %d has shape %s: equation %q gives it %d axes", j, nd.ShapeString(s), k.eq, len(op))
		}
		if in[j].Type != in[0].Type || !isNumeric(in[j].Type) {
			return nil, fmt.Errorf("input %d is %v: Einsum takes numbers of one type", j, in[j].Type)
		}
		for a, l := range op {
			switch {
			case size[l] < 0 || size[l] == 1:
				size[l] = s[a]
			case s[a] != size[l] && s[a] != 1:
				return nil, fmt.Errorf("input %d has shape %s: its axis %d is %d long, another operand's is %d (equation %q)", j, nd.ShapeString(s), a, s[a], size[l], k.eq)
			}
		}
	}
	return size, nil
}

func (k *einsumKernel) Infer(in []Meta) ([]Meta, error) {
	size, err := k.sizes(in)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(k.out))
	for i, l := range k.out {
		out[i] = size[l]
	}
	return []Meta{{Type: in[0].Type, Shape: out}}, nil
}

func (k *einsumKernel) Run(in, out []nd.Array) error {
	size, err := k.sizes(ValueMetas(in))
	if err != nil {
		return err
	}
	if k.product != nil && einsumGemm(k, *k.product, size, in, out[0]) {
		return nil
	}
	f, err := numeric[einsumLoop]("Einsum", in[0].Type)
	if err != nil {
		return err
	}
	// Each operand's stride for each letter (0 where it lacks the letter or
	// broadcasts it).
	st := make([][]int, len(in))
	for j, op := range k.ops {
		st[j] = make([]int, k.nlet)
		s := Strides(in[j].Shape)
		for a, l := range op {
			if in[j].Shape[a] != 1 {
				st[j][l] = s[a]
			}
		}
	}
	f.einsum(k, size, st, in, out[0])
	return nil
}

type einsumLoop interface {
	einsum(k *einsumKernel, size []int, st [][]int, in []nd.Array, y nd.Array)
}

func (numbers[T, W]) einsum(k *einsumKernel, size []int, st [][]int, in []nd.Array, y nd.Array) {
	xs := make([][]T, len(in))
	for j := range in {
		xs[j] = nd.MustAs[T](in[j])
	}
	ys := nd.MustAs[T](y)
	nred := 1
	for _, l := range k.reduce {
		nred *= size[l]
	}
	parallel.For(len(ys), nred*len(in), func(lo, hi int) {
		base := make([]int, len(in))
		off := make([]int, len(in))
		coord := make([]int, len(k.reduce))
		for t := lo; t < hi; t++ {
			// The operands' offsets at output element t.
			clear(base)
			r := t
			for i := len(k.out) - 1; i >= 0; i-- {
				l := k.out[i]
				c := r % size[l]
				r /= size[l]
				for j := range base {
					base[j] += c * st[j][l]
				}
			}
			var acc W
			clear(coord)
			copy(off, base)
			for range nred {
				p := W(1)
				for j, x := range xs {
					p *= W(x[off[j]])
				}
				acc += p
				for i := len(coord) - 1; i >= 0; i-- { // the next reduced coordinate
					l := k.reduce[i]
					coord[i]++
					for j := range off {
						off[j] += st[j][l]
					}
					if coord[i] < size[l] {
						break
					}
					for j := range off {
						off[j] -= coord[i] * st[j][l]
					}
					coord[i] = 0
				}
			}
			ys[t] = T(acc)
		}
	})
}
