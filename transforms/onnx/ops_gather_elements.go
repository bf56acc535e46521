package onnx

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// GatherElements (opsets 11, 13) and ScatterElements (11, 13, 16, 18):
// element-wise indexing along axis. GatherElements' output has the shape
// of indices, out[i..] = data[i.. with indices[i..] on axis];
// ScatterElements' output is data with updates[i..] written (or, from 16,
// added or multiplied and from 18 maxed or minned: reduction) at the same
// positions. Indices are int32 or int64, negative counted from the axis's
// end; one out of range is an error naming its element. ScatterElements
// applies the updates in order, so a repeated index keeps the last update
// (reduction none). On the device both are one kernel (ops_gather_nd.cu),
// ScatterElements with a reduction on the host.

func init() {
	RegisterOp(OpDef{Name: "GatherElements", Versions: []int{11, 13}, New: newElements(false)})
	RegisterOp(OpDef{Name: "ScatterElements", Versions: []int{11, 13, 16, 18}, New: newElements(true)})
}

type scatterRed uint8

const (
	scatterNone scatterRed = iota
	scatterAdd
	scatterMul
	scatterMax
	scatterMin
)

// readReduction reads a scatter's reduction attribute (none before 16; add
// and mul from 16, max and min from 18).
func readReduction(n *Node) scatterRed {
	if n.Since < 16 {
		return scatterNone
	}
	allowed := []string{"none", "add", "mul"}
	if n.Since >= 18 {
		allowed = append(allowed, "max", "min")
	}
	r := n.Attrs.String("reduction", "none")
	n.Attrs.OneOf("reduction", r, allowed...)
	switch r {
	case "add":
		return scatterAdd
	case "mul":
		return scatterMul
	case "max":
		return scatterMax
	case "min":
		return scatterMin
	}
	return scatterNone
}

type elementsKernel struct {
	scatter bool
	axis    int
	red     scatterRed
}

func newElements(scatter bool) func(n *Node) (Kernel, error) {
	return func(n *Node) (Kernel, error) {
		k := &elementsKernel{scatter: scatter, axis: int(n.Attrs.Int("axis", 0))}
		var err error
		if scatter {
			k.red = readReduction(n)
			err = n.CheckArity(3, 3, 1, 1)
		} else {
			err = n.CheckArity(2, 2, 1, 1)
		}
		if err != nil {
			return nil, err
		}
		return k, n.Attrs.Err()
	}
}

func (k *elementsKernel) name() string {
	if k.scatter {
		return "ScatterElements"
	}
	return "GatherElements"
}

func (k *elementsKernel) Infer(in []Meta) ([]Meta, error) {
	data, idx := in[0].Shape, in[1].Shape
	if t := in[1].Type; t != nd.Int32 && t != nd.Int64 {
		return nil, fmt.Errorf("input indices is %v: %s takes int32 or int64", t, k.name())
	}
	if _, err := NormAxis(k.axis, len(data)); err != nil {
		return nil, err
	}
	if len(idx) != len(data) {
		return nil, fmt.Errorf("inputs data and indices have shapes %s and %s: %s takes one rank", nd.ShapeString(data), nd.ShapeString(idx), k.name())
	}
	if k.scatter {
		if !equalShape(in[2].Shape, idx) || in[2].Type != in[0].Type {
			return nil, fmt.Errorf("input updates is %v%s: ScatterElements takes indices' shape %s and data's type %v",
				in[2].Type, nd.ShapeString(in[2].Shape), nd.ShapeString(idx), in[0].Type)
		}
		if k.red != scatterNone && !isNumeric(in[0].Type) {
			return nil, fmt.Errorf("ScatterElements' reduction of %v: takes a number type", in[0].Type)
		}
		return []Meta{{Type: in[0].Type, Shape: data}}, nil
	}
	ax, _ := NormAxis(k.axis, len(data))
	for i := range idx {
		if i != ax && idx[i] > data[i] {
			return nil, fmt.Errorf("inputs data and indices have shapes %s and %s: GatherElements takes indices no longer than data off the axis", nd.ShapeString(data), nd.ShapeString(idx))
		}
	}
	return []Meta{{Type: in[0].Type, Shape: idx}}, nil
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// offsets gives, for each element of indices (shape idx), the offset of
// the data element (data of shape data) it indexes; an index out of range
// is an error naming it.
func (k *elementsKernel) offsets(data, idx []int, indices nd.Array) ([]int64, error) {
	ax, _ := NormAxis(k.axis, len(data))
	var v []int64
	switch indices.Type { // int64 and int32 without nd.Int64s's call per element
	case nd.Int64:
		v = slices.Clone(nd.MustAs[int64](indices))
	case nd.Int32:
		v = make([]int64, indices.Len())
		for i, x := range nd.MustAs[int32](indices) {
			v[i] = int64(x)
		}
	default:
		var err error
		if v, err = nd.Int64s(indices); err != nil {
			return nil, err
		}
	}
	dst := Strides(data)
	n := int64(data[ax])
	if len(v) == 0 {
		return v, nil
	}
	// A row of indices at a time (the last axis): its offset in data
	// without the axis's term (off), kept as the coordinates step.
	last := len(idx) - 1
	row := idx[last]
	step := int64(dst[last]) // the last axis's stride, 0 along ax
	if last == ax {
		step = 0
	}
	sa := int64(dst[ax])
	coord := make([]int, last)
	off := int64(0)
	for t0 := 0; t0 < len(v); t0 += row {
		o := off
		for t := t0; t < t0+row; t++ {
			x := v[t]
			if x < -n || x >= n {
				return nil, fmt.Errorf("index %d (element %d of indices) is out of range for axis %d of size %d", x, t, ax, n)
			}
			if x < 0 {
				x += n
			}
			v[t] = o + x*sa
			o += step
		}
		for d := last - 1; d >= 0; d-- { // the next row's coordinates
			s := int64(dst[d])
			if d == ax {
				s = 0
			}
			if coord[d]++; coord[d] < idx[d] {
				off += s
				break
			}
			off -= int64(coord[d]-1) * s
			coord[d] = 0
		}
	}
	return v, nil
}

func (k *elementsKernel) Run(in, out []nd.Array) error {
	if !k.scatter && in[0].Type.Size() == 4 && len(in[1].Shape) > 0 {
		dst, src := words[uint32](out[0].Data), words[uint32](in[0].Data)
		switch in[1].Type {
		case nd.Int64:
			return gatherElements(dst, src, nd.MustAs[int64](in[1]), in[0].Shape, in[1].Shape, k.axis)
		case nd.Int32:
			return gatherElements(dst, src, nd.MustAs[int32](in[1]), in[0].Shape, in[1].Shape, k.axis)
		}
	}
	offs, err := k.offsets(in[0].Shape, in[1].Shape, in[1])
	if err != nil {
		return err
	}
	size := in[0].Type.Size()
	if !k.scatter {
		src, dst := in[0].Data, out[0].Data
		parallel.For(len(offs), size, func(lo, hi int) {
			switch size { // typed loops: a copy call per element costs more than the element
			case 4:
				gatherWords(words[uint32](dst), words[uint32](src), offs, lo, hi)
			case 8:
				gatherWords(words[uint64](dst), words[uint64](src), offs, lo, hi)
			default:
				for t := lo; t < hi; t++ {
					o := int(offs[t]) * size
					copy(dst[t*size:(t+1)*size], src[o:o+size])
				}
			}
		})
		return nil
	}
	copy(out[0].Data, in[0].Data)
	return scatterAt(k.red, out[0], in[2], offs, 1)
}

// gatherElements is GatherElements of 4-byte elements with the offsets
// computed as the values are moved (offsets' arithmetic, a row of the last
// axis at a time, without its slice of offsets), rows on all cores; along
// the last axis a row's indices pick from one row of data (gatherRow's
// loop, one range check an element).
func gatherElements[E word, I int32 | int64](dst, src []E, ind []I, data, idx []int, axis int) error {
	ax, _ := NormAxis(axis, len(data))
	if len(ind) == 0 {
		return nil
	}
	st := Strides(data)
	n := int64(data[ax])
	last := len(idx) - 1
	row := idx[last]
	step := int64(st[last])
	if last == ax {
		step = 0
	}
	sa := int64(st[ax])
	rows := len(ind) / row
	var bad atomic.Int64
	bad.Store(-1)
	report := func(at int64) { // keeps the first bad element of all
		for {
			if cur := bad.Load(); cur >= 0 && cur <= at || bad.CompareAndSwap(cur, at) {
				return
			}
		}
	}
	parallel.For(rows, 2*row, func(lo, hi int) {
		coord := make([]int, last)
		off, r := int64(0), lo
		for d := last - 1; d >= 0; d-- { // row lo's coordinates
			coord[d] = r % idx[d]
			r /= idx[d]
			if d != ax {
				off += int64(coord[d]) * int64(st[d])
			}
		}
		for t0 := lo * row; t0 < hi*row; t0 += row {
			o := off
			in, out := ind[t0:t0+row], dst[t0:t0+row]
			if last == ax { // along the row: the indices pick from one row of data
				if t, ok := gatherRow(out, in, src[off:off+n]); !ok {
					report(int64(t0 + t))
					return
				}
			} else {
				for t, i := range in {
					x := int64(i)
					if x < 0 {
						x += n
					}
					if uint64(x) >= uint64(n) {
						report(int64(t0 + t))
						return
					}
					out[t] = src[o+x*sa]
					o += step
				}
			}
			for d := last - 1; d >= 0; d-- { // the next row's coordinates
				s := int64(st[d])
				if d == ax {
					s = 0
				}
				if coord[d]++; coord[d] < idx[d] {
					off += s
					break
				}
				off -= int64(coord[d]-1) * s
				coord[d] = 0
			}
		}
	})
	if t := bad.Load(); t >= 0 {
		return fmt.Errorf("index %d (element %d of indices) is out of range for axis %d of size %d", ind[t], t, ax, n)
	}
	return nil
}

// gatherWords sets dst[t] = src[offs[t]] for t in [lo, hi).
func gatherWords[E word](dst, src []E, offs []int64, lo, hi int) {
	dst, offs = dst[lo:hi], offs[lo:hi]
	for t, o := range offs {
		dst[t] = src[o]
	}
}

// scatterAt applies updates to y in order: the block of n elements at
// updates' element t*n goes to y's element offs[t] on (written, or reduced
// with red).
func scatterAt(red scatterRed, y, updates nd.Array, offs []int64, n int) error {
	if red == scatterNone {
		size, b := y.Type.Size(), n*y.Type.Size()
		for t, o := range offs {
			copy(y.Data[int(o)*size:int(o)*size+b], updates.Data[t*b:(t+1)*b])
		}
		return nil
	}
	f, err := numeric[scatterLoop]("ScatterElements", y.Type)
	if err != nil {
		return err
	}
	f.scatterReduce(red, y, updates, offs, n)
	return nil
}

type scatterLoop interface {
	scatterReduce(red scatterRed, y, updates nd.Array, offs []int64, n int)
}

func (numbers[T, W]) scatterReduce(red scatterRed, y, updates nd.Array, offs []int64, n int) {
	ys, us := nd.MustAs[T](y), nd.MustAs[T](updates)
	for t, o := range offs {
		dst, src := ys[o:int(o)+n], us[t*n:(t+1)*n]
		for i, u := range src {
			switch red {
			case scatterAdd:
				dst[i] += u
			case scatterMul:
				dst[i] *= u
			case scatterMax:
				dst[i] = max(dst[i], u)
			case scatterMin:
				dst[i] = min(dst[i], u)
			}
		}
	}
}

// gatherRow writes src[in[t]] to out[t] (a negative index counts from the
// end) and reports true, or the first index out of range and false.
func gatherRow[E word, I int32 | int64](out []E, in []I, src []E) (int, bool) {
	out = out[:len(in)]
	n := int64(len(src))
	for t, i := range in {
		x := int64(i)
		x += n & (x >> 63) // a negative index counts from the end
		if uint64(x) >= uint64(n) {
			return t, false
		}
		out[t] = src[x]
	}
	return 0, true
}
