package onnx

import (
	"fmt"
	"slices"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The sliding window of Conv (opsets 1, 11), MaxPool (1, 8, 10, 11, 12) and
// AveragePool (1, 7, 10, 11): the attributes kernel_shape, strides,
// dilations, pads, auto_pad and ceil_mode, and the output size and padding
// they give for an input. Kernels work on three spatial dimensions: a 1-D
// or 2-D window is a 3-D one with leading sizes 1. Depthwise convolutions
// and MaxPool also share the padded, phase-split copy of an input plane
// that their vector kernels read (dwPad).

// window is a node's window attributes, checked against each other.
type window struct {
	// kernel is kernel_shape (nil when a Conv leaves it to W's shape).
	kernel []int
	// strides, dilations are nil when not given (all 1); pads nil when not
	// given (all 0), else begins then ends, 2 per spatial dimension.
	strides, dilations, pads []int
	autoPad                  string
	ceil                     bool
}

// readWindow reads the window attributes of a node; needKernel says that
// kernel_shape is required (the pools), dilations and ceil whether the op
// version has those attributes.
func readWindow(a *Attrs, needKernel, dilations, ceil bool) window {
	var w window
	ints := func(name string, min int64) []int {
		v, ok := a.Ints(name)
		if !ok {
			return nil
		}
		out := make([]int, len(v))
		for i, x := range v {
			if x < min || x > 1<<31 {
				a.Fail("attribute %s is %v: each value must be at least %d", name, v, min)
				return nil
			}
			out[i] = int(x)
		}
		return out
	}
	w.kernel = ints("kernel_shape", 1)
	if needKernel && !a.Has("kernel_shape") {
		a.Fail("attribute kernel_shape is required")
	}
	w.strides = ints("strides", 1)
	if dilations {
		w.dilations = ints("dilations", 1)
	}
	w.pads = ints("pads", 0)
	w.autoPad = a.String("auto_pad", "NOTSET")
	a.OneOf("auto_pad", w.autoPad, "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
	if ceil {
		w.ceil = a.Flag("ceil_mode", false)
	}
	if w.autoPad != "NOTSET" && slices.ContainsFunc(w.pads, func(p int) bool { return p != 0 }) {
		a.Fail("attribute pads %v cannot be given with auto_pad %s", w.pads, w.autoPad)
	}
	if w.kernel != nil {
		if err := w.checkRank(len(w.kernel)); err != nil {
			a.Fail("%v", err)
		}
	} else if err := w.checkRank(-1); err != nil {
		a.Fail("%v", err)
	}
	return w
}

// checkRank checks that the attributes' lengths agree with each other and
// with n spatial dimensions (n < 0: not known yet).
func (w window) checkRank(n int) error {
	type attr struct {
		name string
		v    []int
		per  int
	}
	for _, x := range []attr{{"kernel_shape", w.kernel, 1}, {"strides", w.strides, 1}, {"dilations", w.dilations, 1}, {"pads", w.pads, 2}} {
		if x.v == nil {
			continue
		}
		if x.per == 2 && len(x.v)%2 != 0 {
			return fmt.Errorf("attribute pads has %d values, want 2 per spatial axis (begins, then ends)", len(x.v))
		}
		if n < 0 {
			n = len(x.v) / x.per
			continue
		}
		if len(x.v) != n*x.per {
			return fmt.Errorf("attribute %s has %d values, want %d for %d spatial axes", x.name, len(x.v), n*x.per, n)
		}
	}
	return nil
}

// geometry is a window placed on an input: 3 spatial dimensions (a 1-D or
// 2-D window has leading sizes 1, kernel 1, stride 1, no padding).
type geometry struct {
	nd                 int // the number of spatial dimensions of the op
	in, out, k         [3]int
	stride, dil, padLo [3]int
	// padHi is the padding at the end as the attributes or auto_pad give
	// it (the end of the padded extent, for count_include_pad).
	padHi [3]int
}

// geometry returns the window's geometry on an input of spatial shape in,
// with kernel (from kernel_shape, or W's shape for a Conv without it).
func (w window) geometry(in, kernel []int) (geometry, error) {
	n := len(in)
	var g geometry
	if n < 1 || n > 3 {
		return g, fmt.Errorf("%d spatial axes: 1 to 3 are supported", n)
	}
	if len(kernel) != n {
		return g, fmt.Errorf("the kernel has %d spatial axes, the input %d", len(kernel), n)
	}
	if err := w.checkRank(n); err != nil {
		return g, err
	}
	g.nd = n
	for i := range 3 {
		g.in[i], g.out[i], g.k[i], g.stride[i], g.dil[i] = 1, 1, 1, 1, 1
	}
	for i := range n {
		d := 3 - n + i
		g.in[d], g.k[d] = in[i], kernel[i]
		if w.strides != nil {
			g.stride[d] = w.strides[i]
		}
		if w.dilations != nil {
			g.dil[d] = w.dilations[i]
		}
		if w.pads != nil {
			g.padLo[d], g.padHi[d] = w.pads[i], w.pads[n+i]
		}
		ext := (g.k[d]-1)*g.dil[d] + 1
		size, s := g.in[d], g.stride[d]
		switch w.autoPad {
		case "SAME_UPPER", "SAME_LOWER":
			g.out[d] = (size + s - 1) / s
			total := max(0, (g.out[d]-1)*s+ext-size)
			g.padLo[d] = total / 2
			if w.autoPad == "SAME_LOWER" {
				g.padLo[d] = total - total/2
			}
			g.padHi[d] = total - g.padLo[d]
			continue
		case "VALID":
			g.padLo[d], g.padHi[d] = 0, 0
		}
		span := size + g.padLo[d] + g.padHi[d] - ext
		if span < 0 {
			return g, fmt.Errorf("spatial axis %d: the window (kernel %d, dilation %d: %d wide) is larger than the padded input (%d + pads %d and %d)",
				i, g.k[d], g.dil[d], ext, size, g.padLo[d], g.padHi[d])
		}
		g.out[d] = span/s + 1
		if w.ceil && span%s != 0 {
			g.out[d]++
			// As PyTorch and ONNX Runtime: the last window must start
			// inside the input or its leading padding.
			if (g.out[d]-1)*s >= size+g.padLo[d] {
				g.out[d]--
			}
		}
	}
	return g, nil
}

// outShape is the output's shape: n, c, then the spatial sizes.
func (g geometry) outShape(n, c int) []int {
	return append([]int{n, c}, g.out[3-g.nd:]...)
}

// inSize and outSize are the elements of one spatial plane.
func (g geometry) inSize() int  { return g.in[0] * g.in[1] * g.in[2] }
func (g geometry) outSize() int { return g.out[0] * g.out[1] * g.out[2] }

// kSize is the kernel's elements.
func (g geometry) kSize() int { return g.k[0] * g.k[1] * g.k[2] }

// padded reports whether any window reaches outside the input.
func (g geometry) padded() bool {
	for d := range 3 {
		if g.padLo[d] > 0 || (g.out[d]-1)*g.stride[d]-g.padLo[d]+(g.k[d]-1)*g.dil[d] >= g.in[d] {
			return true
		}
	}
	return false
}

// spatial splits a shape of rank >= 3 into n, c and the spatial sizes.
func spatial(shape []int, what string) (n, c int, sp []int, err error) {
	if len(shape) < 3 || len(shape) > 5 {
		return 0, 0, nil, fmt.Errorf("input %s has shape %s: want N x C x D1 [x D2 [x D3]] (1 to 3 spatial axes)", what, nd.ShapeString(shape))
	}
	return shape[0], shape[1], shape[2:], nil
}

// dwPad copies the 2-D input plane x (g.in[1] x g.in[2]) into dst, hp
// padded rows of g.stride[2] phases of wq columns each. dst must have been
// cleared for this geometry: only the input's positions are written, the
// padding's stay 0.
func dwPad(dst []float32, x []float32, g geometry, hp, wq int) {
	sw := g.stride[2]
	h, w := g.in[1], g.in[2]
	pl := g.padLo[2]
	rowLen := sw * wq
	// Padded rows [r0, r1) hold input rows r0-padLo...
	r0 := min(hp, g.padLo[1])
	r1 := max(r0, min(hp, h+g.padLo[1]))
	if r1 == r0 {
		return
	}
	rows := dst[r0*rowLen:]
	src := x[(r0-g.padLo[1])*w:]
	n := r1 - r0
	switch sw {
	case 1:
		// Columns [pl, pl+w) of the padded row are the input's, as far as
		// the row goes.
		lo := min(pl, wq)
		cnt := min(w, wq-lo)
		for i := range n {
			copy(rows[i*rowLen+lo:i*rowLen+lo+cnt], src[i*w:])
		}
	case 2:
		// Input column k is padded column k+pl: phase (k+pl)%2, index
		// (k+pl)/2. Even input columns go to phase pl%2 from pl/2 on, odd
		// ones to phase (pl+1)%2 from (pl+1)/2 on.
		e0, o0 := pl%2*wq+min(pl/2, wq), (pl+1)%2*wq+min((pl+1)/2, wq)
		ne, no := min((w+1)/2, wq-min(pl/2, wq)), min(w/2, wq-min((pl+1)/2, wq))
		pairs := min(ne, no)
		deint2(rows[e0:], rows[o0:], src, n, pairs, rowLen, w)
		for i := range n {
			for j := pairs; j < ne; j++ {
				rows[i*rowLen+e0+j] = src[i*w+2*j]
			}
			for j := pairs; j < no; j++ {
				rows[i*rowLen+o0+j] = src[i*w+2*j+1]
			}
		}
	default:
		for i := range n {
			for rw := range sw {
				seg := rows[i*rowLen+rw*wq : i*rowLen+(rw+1)*wq]
				for j := range seg {
					if c := j*sw + rw - pl; c >= 0 && c < w {
						seg[j] = src[i*w+c]
					}
				}
			}
		}
	}
}
