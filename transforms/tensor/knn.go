package tensor

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/gemm"
)

// kNN weighting schemes.
const (
	WeightUniform  = "uniform"
	WeightDistance = "distance"
)

// Block sizes of the distance computation: a worker computes the dot products
// of knnQueryBlock queries with knnRefBlock reference rows at a time (one
// product), then folds them into the running top-k. The product block is
// knnQueryBlock*knnRefBlock*4 bytes per worker (4 MiB), so the memory used is
// bounded whatever the sizes of the query and reference sets. They are
// variables so the benchmarks can explore them.
var (
	knnQueryBlock = 256
	knnRefBlock   = 4096
	knnWorkers    = 0 // 0: runtime.GOMAXPROCS(0)
)

// Reference is the labelled set a kNN classifier searches: Rows x Cols
// float32 row-major, with a label in [0, Classes) per row, and the squared
// norm of each row precomputed.
type Reference struct {
	X          []float32
	Rows, Cols int
	Labels     []int32
	Classes    int
	norms      []float32

	// packed is X transposed and packed for gemm, built by the first
	// Neighbors call (a GPU never needs it): every query block then
	// multiplies it without packing it again.
	packOnce sync.Once
	packed   *gemm.Packed
}

// packedX returns the reference rows packed as the k x n right operand of
// the distance products (k = Cols, n = Rows).
func (r *Reference) packedX() *gemm.Packed {
	r.packOnce.Do(func() { r.packed = gemm.Pack(true, r.Cols, r.Rows, r.X, r.Cols) })
	return r.packed
}

// NewReference prepares b (which must be valid and fully labelled with
// classes in [0, classes)) as a kNN reference set. The reference shares b.X
// and b.Labels: do not modify them afterwards.
func NewReference(b Batch, classes int) (*Reference, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	if b.Rows == 0 || b.Cols == 0 {
		return nil, fmt.Errorf("%s: empty reference set (%dx%d)", b.ID(), b.Rows, b.Cols)
	}
	if classes < 1 {
		return nil, fmt.Errorf("%s: %d classes: want at least 1", b.ID(), classes)
	}
	if b.Labels == nil {
		return nil, fmt.Errorf("%s: a reference set needs labels", b.ID())
	}
	for i, l := range b.Labels {
		if l < 0 || int(l) >= classes {
			return nil, fmt.Errorf("%s: row %d: label %d is not in [0, %d)", b.Source, b.Offset+i, l, classes)
		}
	}
	return &Reference{X: b.X, Rows: b.Rows, Cols: b.Cols, Labels: b.Labels, Classes: classes, norms: sqNorms(b)}, nil
}

// sqNorms returns the squared norm of each row, summed in float64.
func sqNorms(b Batch) []float32 {
	n := make([]float32, b.Rows)
	for i := range n {
		var s float64
		for _, v := range b.Row(i) {
			s += float64(v) * float64(v)
		}
		n[i] = float32(s)
	}
	return n
}

// KNN classifies each row of q by its k nearest rows of ref (Euclidean
// distance, brute force), weighting the votes by weights: WeightUniform (one
// vote each) or WeightDistance (1/(d+1e-12), d the Euclidean distance).
//
// The squared distance is computed as ||q||² + ||r||² - 2 q·r, with the q·r
// products done by package gemm over blocks of 256 queries x 4096 reference
// rows (so memory stays bounded and the blocks stay in cache; the reference
// rows are packed for the product once, on the first call, which keeps a
// copy of the reference set), negative results (rounding) clamped to 0. The
// queries are split across runtime.GOMAXPROCS goroutines; each keeps its own
// bounded top-k per query, and each q·r is summed the same way whatever the
// blocks and goroutines, so the result does not depend on scheduling.
//
// Ties are broken deterministically:
//   - equal distances: the lower reference index is the nearer neighbour;
//   - uniform weights, equal vote counts: the class with the smaller sum of
//     distances to its neighbours wins, then the lower class index;
//   - distance weights, equal weight sums: the lower class index wins.
//
// The Predictions' Scores are the vote shares (Rows x ref.Classes), and its
// Labels are copied from q.
func KNN(q Batch, ref *Reference, k int, weights string) (Predictions, error) {
	if weights != WeightUniform && weights != WeightDistance {
		return Predictions{}, fmt.Errorf("%s: unknown kNN weights %q (want %q or %q)", q.ID(), weights, WeightUniform, WeightDistance)
	}
	idx, dist, err := Neighbors(q, ref, k)
	if err != nil {
		return Predictions{}, err
	}
	return Vote(q, ref, idx, dist, k, weights), nil
}

// Vote classifies each query row from its k nearest reference rows (idx and
// squared distances dist, k per query, nearest first, as Neighbors returns
// them) with the voting and tie rules of KNN. A GPU computes the neighbours;
// the vote is this.
func Vote(q Batch, ref *Reference, idx []int32, dist []float32, k int, weights string) Predictions {
	p := Predictions{
		Source:    q.Source,
		Offset:    q.Offset,
		Labels:    copyLabels(q.Labels),
		Predicted: make([]int32, q.Rows),
		Scores:    make([]float32, q.Rows*ref.Classes),
		Classes:   ref.Classes,
	}
	votes := make([]float64, ref.Classes)
	sumd := make([]float64, ref.Classes)
	for i := 0; i < q.Rows; i++ {
		clear(votes)
		clear(sumd)
		var total float64
		for j := i * k; j < (i+1)*k; j++ {
			c := ref.Labels[idx[j]]
			d := math.Sqrt(float64(dist[j]))
			w := 1.0
			if weights == WeightDistance {
				w = 1 / (d + 1e-12)
			}
			votes[c] += w
			sumd[c] += d
			total += w
		}
		best := 0
		for c := 1; c < ref.Classes; c++ {
			switch {
			case votes[c] > votes[best]:
				best = c
			case votes[c] == votes[best] && weights == WeightUniform && votes[c] > 0 && sumd[c] < sumd[best]:
				best = c
			}
		}
		p.Predicted[i] = int32(best)
		for c, v := range votes {
			p.Scores[i*ref.Classes+c] = float32(v / total)
		}
	}
	return p
}

// Neighbors returns the k nearest reference rows of each query row: idx and
// dist are q.Rows x k, row-major, each row in increasing order of squared
// Euclidean distance (ties: lower reference index first). See KNN for how
// the distances are computed.
func Neighbors(q Batch, ref *Reference, k int) (idx []int32, dist []float32, err error) {
	if ref == nil || len(ref.norms) != ref.Rows || len(ref.X) != ref.Rows*ref.Cols || len(ref.Labels) != ref.Rows {
		return nil, nil, fmt.Errorf("%s: reference set not built by NewReference", q.ID())
	}
	if err := q.checkShape(); err != nil {
		return nil, nil, err
	}
	if err := checkFinite(q); err != nil {
		return nil, nil, err
	}
	if q.Cols != ref.Cols {
		return nil, nil, fmt.Errorf("%s: queries have %d columns, the reference set %d", q.ID(), q.Cols, ref.Cols)
	}
	if k < 1 || k > ref.Rows {
		return nil, nil, fmt.Errorf("%s: k=%d: want 1..%d (the reference set size)", q.ID(), k, ref.Rows)
	}
	idx = make([]int32, q.Rows*k)
	dist = make([]float32, q.Rows*k)
	if q.Rows == 0 {
		return idx, dist, nil
	}
	qn := sqNorms(q)
	workers := knnWorkers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Query blocks of at most knnQueryBlock rows, but small enough that a
	// batch of a few hundred queries (a pipeline's) still keeps every worker
	// busy; each query's distances are summed the same way whatever its block.
	qb := min(knnQueryBlock, max(16, (q.Rows+workers-1)/workers), q.Rows)
	pw := gemm.PanelWidth() // a reference block starts on a packed panel
	rb := min(max(knnRefBlock/pw*pw, pw), ref.Rows)
	packed := ref.packedX()
	blocks := (q.Rows + qb - 1) / qb
	// Each goroutine has its own product block and top-k fill counts, and
	// takes query blocks from a shared counter.
	parallel.DoWith(workers, blocks, func() func(int) {
		prod := make([]float32, qb*rb)
		fill := make([]int, qb)
		return func(blk int) {
			q0, q1 := blk*qb, min((blk+1)*qb, q.Rows)
			m := q1 - q0
			clear(fill[:m])
			for r0 := 0; r0 < ref.Rows; r0 += rb {
				r1 := min(r0+rb, ref.Rows)
				n := r1 - r0
				gemm.SgemmPacked(1, false, m, 1, q.X[q0*q.Cols:q1*q.Cols], q.Cols, packed, r0, r1, 0, prod[:m*n], n)
				for i := 0; i < m; i++ {
					qi := q0 + i
					fill[i] = selectRow(prod[i*n:(i+1)*n], qn[qi], ref.norms[r0:r1], r0,
						dist[qi*k:(qi+1)*k], idx[qi*k:(qi+1)*k], fill[i])
				}
			}
		}
	})
	return idx, dist, nil
}

// selectRow folds one row of dot products (with reference rows r0, r0+1,
// ...) into a query's top-k list dist/idx, sorted by (distance, index), of
// which the first fill entries are in use; it returns the new fill. Reference
// rows arrive in increasing index order, so a candidate only displaces an
// entry at a strictly greater distance: ties keep the lower index.
func selectRow(dots []float32, qn float32, rn []float32, r0 int, dist []float32, idx []int32, fill int) int {
	k := len(dist)
	for j, dot := range dots {
		d := qn + rn[j] - 2*dot
		if d < 0 {
			d = 0
		} else if d != d {
			d = float32(math.Inf(1))
		}
		if fill == k && !(d < dist[k-1]) {
			continue
		}
		// Insert after every entry with a distance <= d.
		pos := min(fill, k-1)
		for pos > 0 && dist[pos-1] > d {
			dist[pos], idx[pos] = dist[pos-1], idx[pos-1]
			pos--
		}
		dist[pos], idx[pos] = d, int32(r0+j)
		if fill < k {
			fill++
		}
	}
	return fill
}
