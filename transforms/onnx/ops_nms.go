package onnx

import (
	"fmt"
	"slices"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// NonMaxSuppression (opsets 10, 11): boxes [B, N, 4] (float32: corners
// [y1, x1, y2, x2] in either order, or [xc, yc, w, h] with
// center_point_box=1), scores [B, C, N] and the optional one-element inputs
// max_output_boxes_per_class (int64, default 0: none selected),
// iou_threshold and score_threshold (float32, default 0 and none). For each
// image and class the boxes scoring above score_threshold are taken in
// order of score (the lower index first among equal scores) and a box is
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

// select appends the selected (image, class, box) triples to dst.
func (k *nmsKernel) selectBoxes(a nmsArgs, dst []int64) []int64 {
	if a.maxOut == 0 {
		return dst
	}
	type box struct{ y1, x1, y2, x2, area float32 }
	all := make([]box, a.n)
	cand := make([]int32, 0, a.n)
	var kept []int32
	for b := range a.b {
		for i := range all {
			y1, x1, y2, x2 := k.corners(&a, b, i)
			all[i] = box{y1, x1, y2, x2, (y2 - y1) * (x2 - x1)}
		}
		for c := range a.c {
			s := a.scores[(b*a.c+c)*a.n : (b*a.c+c+1)*a.n]
			cand = cand[:0]
			for i, v := range s {
				if !a.hasScore || v > a.score {
					cand = append(cand, int32(i))
				}
			}
			// By score, the earlier box first among equal scores (cand is
			// in index order: what a stable sort gives, at pdqsort's
			// speed).
			slices.SortFunc(cand, func(i, j int32) int {
				switch {
				case s[i] > s[j]:
					return -1
				case s[i] < s[j]:
					return 1
				}
				return int(i - j)
			})
			kept = kept[:0]
			for _, i := range cand {
				if int64(len(kept)) >= a.maxOut {
					break
				}
				bi, ok := all[i], true
				for _, j := range kept {
					bj := all[j]
					if bi.area <= 0 || bj.area <= 0 {
						continue
					}
					ih := min(bi.y2, bj.y2) - max(bi.y1, bj.y1)
					iw := min(bi.x2, bj.x2) - max(bi.x1, bj.x1)
					if ih <= 0 || iw <= 0 {
						continue
					}
					inter := ih * iw
					if inter/(bi.area+bj.area-inter) > a.iou {
						ok = false
						break
					}
				}
				if ok {
					kept = append(kept, i)
					dst = append(dst, int64(b), int64(c), int64(i))
				}
			}
		}
	}
	return dst
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
