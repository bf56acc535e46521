package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// NonMaxSuppression (opsets 10, 11): boxes [B, N, 4] (float32: corners
// [y1, x1, y2, x2] in either order, or [xc, yc, w, h] with
// center_point_box=1), scores [B, C, N] and the optional one-element inputs
// max_output_boxes_per_class (int64, default 0: none selected),
// iou_threshold and score_threshold (float32, default 0 and none). For each
// image and class the boxes scoring above score_threshold are taken in
// order of score (the lower index first among equal scores; a NaN score,
// which a score_threshold drops, after every number) and a box is
// kept unless its IoU with a kept box is above iou_threshold, up to
// max_output_boxes_per_class; the output is [selected, 3] int64 rows
// (image, class, box), image-major, as ONNX Runtime orders them.
//
// The output's shape depends on the data: where boxes and scores are
// known before the run NonMaxSuppression is computed while planning; else
// it is DataShaped (op.go), the plan ends at it and the rest of the model
// is planned for the number of boxes it kept. Its one-value inputs are read
// as shapes (their contents key the plans of the rest).
//
// The work is bounded: more than maxNMSBoxes boxes per image, or more than
// maxNMSWork IoU comparisons in the worst case (images x classes x boxes x
// min(boxes, max_output_boxes_per_class)), is an error naming the limit.

func init() {
	RegisterOp(OpDef{Name: "NonMaxSuppression", Versions: []int{10, 11}, New: newNMS})
}

const (
	maxNMSBoxes = 1 << 20
	maxNMSWork  = 1 << 32
)

type nmsKernel struct{ center bool }

func newNMS(n *Node) (Kernel, error) {
	if err := n.CheckArity(2, 5, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	c := a.Int("center_point_box", 0)
	if c != 0 && c != 1 {
		a.Fail("attribute center_point_box is %d, want 0 or 1", c)
	}
	return &nmsKernel{center: c == 1}, a.Err()
}

// nmsArgs are NonMaxSuppression's inputs, read.
type nmsArgs struct {
	boxes, scores []float32
	b, c, n       int
	maxOut        int64
	iou, score    float32
	hasScore      bool
}

func (k *nmsKernel) args(in []Meta) (nmsArgs, error) {
	bx, sc := in[0], in[1]
	if bx.Type != nd.Float32 || sc.Type != nd.Float32 {
		return nmsArgs{}, fmt.Errorf("inputs boxes and scores are %v and %v: NonMaxSuppression takes float32", bx.Type, sc.Type)
	}
	if len(bx.Shape) != 3 || bx.Shape[2] != 4 || len(sc.Shape) != 3 || sc.Shape[0] != bx.Shape[0] || sc.Shape[2] != bx.Shape[1] {
		return nmsArgs{}, fmt.Errorf("inputs boxes and scores have shapes %s and %s: NonMaxSuppression takes [B, N, 4] and [B, C, N]",
			nd.ShapeString(bx.Shape), nd.ShapeString(sc.Shape))
	}
	a := nmsArgs{b: bx.Shape[0], n: bx.Shape[1], c: sc.Shape[1]}
	if a.n > maxNMSBoxes {
		return nmsArgs{}, fmt.Errorf("input boxes has %d boxes per image: NonMaxSuppression takes at most %d", a.n, maxNMSBoxes)
	}
	for i := 2; i < len(in); i++ {
		if in[i].Type == nd.Undefined {
			continue
		}
		if in[i].Value == nil {
			return nmsArgs{}, NeedValue(i)
		}
		if numel(in[i].Shape) != 1 {
			return nmsArgs{}, fmt.Errorf("input %d has shape %s: NonMaxSuppression takes one value", i, nd.ShapeString(in[i].Shape))
		}
		switch i {
		case 2:
			v, err := nd.Int64s(*in[i].Value)
			if err != nil {
				return nmsArgs{}, err
			}
			a.maxOut = max(v[0], 0)
		default:
			f, err := nd.Convert(*in[i].Value, nd.Float32)
			if err != nil {
				return nmsArgs{}, err
			}
			if i == 3 {
				a.iou = nd.MustAs[float32](f)[0]
			} else {
				a.score, a.hasScore = nd.MustAs[float32](f)[0], true
			}
		}
	}
	if work := float64(a.b) * float64(a.c) * float64(a.n) * float64(min(int64(a.n), a.maxOut)); work > maxNMSWork {
		return nmsArgs{}, fmt.Errorf("inputs of %d images, %d classes and %d boxes, up to %d kept per class: NonMaxSuppression takes at most %d comparisons (limit %d)",
			a.b, a.c, a.n, a.maxOut, int64(work), int64(maxNMSWork))
	}
	if bx.Value == nil {
		return nmsArgs{}, NeedValue(0)
	}
	if sc.Value == nil {
		return nmsArgs{}, NeedValue(1)
	}
	a.boxes, a.scores = nd.MustAs[float32](*bx.Value), nd.MustAs[float32](*sc.Value)
	return a, nil
}

// corners gives box i of image b as y1, x1, y2, x2 with y1 <= y2, x1 <= x2.
func (k *nmsKernel) corners(a *nmsArgs, b, i int) (y1, x1, y2, x2 float32) {
	p := a.boxes[(b*a.n+i)*4:]
	if k.center {
		xc, yc, w, h := p[0], p[1], p[2], p[3]
		return yc - h/2, xc - w/2, yc + h/2, xc + w/2
	}
	return min(p[0], p[2]), min(p[1], p[3]), max(p[0], p[2]), max(p[1], p[3])
}

// nmsBox is a box's corners (y1 <= y2, x1 <= x2) and area.
type nmsBox struct{ y1, x1, y2, x2, area float32 }

// selectBoxes appends the selected (image, class, box) triples to dst.
//
// Per image the boxes' corners and areas are computed once, for every
// class. Per class the candidates (the boxes scoring above the threshold)
// go into a max-heap of nmsKey, built in linear time, and are popped in
// order only until max_output_boxes_per_class are kept (or none is left),
// as ONNX Runtime's priority queue does: a class keeps its few best of
// thousands without sorting them all. A candidate is compared with the
// boxes kept of positive area only: a box of area 0 or NaN neither
// suppresses nor is suppressed (its IoU is 0 or NaN).
func (k *nmsKernel) selectBoxes(a nmsArgs, dst []int64) []int64 {
	if a.maxOut == 0 {
		return dst
	}
	all := make([]nmsBox, a.n)
	heap := make([]uint64, 0, a.n)
	kept := newNMSKept(int(min(a.maxOut, int64(a.n))))
	for b := range a.b {
		for i := range all {
			y1, x1, y2, x2 := k.corners(&a, b, i)
			all[i] = nmsBox{y1, x1, y2, x2, (y2 - y1) * (x2 - x1)}
		}
		for c := range a.c {
			s := a.scores[(b*a.c+c)*a.n : (b*a.c+c+1)*a.n]
			heap = heap[:0]
			if a.hasScore {
				thr := a.score
				for i, v := range s {
					if v > thr {
						heap = append(heap, nmsKey(v, i))
					}
				}
			} else {
				for i, v := range s {
					heap = append(heap, nmsKey(v, i))
				}
			}
			for i := len(heap)/2 - 1; i >= 0; i-- {
				heapDown(heap, i)
			}
			kept.n = 0
			var nKept int64
			for len(heap) > 0 && nKept < a.maxOut {
				i := int(^uint32(heap[0]))
				last := len(heap) - 1
				heap[0] = heap[last]
				if heap = heap[:last]; last > 0 {
					heapDown(heap, 0)
				}
				if bi := all[i]; bi.area > 0 {
					if kept.suppresses(&bi, a.iou) {
						continue
					}
					kept.add(bi)
				}
				nKept++
				dst = append(dst, int64(b), int64(c), int64(i))
			}
		}
	}
	return dst
}

// nmsKey orders the candidates as one unsigned integer: above, the score
// by its bits made to compare as the numbers do (-0 as +0; NaN, which a
// score threshold never lets through, below every number); below, the
// complement of the box's index, the lower index first among equal
// scores.
func nmsKey(score float32, i int) uint64 {
	bits := math.Float32bits(score)
	switch {
	case score != score:
		bits = 0
	case score == 0:
		bits = 1 << 31
	case bits>>31 != 0:
		bits = ^bits
	default:
		bits |= 1 << 31
	}
	return uint64(bits)<<32 | uint64(^uint32(i))
}

// heapDown moves h[i] down the max-heap h to its place.
func heapDown(h []uint64, i int) {
	n := len(h)
	v := h[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		if r := l + 1; r < n && h[r] > h[l] {
			l = r
		}
		if h[l] <= v {
			break
		}
		h[i] = h[l]
		i = l
	}
	h[i] = v
}

// nmsKept are the boxes a class kept that may suppress another (those of
// positive area, so none with a NaN corner), by field (y1, x1, y2, x2 and
// area each a plane of stride values), for suppresses' vector kernel.
type nmsKept struct {
	planes    []float32
	stride, n int
}

func newNMSKept(size int) *nmsKept { return &nmsKept{planes: make([]float32, 5*size), stride: size} }

func (k *nmsKept) add(b nmsBox) {
	for p, v := range [5]float32{b.y1, b.x1, b.y2, b.x2, b.area} {
		k.planes[p*k.stride+k.n] = v
	}
	k.n++
}

// suppresses reports whether box b (of positive area) has an IoU above
// iou with one of k: the kept in whole vectors by nmsSuppressVec, the rest
// here, each with the same float32 operations in the same order.
func (k *nmsKept) suppresses(b *nmsBox, iou float32) bool {
	done, hit := nmsSuppressVec(b, k.planes, k.stride, k.n, iou)
	if hit {
		return true
	}
	st := k.stride
	y1, x1, y2, x2, area := k.planes[:st], k.planes[st:2*st], k.planes[2*st:3*st], k.planes[3*st:4*st], k.planes[4*st:]
	for i := done; i < k.n; i++ {
		ih := min(b.y2, y2[i]) - max(b.y1, y1[i])
		iw := min(b.x2, x2[i]) - max(b.x1, x1[i])
		if ih <= 0 || iw <= 0 {
			continue
		}
		inter := ih * iw
		if inter/(b.area+area[i]-inter) > iou {
			return true
		}
	}
	return false
}

func (k *nmsKernel) Infer(in []Meta) ([]Meta, error) {
	a, err := k.args(in)
	if i, ok := isNeedValue(err); ok && i < 2 {
		return nil, ShapeFromData()
	}
	if err != nil {
		return nil, err
	}
	sel := k.selectBoxes(a, nil)
	return []Meta{{Type: nd.Int64, Shape: []int{len(sel) / 3, 3}}}, nil
}

func (k *nmsKernel) Run(in, out []nd.Array) error {
	a, err := k.args(ValueMetas(in))
	if err != nil {
		return err
	}
	sel := k.selectBoxes(a, nd.MustAs[int64](out[0])[:0])
	if len(sel) != out[0].Len() {
		return fmt.Errorf("NonMaxSuppression selected %d boxes, planned for %d", len(sel)/3, out[0].Len()/3)
	}
	return nil
}

// RunShaped computes the selection from the inputs' contents (as Run) and
// makes the output for the boxes kept.
func (k *nmsKernel) RunShaped(in []nd.Array, alloc func(nd.DType, []int) (nd.Array, error)) ([]nd.Array, error) {
	a, err := k.args(ValueMetas(in))
	if err != nil {
		return nil, err
	}
	sel := k.selectBoxes(a, nil)
	out, err := alloc(nd.Int64, []int{len(sel) / 3, 3})
	if err != nil {
		return nil, err
	}
	copy(nd.MustAs[int64](out), sel)
	return []nd.Array{out}, nil
}
