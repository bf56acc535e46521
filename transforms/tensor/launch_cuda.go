//go:build cuda

package tensor

// The CUDA launches of the tensor steps: the kernels of kernels.cu and
// cuBLAS products on one batch, in the CUDA executor. Each checks the shapes
// its kernels take and, where the batch is one they do not, runs the CPU
// function (its error, or its result). Weights and the
// kNN reference set are side data: uploaded once per value and kept on the
// device (gpu.Call.Resident) within the executor's memory budget.

import (
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/step"
)

func init() {
	step.RegisterLaunch(StepStandardize, launchStandardize)
	step.RegisterLaunch(StepDense, launchDense)
	step.RegisterLaunch(StepSoftmax, launchSoftmax)
	step.RegisterLaunch(StepArgmax, launchArgmax)
	step.RegisterLaunch(StepTopK, launchTopK)
	step.RegisterLaunch(StepKNN, launchKNN)
	step.RegisterLaunch(StepMLP, launchMLP)
}

var (
	kernelStdUnit   = Module.Kernel("standardize_unit")
	kernelStdZScore = Module.Kernel("standardize_zscore")
	kernelBiasReLU  = Module.Kernel("bias_relu")
	kernelSoftmax   = Module.Kernel("softmax_rows")
	kernelArgmax    = Module.Kernel("argmax_rows")
	kernelSqNorms   = Module.Kernel("row_sqnorms")
	kernelKNN       = Module.Kernel("knn_finish")
	kernelNonFinite = Module.Kernel("any_nonfinite")
)

// KNNMaxK is the largest k the kNN kernel supports (its per-thread lists);
// larger k runs on the CPU.
const KNNMaxK = 32

// knnDotsBytes bounds the dot-product block of a kNN launch: the queries go
// in chunks whose products with the reference set fit it.
var knnDotsBytes int64 = 256 << 20

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// finiteCheck is checkFinite on the device: the launches that must refuse a
// batch holding NaN or infinity check the copy they uploaded (a pass at the
// device's memory speed) instead of the host's (a pass over the batch on one
// core, which took longer than the rest of an MLP call). Enqueue it right
// after the upload; end the launch with result once its work is enqueued.
type finiteCheck struct {
	flag []uint32 // host copy of the device flag
	dev  gpu.Ptr
}

// checkFiniteOnDevice enqueues the check of the n values at x.
func checkFiniteOnDevice(c gpu.Call, x gpu.Ptr, n int) (*finiteCheck, error) {
	f := &finiteCheck{flag: []uint32{0}}
	var err error
	if f.dev, err = gpu.Upload(c, f.flag); err != nil {
		return nil, err
	}
	return f, c.Launch(kernelNonFinite, gpu.Grid1D(c.Device(), int64(n)), gpu.BlockThreads, x, int64(n), f.dev)
}

// result waits for the call's stream and, if every value was finite,
// returns what out makes (the launch's result, its outputs now in place);
// otherwise the CPU function cpu's result for in: its error, naming the
// first bad value.
func result[In, Out any](f *finiteCheck, c gpu.Call, out func() Out, cpu func(In) (Out, error), in In) (Out, error) {
	if err := gpu.Download(c, f.flag, f.dev); err != nil {
		var zero Out
		return zero, err
	}
	if err := c.Sync(); err != nil {
		var zero Out
		return zero, err
	}
	if f.flag[0] != 0 {
		return cpu(in)
	}
	return out(), nil
}

// outBatch is b's rows with cols columns of host output memory.
func outBatch(c gpu.Call, b Batch, cols int) (Batch, error) {
	x, err := gpu.Output[float32](c, b.Rows*cols)
	return Batch{Source: b.Source, Offset: b.Offset, Rows: b.Rows, Cols: cols, X: x, Labels: b.Labels}, err
}

func launchStandardize(c gpu.Call, in StandardizeInput) (Batch, error) {
	b, s := in.Batch, in.Scaler
	zscore := s.Mode == ScaleZScore && len(s.Mean) == b.Cols && len(s.Std) == b.Cols
	if b.checkShape() != nil || b.Rows*b.Cols == 0 || s.Mode != ScaleUnit && !zscore {
		return StandardizeBatch(in)
	}
	n := int64(len(b.X))
	x, err := gpu.Upload(c, b.X)
	if err != nil {
		return Batch{}, err
	}
	y, err := c.Alloc(4 * n)
	if err != nil {
		return Batch{}, err
	}
	out, err := outBatch(c, b, b.Cols)
	if err != nil {
		return Batch{}, err
	}
	if zscore {
		mean, err := gpu.Upload(c, s.Mean)
		if err != nil {
			return Batch{}, err
		}
		std, err := gpu.Upload(c, s.Std)
		if err != nil {
			return Batch{}, err
		}
		err = c.Launch(kernelStdZScore, gpu.Grid1D(c.Device(), n), gpu.BlockThreads, x, y, int64(b.Rows), int64(b.Cols), mean, std)
		if err != nil {
			return Batch{}, err
		}
	} else if err := c.Launch(kernelStdUnit, gpu.Grid1D(c.Device(), n), gpu.BlockThreads, x, y, n); err != nil {
		return Batch{}, err
	}
	return out, gpu.Download(c, out.X, y)
}

// residentLayer is a layer's weights and biases on the device, uploaded once
// per layer (its weights' identity).
func residentLayer(c gpu.Call, l Dense) (w, bias gpu.Ptr, err error) {
	wb := 4 * int64(len(l.W))
	base, err := c.Resident(&l.W[0], wb+4*int64(len(l.B)), func(c gpu.Call, p gpu.Ptr) error {
		if err := c.Copy(p, gpu.Bytes(l.W)); err != nil {
			return err
		}
		return c.Copy(p.Offset(wb), gpu.Bytes(l.B))
	})
	return base, base.Offset(wb), err
}

// dense enqueues y = max(x W + b, 0 if relu) for rows rows on the device.
func dense(c gpu.Call, l Dense, x gpu.Ptr, rows int) (gpu.Ptr, error) {
	w, bias, err := residentLayer(c, l)
	if err != nil {
		return 0, err
	}
	n := int64(rows) * int64(l.Out)
	y, err := c.Alloc(4 * n)
	if err != nil {
		return 0, err
	}
	if err := c.Gemm(false, false, rows, l.Out, l.In, x, l.In, w, l.Out, y, l.Out); err != nil {
		return 0, err
	}
	return y, c.Launch(kernelBiasReLU, gpu.Grid1D(c.Device(), n), gpu.BlockThreads, y, bias, int64(rows), int64(l.Out), boolInt(l.ReLU))
}

func launchDense(c gpu.Call, in DenseInput) (Batch, error) {
	b, l := in.Batch, in.Layer
	if b.checkShape() != nil || l.check() != nil || b.Cols != l.In || b.Rows == 0 {
		return DenseBatch(in) // the CPU function's error, or an empty batch
	}
	x, err := gpu.Upload(c, b.X)
	if err != nil {
		return Batch{}, err
	}
	y, err := dense(c, l, x, b.Rows)
	if err != nil {
		return Batch{}, err
	}
	out, err := outBatch(c, b, l.Out)
	if err != nil {
		return Batch{}, err
	}
	return out, gpu.Download(c, out.X, y)
}

// softmaxRows enqueues the row-wise softmax of x (rows x cols) on the device.
func softmaxRows(c gpu.Call, x gpu.Ptr, rows, cols int) (gpu.Ptr, error) {
	y, err := c.Alloc(4 * int64(rows) * int64(cols))
	if err != nil {
		return 0, err
	}
	return y, c.Launch(kernelSoftmax, gpu.GridRows(int64(rows)), gpu.BlockThreads, x, y, int64(rows), int64(cols))
}

// argmaxRows enqueues the index of each row's largest value on the device.
func argmaxRows(c gpu.Call, x gpu.Ptr, rows, cols int) (gpu.Ptr, error) {
	idx, err := c.Alloc(4 * int64(rows))
	if err != nil {
		return 0, err
	}
	return idx, c.Launch(kernelArgmax, gpu.GridRows(int64(rows)), gpu.BlockThreads, x, idx, int64(rows), int64(cols))
}

func launchSoftmax(c gpu.Call, b Batch) (Batch, error) {
	if b.checkShape() != nil || b.Cols == 0 || b.Rows == 0 {
		return Softmax(b)
	}
	x, err := gpu.Upload(c, b.X)
	if err != nil {
		return Batch{}, err
	}
	check, err := checkFiniteOnDevice(c, x, len(b.X))
	if err != nil {
		return Batch{}, err
	}
	y, err := softmaxRows(c, x, b.Rows, b.Cols)
	if err != nil {
		return Batch{}, err
	}
	out, err := outBatch(c, b, b.Cols)
	if err != nil {
		return Batch{}, err
	}
	if err := gpu.Download(c, out.X, y); err != nil {
		return Batch{}, err
	}
	return result(check, c, func() Batch { return out }, Softmax, b)
}

func launchArgmax(c gpu.Call, b Batch) (Predictions, error) {
	if b.checkShape() != nil || b.Rows == 0 || b.Cols == 0 {
		return ArgmaxBatch(b)
	}
	x, err := gpu.Upload(c, b.X)
	if err != nil {
		return Predictions{}, err
	}
	idx, err := argmaxRows(c, x, b.Rows, b.Cols)
	if err != nil {
		return Predictions{}, err
	}
	pred, err := gpu.Output[int32](c, b.Rows)
	if err != nil {
		return Predictions{}, err
	}
	// The scores are the input rows, as the CPU's Argmax returns them.
	return Predictions{Source: b.Source, Offset: b.Offset, Labels: b.Labels, Predicted: pred, Scores: b.X, Classes: b.Cols},
		gpu.Download(c, pred, idx)
}

// launchTopK ranks a handful of classes per row: not worth a kernel, the
// executor's CPU does it (the selftest says so by passing as the CPU).
func launchTopK(_ gpu.Call, in TopKInput) (Ranked, error) { return TopKBatch(in) }

func launchMLP(c gpu.Call, in MLPInput) (Predictions, error) {
	b, m := in.Batch, in.Model
	if m == nil || b.checkShape() != nil || b.checkLabels() != nil || b.Rows == 0 || m.Validate() != nil || b.Cols != m.Layers[0].In {
		return MLPBatch(in) // the CPU function's error, or an empty batch
	}
	x, err := gpu.Upload(c, b.X)
	if err != nil {
		return Predictions{}, err
	}
	check, err := checkFiniteOnDevice(c, x, len(b.X))
	if err != nil {
		return Predictions{}, err
	}
	for _, l := range m.Layers {
		if x, err = dense(c, l, x, b.Rows); err != nil {
			return Predictions{}, err
		}
	}
	classes := m.Layers[len(m.Layers)-1].Out
	probs, err := softmaxRows(c, x, b.Rows, classes)
	if err != nil {
		return Predictions{}, err
	}
	idx, err := argmaxRows(c, probs, b.Rows, classes)
	if err != nil {
		return Predictions{}, err
	}
	scores, err := gpu.Output[float32](c, b.Rows*classes)
	if err != nil {
		return Predictions{}, err
	}
	pred, err := gpu.Output[int32](c, b.Rows)
	if err != nil {
		return Predictions{}, err
	}
	if err := gpu.Download(c, scores, probs); err != nil {
		return Predictions{}, err
	}
	if err := gpu.Download(c, pred, idx); err != nil {
		return Predictions{}, err
	}
	return result(check, c, func() Predictions {
		return Predictions{Source: b.Source, Offset: b.Offset, Labels: b.Labels, Predicted: pred, Scores: scores, Classes: classes}
	}, MLPBatch, in)
}

// residentReference is the reference set on the device, rows then their
// squared norms (kernel row_sqnorms, in double as the CPU), uploaded once per
// reference set.
func residentReference(c gpu.Call, r *Reference) (x, norms gpu.Ptr, err error) {
	xb := (4*int64(len(r.X)) + 255) &^ 255
	base, err := c.Resident(r, xb+4*int64(r.Rows), func(c gpu.Call, p gpu.Ptr) error {
		if err := c.Copy(p, gpu.Bytes(r.X)); err != nil {
			return err
		}
		return c.Launch(kernelSqNorms, gpu.GridRows(int64(r.Rows)), gpu.BlockThreads, p, p.Offset(xb), int64(r.Rows), int64(r.Cols))
	})
	return base, base.Offset(xb), err
}

// launchKNN finds each query's k nearest reference rows on the device, per
// chunk of queries (as many as keep the chunk's dot products within
// knnDotsBytes): the queries' squared norms, their dot products with every
// reference row (one product), then knn_finish: distances qn + rn - 2 dot
// clamped at 0 and the selection. The vote is the CPU's (Vote). The dot
// products are summed in another order than the CPU's, so two neighbours at
// almost equal distances may come in the other order (KNNNearTie).
func launchKNN(c gpu.Call, in KNNInput) (Predictions, error) {
	q, r, k := in.Query, in.Ref, in.K
	if r == nil || q.checkShape() != nil || q.checkLabels() != nil || q.Cols != r.Cols || q.Rows == 0 ||
		k < 1 || k > KNNMaxK || k > r.Rows || (in.Weights != WeightUniform && in.Weights != WeightDistance) {
		return KNNBatch(in) // the CPU function's error or result
	}
	rx, rn, err := residentReference(c, r)
	if err != nil {
		return Predictions{}, err
	}
	nq, nref, cols := q.Rows, r.Rows, r.Cols
	idx := make([]int32, nq*k)
	dist := make([]float32, nq*k)
	x, err := gpu.Upload(c, q.X)
	if err != nil {
		return Predictions{}, err
	}
	check, err := checkFiniteOnDevice(c, x, len(q.X))
	if err != nil {
		return Predictions{}, err
	}
	chunk := int(max(1, min(int64(nq), knnDotsBytes/(4*int64(nref)))))
	dots, err := c.Alloc(4 * int64(chunk) * int64(nref))
	if err != nil {
		return Predictions{}, err
	}
	qn, err := c.Alloc(4 * int64(chunk))
	if err != nil {
		return Predictions{}, err
	}
	dIdx, err := c.Alloc(4 * int64(nq*k))
	if err != nil {
		return Predictions{}, err
	}
	dDist, err := c.Alloc(4 * int64(nq*k))
	if err != nil {
		return Predictions{}, err
	}
	for q0 := 0; q0 < nq; q0 += chunk {
		m := min(chunk, nq-q0)
		xq := x.Offset(4 * int64(q0*cols))
		if err := c.Launch(kernelSqNorms, gpu.GridRows(int64(m)), gpu.BlockThreads, xq, qn, int64(m), int64(cols)); err != nil {
			return Predictions{}, err
		}
		// dots (m x nref) = Q R^T, row-major.
		if err := c.Gemm(false, true, m, nref, cols, xq, cols, rx, cols, dots, nref); err != nil {
			return Predictions{}, err
		}
		err := c.Launch(kernelKNN, m, gpu.BlockThreads, dots, qn, rn, int64(m), int64(nref), int64(k),
			dIdx.Offset(4*int64(q0*k)), dDist.Offset(4*int64(q0*k)))
		if err != nil {
			return Predictions{}, err
		}
	}
	if err := gpu.Download(c, idx, dIdx); err != nil {
		return Predictions{}, err
	}
	if err := gpu.Download(c, dist, dDist); err != nil {
		return Predictions{}, err
	}
	// result waits for the stream: idx and dist are in place for the vote.
	return result(check, c, func() Predictions { return Vote(q, r, idx, dist, k, in.Weights) }, KNNBatch, in)
}
