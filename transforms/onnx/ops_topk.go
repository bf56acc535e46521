package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// TopK (opsets 1, 10, 11): the k largest (smallest with largest=0, from 11)
// values along axis (default -1) and their int64 indices, in order (sorted
// is accepted; the output is always sorted, which ONNX allows for
// sorted=0). Of equal values the lower index comes first, as ONNX
// specifies; NaN counts as larger than every number. k is the attribute k
// before 10 and from 10 a one-element int64 input known before the model
// runs (a constant, or computed from shapes). A k below 0 or past the
// axis's length is an error naming the node.

func init() {
	RegisterOp(OpDef{Name: "TopK", Versions: []int{1, 10, 11}, New: newTopK})
}

type topKKernel struct {
	kInput   bool
	k        int64 // the attribute (opset 1)
	axis     int
	smallest bool
}

func newTopK(n *Node) (Kernel, error) {
	a := n.Attrs
	k := &topKKernel{kInput: n.Since >= 10}
	k.axis = int(a.Int("axis", -1))
	if n.Since >= 11 {
		k.smallest = !a.Flag("largest", true)
		a.Flag("sorted", true)
	}
	if k.kInput {
		if err := n.CheckArity(2, 2, 2, 2); err != nil {
			return nil, err
		}
	} else {
		if !a.Has("k") {
			a.Fail("attribute k is required")
		}
		k.k = a.Int("k", 0)
		if err := n.CheckArity(1, 1, 2, 2); err != nil {
			return nil, err
		}
	}
	return k, a.Err()
}

// plan gives outer x n x inner (n the axis's length) and k.
func (t *topKKernel) plan(in []Meta) (outer, n, inner, k int, err error) {
	x := in[0].Shape
	ax, err := NormAxis(t.axis, len(x))
	if err != nil {
		return 0, 0, 0, 0, err
	}
	kv := t.k
	if t.kInput {
		v, err := KnownInts(in, 1, "input K")
		if err != nil {
			return 0, 0, 0, 0, err
		}
		if len(v) != 1 {
			return 0, 0, 0, 0, fmt.Errorf("input K has %d values: TopK takes one", len(v))
		}
		kv = v[0]
	}
	if kv < 0 || kv > int64(x[ax]) {
		return 0, 0, 0, 0, fmt.Errorf("k is %d: TopK takes 0 to the axis's length, %d (input X has shape %s)", kv, x[ax], nd.ShapeString(x))
	}
	return numel(x[:ax]), x[ax], numel(x[ax+1:]), int(kv), nil
}

func (t *topKKernel) Infer(in []Meta) ([]Meta, error) {
	if !isNumeric(in[0].Type) {
		return nil, fmt.Errorf("TopK of %v: takes a number type", in[0].Type)
	}
	_, _, _, k, err := t.plan(in)
	if err != nil {
		return nil, err
	}
	ax, _ := NormAxis(t.axis, len(in[0].Shape))
	shape := slices.Clone(in[0].Shape)
	shape[ax] = k
	return []Meta{{Type: in[0].Type, Shape: shape}, {Type: nd.Int64, Shape: slices.Clone(shape)}}, nil
}

func (t *topKKernel) Run(in, out []nd.Array) error {
	outer, n, inner, k, err := t.plan(ValueMetas(in))
	if err != nil {
		return err
	}
	f, err := numeric[topKLoop]("TopK", in[0].Type)
	if err != nil {
		return err
	}
	f.topK(in[0], out[0], out[1], outer, n, inner, k, t.smallest)
	return nil
}

type topKLoop interface {
	topK(x, v, idx nd.Array, outer, n, inner, k int, smallest bool)
}

func (numbers[T, W]) topK(x, v, idx nd.Array, outer, n, inner, k int, smallest bool) {
	if x.Type == nd.Float32 && n <= math.MaxUint32 {
		topK32(nd.MustAs[float32](x), nd.MustAs[float32](v), nd.MustAs[int64](idx), outer, n, inner, k, smallest)
		return
	}
	topK(nd.MustAs[T](x), nd.MustAs[T](v), nd.MustAs[int64](idx), outer, n, inner, k, smallest)
}

// topK32 is topK of float32 rows (the models' scores), in the same order,
// through keys: an element's key (topKKey) is one unsigned integer, and
// element a comes before b where a's key is the smaller, so that keeping,
// comparing and sorting are integer operations. For a k well below the
// row's length the k best so far are a max-heap of keys (its root the
// worst kept), and the row is scanned for the elements that may come
// before the root by value alone (topKScan: 8 at a time where the CPU has
// AVX2), each then compared by key; else every element's key is sorted.
// A row along an inner axis is gathered first.
func topK32(xs, vs []float32, is []int64, outer, n, inner, k int, smallest bool) {
	if k == 0 {
		return
	}
	// A row a task, each worker with buffers of its own: the rows' costs
	// differ with their data (how often the heap changes), and a core of a
	// VM is often slower than another for a while; halves of the rows, one
	// a core, left the other core waiting. TopK of 100 of 8,400 scores,
	// 640 rows, two threads, 20 runs, three alternating pairs: the medians
	// 15.3, 15.1, 15.7 -> 14.2, 13.5, 15.8 ms, the fastest runs unchanged
	// (12.5-14.1 ms on both sides). Short rows are claimed in runs
	// (EachWorker).
	parallel.EachWorker(outer*inner, 4*n, func() func(r int) {
		keys := make([]uint64, n)
		var gathered []float32
		if inner > 1 {
			gathered = make([]float32, n)
		}
		return func(r int) {
			o, c := r/inner, r%inner
			row := xs[o*n*inner+c:]
			if inner > 1 {
				for j := range gathered {
					gathered[j] = row[j*inner]
				}
				row = gathered
			}
			row = row[:n]
			var sel []uint64
			if k*8 <= n {
				sel = topKHeap32(keys[:k], row, smallest)
			} else {
				for j, v := range row {
					keys[j] = topKKey(v, j, smallest)
				}
				sel = keys
			}
			slices.Sort(sel)
			base := o*k*inner + c
			for j, key := range sel[:k] {
				src := uint32(key)
				vs[base+j*inner] = row[src]
				is[base+j*inner] = int64(src)
			}
		}
	})
}

// topKKey is element j of value v's key: v's bits made to order as the
// numbers do (-0 as +0, NaN above +Inf), complemented where the largest
// come first, above j (the lower index first among equal values).
func topKKey(v float32, j int, smallest bool) uint64 {
	b := math.Float32bits(v)
	switch {
	case v != v:
		b = math.MaxUint32
	case v == 0:
		b = 1 << 31
	case b>>31 != 0:
		b = ^b
	default:
		b |= 1 << 31
	}
	if !smallest {
		b = ^b
	}
	return uint64(b)<<32 | uint64(uint32(j))
}

// topKHeap32 returns the keys of row's k = len(h) best elements in h,
// unordered.
func topKHeap32(h []uint64, row []float32, smallest bool) []uint64 {
	k := len(h)
	for j := range h {
		h[j] = topKKey(row[j], j, smallest)
	}
	for i := k/2 - 1; i >= 0; i-- {
		heapDown(h, i)
	}
	thr := row[uint32(h[0])]
	for j := k; j < len(row); j++ {
		j += topKScan(row[j:], thr, smallest)
		if j == len(row) {
			break
		}
		if key := topKKey(row[j], j, smallest); key < h[0] {
			h[0] = key
			heapDown(h, 0)
			thr = row[uint32(h[0])]
		}
	}
	return h
}

// topKScan returns the index of row's first element that may come before
// an element of value thr: not at or below it (not at or above it with
// smallest; NaN is neither), or len(row) where there is none.
func topKScan(row []float32, thr float32, smallest bool) int {
	i := topKScanVec(row, thr, smallest)
	if smallest {
		for ; i < len(row); i++ {
			if !(row[i] >= thr) {
				break
			}
		}
		return i
	}
	for ; i < len(row); i++ {
		if !(row[i] <= thr) {
			break
		}
	}
	return i
}

// topK writes each row's first k elements in (value, index) order: for a
// k well below the row's length through a heap of the k best so far (one
// comparison for most elements), else by sorting the row's indices; the
// buffers are reused by the rows of one worker.
func topK[T numElem](xs, vs []T, is []int64, outer, n, inner, k int, smallest bool) {
	if k == 0 {
		return
	}
	parallel.For(outer*inner, 4*n, func(lo, hi int) {
		order := make([]int32, n)
		heapVals := make([]T, min(k, n))
		for r := lo; r < hi; r++ {
			o, c := r/inner, r%inner
			row := xs[o*n*inner+c:]
			// before: element a comes before b.
			before := func(a, b int32) bool {
				va, vb := row[int(a)*inner], row[int(b)*inner]
				if topKBefore(va, vb, smallest) {
					return true
				}
				return !topKBefore(vb, va, smallest) && a < b
			}
			cmp := func(a, b int32) int {
				if before(a, b) {
					return -1
				}
				return 1
			}
			var sel []int32
			if k*8 <= n {
				sel = topKHeap(order[:k], heapVals[:k], row, inner, n, smallest)
			} else {
				for j := range order {
					order[j] = int32(j)
				}
				sel = order
			}
			slices.SortFunc(sel, cmp)
			base := o*k*inner + c
			for j, src := range sel[:k] {
				vs[base+j*inner] = row[int(src)*inner]
				is[base+j*inner] = int64(src)
			}
		}
	})
}

// topKHeap returns the k = len(h) best of 0..n-1 (element j at
// row[j*inner]) in h, unordered: h is a heap whose root is the worst kept,
// and hv holds the values of h's elements (compared in place, without a
// call). An element strictly worse than the root's value is passed over
// at one comparison (most of a long row).
func topKHeap[T numElem](h []int32, hv []T, row []T, inner, n int, smallest bool) []int32 {
	k := len(h)
	// worse: the element at heap position a comes after the one at b.
	worse := func(a, b int) bool {
		va, vb := hv[a], hv[b]
		if topKBefore(vb, va, smallest) {
			return true
		}
		return !topKBefore(va, vb, smallest) && h[a] > h[b]
	}
	down := func(i int) {
		for {
			w, l, r := i, 2*i+1, 2*i+2
			if l < k && worse(l, w) {
				w = l
			}
			if r < k && worse(r, w) {
				w = r
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			hv[i], hv[w] = hv[w], hv[i]
			i = w
		}
	}
	for j := range h {
		h[j], hv[j] = int32(j), row[j*inner]
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	for j := k; j < n; j++ {
		v := row[j*inner]
		if smallest && v > hv[0] || !smallest && v < hv[0] {
			continue
		}
		// j comes before the root: its value first (ties: the earlier
		// index, and j is after every kept one).
		if topKBefore(v, hv[0], smallest) {
			h[0], hv[0] = int32(j), v
			down(0)
		}
	}
	return h
}

// topKBefore reports whether a comes strictly before b (larger, or
// smaller with smallest; NaN is the largest).
func topKBefore[T numElem](a, b T, smallest bool) bool {
	an, bn := a != a, b != b
	switch {
	case an || bn:
		return an != bn && (an != smallest)
	case smallest:
		return a < b
	}
	return a > b
}
