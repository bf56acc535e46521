package onnx

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// NonMaxSuppression through its heap of candidates gives, triple for
// triple and in order, what sorting every candidate and scanning them
// gives (nmsSelectRef, the kernel's former loop): scores with ties, -0 and
// +0, NaN (below every number where no threshold drops it), IoUs at the
// threshold, boxes of area 0 and NaN corners, corners in either order and
// center_point_box, a max_output_boxes_per_class above the number of
// boxes, and no images, classes or boxes at all; the kept boxes compared
// at each vector width.
func TestNMSHeapMatchesSort(t *testing.T) {
	defer func(w int) { nmsWidth = w }(nmsWidth)
	r := rand.New(rand.NewPCG(28, 10))
	for trial := range 300 {
		b, c, n := 1+r.IntN(3), 1+r.IntN(4), r.IntN(300)
		switch trial {
		case 0:
			b = 0
		case 1:
			c = 0
		case 2:
			n = 0
		}
		a := nmsArgs{b: b, c: c, n: n, boxes: make([]float32, b*n*4), scores: make([]float32, b*c*n),
			maxOut: int64(1 + r.IntN(n+20)), iou: float32(r.Float64()), hasScore: trial%3 != 0, score: float32(r.Float64()*0.6 - 0.1)}
		if trial%7 == 0 {
			a.maxOut = math.MaxInt64
		}
		if trial%4 != 0 {
			// IoUs of boxes on a grid meet these exactly.
			a.iou = []float32{0, 0.25, 0.5}[trial%4-1]
		}
		for i := range n * b {
			y, x := float32(r.IntN(40)), float32(r.IntN(40))
			h, w := float32(r.IntN(12)), float32(r.IntN(12))
			box := []float32{y, x, y + h, x + w}
			switch r.IntN(10) {
			case 0:
				box[0], box[2] = box[2], box[0]
			case 1:
				box[3] = float32(math.NaN())
			}
			copy(a.boxes[i*4:], box)
		}
		for i := range a.scores {
			switch r.IntN(12) {
			case 0:
				a.scores[i] = float32(math.NaN())
			case 1:
				a.scores[i] = float32(math.Copysign(0, -1))
			case 2:
				a.scores[i] = 0
			default:
				// Few distinct values: many ties.
				a.scores[i] = float32(r.IntN(16))/16 - 0.2
			}
		}
		for _, center := range []bool{false, true} {
			k := &nmsKernel{center: center}
			want := nmsSelectRef(k, a)
			for _, width := range simdWidths() {
				if width > 8 {
					continue
				}
				nmsWidth = width
				got := k.selectBoxes(a, nil)
				assert.Equal(t, want, got, "trial %d (%d images, %d classes, %d boxes), center %v, width %d", trial, b, c, n, center, width)
			}
		}
	}
}

// TestNMSKeyOrder: the candidates' keys order as their scores do, the
// lower index first among equal ones, NaN last.
func TestNMSKeyOrder(t *testing.T) {
	inf := float32(math.Inf(1))
	scores := []float32{-inf, -3, -1e-30, float32(math.Copysign(0, -1)), 0, 1e-30, 0.5, 2, inf}
	for i, s := range scores {
		for j, u := range scores {
			want := s > u || s == u && i < j
			assert.Equal(t, want, nmsKey(s, i) > nmsKey(u, j), "%v (box %d) before %v (box %d)", s, i, u, j)
			assert.Greater(t, nmsKey(s, i), nmsKey(float32(math.NaN()), j))
		}
	}
}

// nmsSelectRef is NonMaxSuppression's selection plainly: every candidate
// sorted (score descending, NaN last, the lower index first among equal
// scores), then kept unless its IoU with a kept box is above the
// threshold.
func nmsSelectRef(k *nmsKernel, a nmsArgs) []int64 {
	var dst []int64
	if a.maxOut == 0 {
		return dst
	}
	for b := range a.b {
		for c := range a.c {
			s := a.scores[(b*a.c+c)*a.n : (b*a.c+c+1)*a.n]
			var cand []int
			for i, v := range s {
				if !a.hasScore || v > a.score {
					cand = append(cand, i)
				}
			}
			rank := func(v float32) float64 {
				if v != v {
					return math.Inf(-1)
				}
				return float64(v)
			}
			slices.SortStableFunc(cand, func(i, j int) int {
				vi, vj := rank(s[i]), rank(s[j])
				switch {
				case vi > vj || vi == vj && s[i] == s[i] && s[j] != s[j]:
					return -1
				case vi < vj || vi == vj && s[i] != s[i] && s[j] == s[j]:
					return 1
				}
				return 0
			})
			var kept []int
			for _, i := range cand {
				if int64(len(kept)) >= a.maxOut {
					break
				}
				y1, x1, y2, x2 := k.corners(&a, b, i)
				ai := (y2 - y1) * (x2 - x1)
				ok := true
				for _, j := range kept {
					v1, u1, v2, u2 := k.corners(&a, b, j)
					aj := (v2 - v1) * (u2 - u1)
					if ai <= 0 || aj <= 0 {
						continue
					}
					ih := min(y2, v2) - max(y1, v1)
					iw := min(x2, u2) - max(x1, u1)
					if ih <= 0 || iw <= 0 {
						continue
					}
					inter := ih * iw
					if inter/(ai+aj-inter) > a.iou {
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
