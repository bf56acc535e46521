package tensor

import (
	"fmt"
	"math"
	"sort"
)

// KNNTieEpsilon is how close, relative to the squared norms involved, two
// squared distances must be for a kNN implementation to be allowed to order
// them differently.
//
// Why: every implementation computes the squared distance |q - r|^2 as
// |q|^2 + |r|^2 - 2 q.r in float32, with the dot product summed by a matrix
// product, and a GPU's product sums in another order than the CPU's. The
// rounding error of such a sum is a few float32 ulps of the terms it adds,
// that is about 1e-7 * sqrt(cols) * (|q|^2 + |r|^2): for Fashion-MNIST's 784
// columns about 3e-6 of the norms. 1e-5 leaves room for that and no more: a
// wrong distance (a kernel bug) is orders of magnitude larger.
const KNNTieEpsilon = 1e-5

// knnScoreTolerance bounds how far one vote share may differ between two
// implementations that agree on a row's neighbours (the shares are sums of
// the same weights, 1/distance with distances rounded differently).
const knnScoreTolerance = 1e-4

// KNNNearTie is the kNN step's rule for comparing two implementations
// (step.Tolerance.Check): on every row they must agree (the same class, the
// same vote shares within 1e-4, the same labels), except on a row whose k-th
// and (k+1)-th nearest reference rows are at squared distances within
// KNNTieEpsilon * (|q|^2 + |r|^2) of each other (computed here in float64):
// there the two may pick a different k-th neighbour, and so differ in votes
// and class. in is the step's input (a KNNInput), cpu and gpu its outputs.
func KNNNearTie(in, cpu, gpu any) error {
	x, ok := in.(KNNInput)
	c, ok2 := cpu.(Predictions)
	g, ok3 := gpu.(Predictions)
	if !ok || !ok2 || !ok3 {
		return fmt.Errorf("knn: compare %T, %T and %T: want a KNNInput and two Predictions", in, cpu, gpu)
	}
	rows := len(c.Predicted)
	if len(g.Predicted) != rows || len(c.Scores) != len(g.Scores) || c.Classes != g.Classes || c.Source != g.Source || c.Offset != g.Offset {
		return fmt.Errorf("knn: outputs of different shapes: CPU %s with %d rows and %d scores, GPU %s with %d and %d",
			c.ID(), rows, len(c.Scores), g.ID(), len(g.Predicted), len(g.Scores))
	}
	for i, l := range c.Labels {
		if g.Labels[i] != l {
			return fmt.Errorf("knn: row %d: label %d on the CPU, %d on the GPU", c.Offset+i, l, g.Labels[i])
		}
	}
	for i := range rows {
		same := c.Predicted[i] == g.Predicted[i]
		for j := i * c.Classes; same && j < (i+1)*c.Classes && c.Scores != nil; j++ {
			same = math.Abs(float64(c.Scores[j]-g.Scores[j])) <= knnScoreTolerance
		}
		if same {
			continue
		}
		dk, dk1, scale := kthDistances(x.Query.Row(i), x.Ref, x.K)
		if dk1-dk > KNNTieEpsilon*scale {
			return fmt.Errorf("knn: row %d: CPU predicts %d, GPU %d (or their votes differ), but the %d-th and %d-th nearest squared distances, %g and %g, are not a near tie (they differ by %.3g of the norms, more than %g)",
				c.Offset+i, c.Predicted[i], g.Predicted[i], x.K, x.K+1, dk, dk1, (dk1-dk)/scale, KNNTieEpsilon)
		}
	}
	return nil
}

// kthDistances returns the k-th and (k+1)-th smallest squared distances from
// q to ref's rows, in float64 (the (k+1)-th is +Inf when there are only k
// rows), and the norms they are relative to: |q|^2 plus the larger |r|^2 of
// the two rows.
func kthDistances(q []float32, ref *Reference, k int) (dk, dk1, scale float64) {
	type nd struct{ d, rn float64 }
	all := make([]nd, ref.Rows)
	qn := 0.0
	for _, v := range q {
		qn += float64(v) * float64(v)
	}
	for r := range ref.Rows {
		row := ref.X[r*ref.Cols : (r+1)*ref.Cols]
		var d, rn float64
		for j, v := range row {
			diff := float64(q[j]) - float64(v)
			d += diff * diff
			rn += float64(v) * float64(v)
		}
		all[r] = nd{d, rn}
	}
	sort.Slice(all, func(a, b int) bool { return all[a].d < all[b].d })
	kth := all[k-1]
	if k >= len(all) {
		return kth.d, math.Inf(1), qn + kth.rn
	}
	next := all[k]
	return kth.d, next.d, qn + max(kth.rn, next.rn)
}
