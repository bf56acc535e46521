//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/beamgpu/beamgpu/transforms/tensor"
	"gonum.org/v1/gonum/blas"
	"gorgonia.org/cu"
)

// KNNMaxK is the largest k KNN supports (the per-thread lists of knn_finish); the
// caller runs larger k on the CPU.
const KNNMaxK = 32

// checkMatrix checks that x holds rows x cols values and that the sizes fit the
// kernels' and cuBLAS's int parameters.
func checkMatrix(op, name string, x []float32, rows, cols int) error {
	if rows < 0 || cols < 0 || rows > math.MaxInt32 || cols > math.MaxInt32 {
		return fmt.Errorf("cuda: %s: %s shape %dx%d out of range", op, name, rows, cols)
	}
	if int64(len(x)) != int64(rows)*int64(cols) {
		return fmt.Errorf("cuda: %s: %s shape %dx%d needs %d values, has %d", op, name, rows, cols, int64(rows)*int64(cols), len(x))
	}
	return nil
}

// Standardize returns x (rows x cols, row-major) scaled as s.Apply does: x/255 for
// tensor.ScaleUnit, (x - Mean[c]) / Std[c] for tensor.ScaleZScore.
func (d *Device) Standardize(x []float32, rows, cols int, s tensor.Scaler) ([]float32, error) {
	if err := checkMatrix("standardize", "x", x, rows, cols); err != nil {
		return nil, err
	}
	n := int64(len(x))
	y := make([]float32, n)
	switch s.Mode {
	case tensor.ScaleUnit:
		if n == 0 {
			return y, nil
		}
		err := d.run("standardize", []seg{one(asBytes(x))}, []seg{one(asBytes(y))}, 0,
			func(l *lane, in, o []cu.DevicePtr, _ cu.DevicePtr) error {
				return d.launch(l, d.k.stdUnit, d.grid1D(n), blockThreads, in[0], o[0], n)
			})
		if err != nil {
			return nil, err
		}
	case tensor.ScaleZScore:
		if len(s.Mean) != cols || len(s.Std) != cols {
			return nil, fmt.Errorf("cuda: standardize: scaler has %d means and %d stds, x has %d columns", len(s.Mean), len(s.Std), cols)
		}
		if n == 0 {
			return y, nil
		}
		err := d.run("standardize", []seg{one(asBytes(x)), one(asBytes(s.Mean)), one(asBytes(s.Std))}, []seg{one(asBytes(y))}, 0,
			func(l *lane, in, o []cu.DevicePtr, _ cu.DevicePtr) error {
				return d.launch(l, d.k.stdZScore, d.grid1D(n), blockThreads, in[0], o[0], int64(rows), int64(cols), in[1], in[2])
			})
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("cuda: standardize: unknown scaler mode %q (want %q or %q)", s.Mode, tensor.ScaleUnit, tensor.ScaleZScore)
	}
	return y, nil
}

// Dense returns x w + b (x rows x in, w in x out, both row-major; b out values), then
// max(., 0) if relu: tensor.Dense.Forward. The product is one cuBLAS Sgemm, the bias
// and ReLU one kernel after it.
func (d *Device) Dense(x []float32, rows int, w, b []float32, in, out int, relu bool) ([]float32, error) {
	if in < 1 || out < 1 {
		return nil, fmt.Errorf("cuda: dense: layer %dx%d: dimensions must be positive", in, out)
	}
	if err := checkMatrix("dense", "x", x, rows, in); err != nil {
		return nil, err
	}
	if err := checkMatrix("dense", "W", w, in, out); err != nil {
		return nil, err
	}
	if len(b) != out {
		return nil, fmt.Errorf("cuda: dense: layer %dx%d: b has %d values", in, out, len(b))
	}
	n := int64(rows) * int64(out)
	y := make([]float32, n)
	if rows == 0 {
		return y, nil
	}
	err := d.run("dense", []seg{one(asBytes(x)), one(asBytes(w)), one(asBytes(b))}, []seg{one(asBytes(y))}, 0,
		func(l *lane, dx, dy []cu.DevicePtr, _ cu.DevicePtr) error {
			// cuBLAS is column-major: a row-major r x c matrix is, to it, the
			// column-major c x r transpose. So row-major Y = X W is computed as
			// Y^T = W^T X^T: A = W (to cuBLAS the out x in matrix W^T, lda = out),
			// B = X (the in x rows X^T, ldb = in), C = Y (the out x rows Y^T,
			// ldc = out), m = out, n = rows, k = in, no transposition.
			if err := d.gemm(l, "dense", blas.NoTrans, blas.NoTrans, out, rows, in, dx[1], out, dx[0], in, dy[0], out); err != nil {
				return err
			}
			return d.launch(l, d.k.biasReLU, d.grid1D(n), blockThreads, dy[0], dx[2], int64(rows), int64(out), boolInt(relu))
		})
	if err != nil {
		return nil, err
	}
	return y, nil
}

// Softmax returns the row-wise softmax of x (rows x cols, cols >= 1): tensor.Softmax
// (the maximum subtracted, sums in double). x must be finite.
func (d *Device) Softmax(x []float32, rows, cols int) ([]float32, error) {
	if err := checkMatrix("softmax", "x", x, rows, cols); err != nil {
		return nil, err
	}
	if cols == 0 {
		return nil, fmt.Errorf("cuda: softmax of rows with no columns")
	}
	y := make([]float32, len(x))
	if rows == 0 {
		return y, nil
	}
	err := d.run("softmax", []seg{one(asBytes(x))}, []seg{one(asBytes(y))}, 0,
		func(l *lane, in, o []cu.DevicePtr, _ cu.DevicePtr) error {
			return d.launch(l, d.k.softmax, gridRows(int64(rows)), blockThreads, in[0], o[0], int64(rows), int64(cols))
		})
	if err != nil {
		return nil, err
	}
	return y, nil
}

// Argmax returns the index of the largest value of each row of x (rows x cols): ties
// go to the lowest index, NaN never wins, a row of NaNs (or of no columns) gives 0,
// as tensor.Argmax.
func (d *Device) Argmax(x []float32, rows, cols int) ([]int32, error) {
	if err := checkMatrix("argmax", "x", x, rows, cols); err != nil {
		return nil, err
	}
	out := make([]int32, rows)
	if rows == 0 || cols == 0 {
		return out, nil
	}
	err := d.run("argmax", []seg{one(asBytes(x))}, []seg{one(asBytes(out))}, 0,
		func(l *lane, in, o []cu.DevicePtr, _ cu.DevicePtr) error {
			return d.launch(l, d.k.argmax, gridRows(int64(rows)), blockThreads, in[0], o[0], int64(rows), int64(cols))
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RefHandle is a kNN reference set held in device memory (counted in the budget):
// its rows and their squared norms, uploaded once by UploadReference and searched by
// every KNN call until Free.
type RefHandle struct {
	d          *Device
	mu         sync.RWMutex // KNN calls read-lock; Free locks
	rows, cols int
	x, norms   cu.DevicePtr
	xBytes     int64
	normBytes  int64
	freed      bool
}

// Rows returns the number of reference rows.
func (r *RefHandle) Rows() int { return r.rows }

// Cols returns the number of columns.
func (r *RefHandle) Cols() int { return r.cols }

// UploadReference copies the reference set x (rows x cols, row-major; finite, as
// tensor.NewReference checks) to the device and computes its squared norms there
// (kernel row_sqnorms, in double, as the CPU). The labels stay with the caller: KNN
// returns reference indices.
func (d *Device) UploadReference(x []float32, rows, cols int) (*RefHandle, error) {
	if err := checkMatrix("upload reference", "x", x, rows, cols); err != nil {
		return nil, err
	}
	if rows == 0 || cols == 0 {
		return nil, fmt.Errorf("cuda: upload reference: empty reference set (%dx%d)", rows, cols)
	}
	l, done, err := d.acquire()
	if err != nil {
		return nil, err
	}
	defer done()
	r := &RefHandle{d: d, rows: rows, cols: cols, xBytes: 4 * int64(len(x)), normBytes: 4 * int64(rows)}
	if r.x, err = d.alloc("upload reference", r.xBytes); err != nil {
		return nil, err
	}
	if r.norms, err = d.alloc("upload reference", r.normBytes); err != nil {
		_ = d.free(r.x, r.xBytes)
		return nil, err
	}
	defer runtime.KeepAlive(x) // until the async copy from it is done
	fail := func(op string, err error) (*RefHandle, error) {
		_ = l.stream.Synchronize()
		_ = d.free(r.x, r.xBytes)
		_ = d.free(r.norms, r.normBytes)
		return nil, d.fail(op, err)
	}
	// Once per reference set, so straight from the Go slice (the driver stages
	// pageable memory itself) rather than through a lane's pinned buffer, which
	// would then stay as large as the set. On the lane's stream, so that the norms
	// kernel comes after it; x is kept alive until the stream is done.
	if err := cu.MemcpyHtoDAsync(r.x, unsafe.Pointer(&x[0]), r.xBytes, l.stream); err != nil {
		return fail("upload reference", err)
	}
	// row_sqnorms: one warp per row, 8 rows per 256-thread block.
	if err := d.launch(l, d.k.sqNorms, gridRows(int64(rows)), blockThreads, r.x, r.norms, int64(rows), int64(cols)); err != nil {
		return fail("upload reference: norms", err)
	}
	if err := l.stream.Synchronize(); err != nil {
		return fail("upload reference: norms", err)
	}
	d.refsMu.Lock()
	d.refs[r] = struct{}{}
	d.refsMu.Unlock()
	return r, nil
}

// Free releases the reference set's device memory. KNN calls in flight finish
// first; later ones fail. Close frees the sets not freed.
func (r *RefHandle) Free() error {
	// Lock order: the set, then a lane, then d.refsMu (Close: the lanes, then
	// d.refsMu, then each set; a Free or KNN waiting for a lane gives up when Close
	// starts).
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.freed {
		return nil
	}
	_, done, err := r.d.acquire()
	if errors.Is(err, ErrClosed) {
		return nil // Close frees it
	}
	if err != nil {
		return err
	}
	defer done()
	return r.freeLocked()
}

// freeLocked frees the set's memory and forgets it: r.mu is held and the context
// current.
func (r *RefHandle) freeLocked() error {
	if r.freed {
		return nil
	}
	r.freed = true
	r.d.refsMu.Lock()
	delete(r.d.refs, r)
	r.d.refsMu.Unlock()
	return errors.Join(r.d.free(r.x, r.xBytes), r.d.free(r.norms, r.normBytes))
}

// KNN returns the k nearest reference rows of each of the qRows queries q (qRows x
// ref.Cols(), row-major, finite): idx and dist are qRows x k, row-major, each row in
// increasing order of squared Euclidean distance, ties to the lower reference index,
// as tensor.Neighbors. 1 <= k <= min(KNNMaxK, ref.Rows()).
//
// Per chunk of queries (as many as keep the chunk's dot products within 256 MiB):
// the queries' squared norms (row_sqnorms), their dot products with every reference
// row (one Sgemm), then knn_finish: distances qn + rn - 2 dot clamped at 0 and the
// selection. The dot products are cuBLAS's, summed in another order than gonum's, so
// distances differ from the CPU's by float32 rounding (relative to qn + rn), and two
// neighbours at almost equal distances may come in the other order.
func (d *Device) KNN(q []float32, qRows int, ref *RefHandle, k int) (idx []int32, dist []float32, err error) {
	if ref == nil || ref.d != d {
		return nil, nil, fmt.Errorf("cuda: knn: reference set not uploaded to this device")
	}
	ref.mu.RLock()
	defer ref.mu.RUnlock()
	if ref.freed {
		return nil, nil, fmt.Errorf("cuda: knn: reference set freed")
	}
	cols, nref := ref.cols, ref.rows
	if err := checkMatrix("knn", "q", q, qRows, cols); err != nil {
		return nil, nil, err
	}
	if k < 1 || k > min(KNNMaxK, nref) {
		return nil, nil, fmt.Errorf("cuda: knn: k=%d: want 1..%d", k, min(KNNMaxK, nref))
	}
	idx = make([]int32, qRows*k)
	dist = make([]float32, qRows*k)
	chunk := int(max(1, min(int64(qRows), knnDotsBytes/(4*int64(nref)))))
	for q0 := 0; q0 < qRows; q0 += chunk {
		q1 := min(q0+chunk, qRows)
		m := q1 - q0
		dotsBytes := roundUp(4*int64(m)*int64(nref), align)
		tmp := dotsBytes + 4*int64(m) // the dot products, then the query norms
		err := d.run("knn", []seg{one(asBytes(q[q0*cols : q1*cols]))},
			[]seg{one(asBytes(idx[q0*k : q1*k])), one(asBytes(dist[q0*k : q1*k]))}, tmp,
			func(l *lane, in, o []cu.DevicePtr, t cu.DevicePtr) error {
				dots, qn := t, t+cu.DevicePtr(dotsBytes)
				// Query norms: one warp per row, 8 rows per block.
				if err := d.launch(l, d.k.sqNorms, gridRows(int64(m)), blockThreads, in[0], qn, int64(m), int64(cols)); err != nil {
					return err
				}
				// Row-major dots (m x nref) = Q R^T is, column-major, dots^T
				// (nref x m) = R Q^T: A = the reference rows (to cuBLAS the
				// cols x nref R^T, transposed: op(A) = R, lda = cols), B = the
				// queries (the cols x m Q^T, ldb = cols), C = dots (ldc = nref).
				if err := d.gemm(l, "knn", blas.Trans, blas.NoTrans, nref, m, cols, ref.x, cols, in[0], cols, dots, nref); err != nil {
					return err
				}
				// Selection: one block of 256 threads per query.
				return d.launch(l, d.k.knn, m, blockThreads, dots, qn, ref.norms, int64(m), int64(nref), int64(k), o[0], o[1])
			})
		if err != nil {
			return nil, nil, err
		}
	}
	return idx, dist, nil
}
