package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// Learning-rate schedules.
const (
	Constant = "constant" // LR throughout
	Cosine   = "cosine"   // LR * (1 + cos(pi * step / total steps)) / 2
)

// Adam's constants (Kingma & Ba's defaults).
const (
	beta1 = 0.9
	beta2 = 0.999
	eps   = 1e-8
)

// Config describes a training run.
type Config struct {
	// Dims are the layer sizes, input first, classes last: 784, 256, 128, 10.
	Dims []int
	// Epochs is the number of passes over the training set.
	Epochs int
	// BatchSize is the number of examples per step (the last step of an
	// epoch takes the remainder).
	BatchSize int
	// LR is Adam's learning rate (default 0.001).
	LR float64
	// Schedule is Constant (default) or Cosine.
	Schedule string
	// Seed fixes the initial weights and the shuffle of every epoch.
	Seed uint64
	// CheckpointDir, if set, receives checkpoints, and a run resumes from
	// the newest valid checkpoint found there.
	CheckpointDir string
	// CheckpointEvery is the number of steps between checkpoints; 0 means
	// at the end of every epoch.
	CheckpointEvery int
	// Keep is how many checkpoints are kept (default 2, so that a corrupt
	// newest one leaves a valid one to fall back to).
	Keep int
	// StopAfter, if > 0, stops the run (after writing a checkpoint) once
	// this many steps are done in total, counting the steps of the runs it
	// resumed.
	StopAfter int
	// Progress receives one line per epoch (and per LogEvery steps); nil
	// means no output.
	Progress io.Writer
	// LogEvery, if > 0, also prints a line every LogEvery steps.
	LogEvery int
}

// EpochStats is what one epoch achieved.
type EpochStats struct {
	Epoch         int     // 1-based
	Step          int     // global step at the end of the epoch
	Loss          float64 // mean training cross-entropy over the epoch
	ValidAccuracy float64 // -1 without a validation set
}

// Result describes a finished (or stopped) run.
type Result struct {
	Steps         int     // steps done in total, resumed ones included
	Epochs        int     // epochs completed
	Loss          float64 // mean training loss of the last completed epoch
	ValidAccuracy float64 // after the last completed epoch; -1 if none
	History       []EpochStats
	// ResumedFrom is the checkpoint this run started from, "" if none.
	ResumedFrom string
	// Checkpoint is the last checkpoint written, "" if none.
	Checkpoint string
	// Stopped is true when StopAfter ended the run early.
	Stopped  bool
	Duration time.Duration // of this run only
	// ExamplesPerSec is the training throughput of this run.
	ExamplesPerSec float64
}

func (c *Config) defaults() error {
	if len(c.Dims) < 2 {
		return fmt.Errorf("train: Dims needs at least an input and an output size, got %v", c.Dims)
	}
	if c.Epochs <= 0 {
		return fmt.Errorf("train: Epochs must be positive, got %d", c.Epochs)
	}
	if c.BatchSize <= 0 {
		return fmt.Errorf("train: BatchSize must be positive, got %d", c.BatchSize)
	}
	if c.LR == 0 {
		c.LR = 0.001
	}
	if c.LR < 0 || math.IsNaN(c.LR) || math.IsInf(c.LR, 0) {
		return fmt.Errorf("train: bad learning rate %v", c.LR)
	}
	switch c.Schedule {
	case "":
		c.Schedule = Constant
	case Constant, Cosine:
	default:
		return fmt.Errorf("train: unknown schedule %q (want %q or %q)", c.Schedule, Constant, Cosine)
	}
	if c.Keep <= 0 {
		c.Keep = 2
	}
	if c.CheckpointEvery < 0 || c.StopAfter < 0 || c.LogEvery < 0 {
		return errors.New("train: CheckpointEvery, StopAfter and LogEvery must not be negative")
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

// state is everything a checkpoint holds.
type state struct {
	model   *tensor.MLP
	m, v    [][]float32 // Adam moments: W of layer i at 2i, B at 2i+1
	step    int         // steps done (Adam's t)
	epoch   int         // current epoch, 0-based
	pos     int         // steps done in the current epoch
	lossSum float64     // sum of the batch losses of the current epoch
	lossN   int         // number of batches summed in lossSum
}

func (s *state) params() [][]float32 {
	p := make([][]float32, 0, 2*len(s.model.Layers))
	for i := range s.model.Layers {
		p = append(p, s.model.Layers[i].W, s.model.Layers[i].B)
	}
	return p
}

// newState initialises the weights with He normal initialisation (biases
// zero) from the seed.
func newState(cfg Config) (*state, error) {
	m, err := tensor.NewMLP(cfg.Dims...)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x696e6974)) // "init"
	for i := range m.Layers {
		l := &m.Layers[i]
		std := math.Sqrt(2 / float64(l.In))
		for j := range l.W {
			l.W[j] = float32(r.NormFloat64() * std)
		}
	}
	s := &state{model: m}
	for _, p := range s.params() {
		s.m = append(s.m, make([]float32, len(p)))
		s.v = append(s.v, make([]float32, len(p)))
	}
	return s, nil
}

// permutation is the order of the training examples in epoch e: a function
// of the seed and the epoch only, so a resumed run replays it.
func permutation(seed uint64, epoch, n int) []int {
	return rand.New(rand.NewPCG(seed, uint64(epoch)+1)).Perm(n)
}

// Run trains an MLP of cfg.Dims with Adam and softmax cross-entropy on
// trainSet (whose rows must already be scaled, and fully labelled with
// classes in [0, Dims[last])), reporting the accuracy on valid (may be
// empty) after every epoch.
//
// Training is deterministic on a given machine: the same Config and data
// give bitwise the same weights, whether the run is done at once or stopped
// and resumed from a checkpoint any number of times. (The float32 matrix
// products sum each output element in a fixed order in one goroutine; the
// other reductions are sequential.)
//
// When ctx is cancelled, Run writes a checkpoint (if CheckpointDir is set)
// and returns the model so far with ctx's error.
func Run(ctx context.Context, cfg Config, trainSet, valid tensor.Batch) (*tensor.MLP, Result, error) {
	start := time.Now()
	res := Result{ValidAccuracy: -1}
	if err := cfg.defaults(); err != nil {
		return nil, res, err
	}
	classes := cfg.Dims[len(cfg.Dims)-1]
	if err := checkData(trainSet, cfg.Dims[0], classes, true); err != nil {
		return nil, res, err
	}
	if valid.Rows > 0 {
		if err := checkData(valid, cfg.Dims[0], classes, false); err != nil {
			return nil, res, err
		}
	}
	n := trainSet.Rows
	stepsPerEpoch := (n + cfg.BatchSize - 1) / cfg.BatchSize
	totalSteps := stepsPerEpoch * cfg.Epochs

	var st *state
	if cfg.CheckpointDir != "" {
		var err error
		st, res.ResumedFrom, err = resume(cfg, n)
		if err != nil {
			return nil, res, err
		}
	}
	if st == nil {
		var err error
		if st, err = newState(cfg); err != nil {
			return nil, res, err
		}
	} else {
		fmt.Fprintf(cfg.Progress, "resumed from %s: epoch %d, step %d\n", res.ResumedFrom, st.epoch+1, st.step)
	}

	w := newWork(st.model, cfg.BatchSize)
	var perm []int
	permEpoch := -1
	examples := 0
	lastCkptStep := st.step
	save := func() error {
		if cfg.CheckpointDir == "" || st.step == lastCkptStep && res.Checkpoint != "" {
			return nil
		}
		path, err := writeCheckpoint(cfg, n, st)
		if err != nil {
			return err
		}
		res.Checkpoint, lastCkptStep = path, st.step
		return nil
	}
	finish := func() {
		res.Steps = st.step
		res.Duration = time.Since(start)
		if s := res.Duration.Seconds(); s > 0 {
			res.ExamplesPerSec = float64(examples) / s
		}
	}
	runStart := time.Now()
	for st.epoch < cfg.Epochs {
		if err := ctx.Err(); err != nil {
			serr := save()
			finish()
			return st.model, res, errors.Join(err, serr)
		}
		if cfg.StopAfter > 0 && st.step >= cfg.StopAfter {
			res.Stopped = true
			finish()
			return st.model, res, save()
		}
		if permEpoch != st.epoch {
			perm, permEpoch = permutation(cfg.Seed, st.epoch, n), st.epoch
		}
		lo := st.pos * cfg.BatchSize
		hi := min(lo+cfg.BatchSize, n)
		lr := cfg.LR
		if cfg.Schedule == Cosine {
			lr *= (1 + math.Cos(math.Pi*float64(st.step)/float64(totalSteps))) / 2
		}
		loss := w.step(trainSet, perm[lo:hi], st, lr)
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			finish()
			return st.model, res, fmt.Errorf("train: loss is %v at step %d (epoch %d): lower the learning rate", loss, st.step, st.epoch+1)
		}
		st.lossSum += loss
		st.lossN++
		st.pos++
		examples += hi - lo
		if cfg.LogEvery > 0 && st.step%cfg.LogEvery == 0 {
			fmt.Fprintf(cfg.Progress, "epoch %d/%d step %d loss %.4f examples/s %.0f\n", st.epoch+1, cfg.Epochs, st.step, st.lossSum/float64(st.lossN), float64(examples)/time.Since(runStart).Seconds())
		}
		if st.pos == stepsPerEpoch {
			es := EpochStats{Epoch: st.epoch + 1, Step: st.step, Loss: st.lossSum / float64(st.lossN), ValidAccuracy: -1}
			if valid.Rows > 0 {
				p, err := st.model.Predict(valid)
				if err != nil {
					finish()
					return st.model, res, fmt.Errorf("train: validation: %w", err)
				}
				es.ValidAccuracy, _ = p.Accuracy()
			}
			res.History = append(res.History, es)
			res.Epochs, res.Loss, res.ValidAccuracy = es.Epoch, es.Loss, es.ValidAccuracy
			fmt.Fprintf(cfg.Progress, "epoch %d/%d step %d loss %.4f examples/s %.0f valid_acc %.4f elapsed %s\n",
				es.Epoch, cfg.Epochs, es.Step, es.Loss, float64(examples)/time.Since(runStart).Seconds(), es.ValidAccuracy, time.Since(start).Round(100*time.Millisecond))
			st.epoch++
			st.pos, st.lossSum, st.lossN = 0, 0, 0
			if cfg.CheckpointEvery == 0 {
				if err := save(); err != nil {
					finish()
					return st.model, res, err
				}
			}
		}
		if cfg.CheckpointEvery > 0 && st.step%cfg.CheckpointEvery == 0 {
			if err := save(); err != nil {
				finish()
				return st.model, res, err
			}
		}
	}
	if res.Epochs == 0 {
		res.Epochs = st.epoch
	}
	err := save()
	finish()
	return st.model, res, err
}

func checkData(b tensor.Batch, cols, classes int, needLabels bool) error {
	if err := b.Validate(); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if b.Cols != cols {
		return fmt.Errorf("train: %s has %d columns, the model takes %d", b.ID(), b.Cols, cols)
	}
	if b.Labels == nil {
		if needLabels {
			return fmt.Errorf("train: %s has no labels", b.ID())
		}
		return nil
	}
	for i, l := range b.Labels {
		if l < 0 || int(l) >= classes {
			if l == -1 && !needLabels {
				continue
			}
			return fmt.Errorf("train: %s: row %d: label %d is not in [0, %d)", b.Source, b.Offset+i, l, classes)
		}
	}
	return nil
}

// work holds the buffers of one training step.
type work struct {
	x      []float32   // batch inputs, BatchSize x Dims[0]
	acts   [][]float32 // post-activation outputs of each layer
	deltas [][]float32 // gradient w.r.t. each layer's pre-activation output
	grads  [][]float32 // like state.params
	probs  []float64
}

func newWork(m *tensor.MLP, bs int) *work {
	w := &work{x: make([]float32, bs*m.Layers[0].In), probs: make([]float64, m.Layers[len(m.Layers)-1].Out)}
	for _, l := range m.Layers {
		w.acts = append(w.acts, make([]float32, bs*l.Out))
		w.deltas = append(w.deltas, make([]float32, bs*l.Out))
		w.grads = append(w.grads, make([]float32, len(l.W)), make([]float32, len(l.B)))
	}
	return w
}

// step does one Adam step on the examples rows of data and returns their
// mean cross-entropy loss.
func (w *work) step(data tensor.Batch, rows []int, st *state, lr float64) float64 {
	m := st.model
	bs, in := len(rows), data.Cols
	for i, r := range rows {
		copy(w.x[i*in:(i+1)*in], data.X[r*in:(r+1)*in])
	}
	// Forward.
	h := w.x
	for li, l := range m.Layers {
		out := w.acts[li][:bs*l.Out]
		for i := 0; i < bs; i++ {
			copy(out[i*l.Out:(i+1)*l.Out], l.B)
		}
		gemm.Sgemm(false, false, bs, l.Out, l.In, 1, h, l.In, l.W, l.Out, 1, out, l.Out) // out = h W + B
		if l.ReLU {
			gemm.ReLU(out)
		}
		h = out
	}
	// Softmax cross-entropy; delta = (p - onehot) / bs.
	last := len(m.Layers) - 1
	classes := m.Layers[last].Out
	logits, delta := w.acts[last], w.deltas[last]
	var loss float64
	for i, r := range rows {
		row := logits[i*classes : (i+1)*classes]
		mx := row[0]
		for _, v := range row[1:] {
			mx = max(mx, v)
		}
		var sum float64
		for c, v := range row {
			w.probs[c] = math.Exp(float64(v - mx))
			sum += w.probs[c]
		}
		y := int(data.Labels[r])
		loss += math.Log(sum) - float64(row[y]-mx)
		for c := range row {
			g := w.probs[c] / sum
			if c == y {
				g--
			}
			delta[i*classes+c] = float32(g / float64(bs))
		}
	}
	// Backward.
	for li := last; li >= 0; li-- {
		l := m.Layers[li]
		d := w.deltas[li][:bs*l.Out]
		prev := w.x
		if li > 0 {
			prev = w.acts[li-1]
		}
		gemm.Sgemm(true, false, l.In, l.Out, bs, 1, prev, l.In, d, l.Out, 0, w.grads[2*li], l.Out) // dW = prevᵀ d
		gb := w.grads[2*li+1]
		clear(gb)
		for i := 0; i < bs; i++ {
			for c, v := range d[i*l.Out : (i+1)*l.Out] {
				gb[c] += v
			}
		}
		if li > 0 {
			pd := w.deltas[li-1][:bs*l.In]
			gemm.Sgemm(false, true, bs, l.In, l.Out, 1, d, l.Out, l.W, l.Out, 0, pd, l.In) // d prev = d Wᵀ
			if m.Layers[li-1].ReLU {
				for i, a := range prev[:bs*l.In] {
					if a <= 0 { // no gradient where the unit was off
						pd[i] = 0
					}
				}
			}
		}
	}
	// Adam.
	st.step++
	t := float64(st.step)
	alpha := float32(lr * math.Sqrt(1-math.Pow(beta2, t)) / (1 - math.Pow(beta1, t)))
	for pi, p := range st.params() {
		g, mm, vv := w.grads[pi], st.m[pi], st.v[pi]
		for j := range p {
			mm[j] = beta1*mm[j] + (1-beta1)*g[j]
			vv[j] = beta2*vv[j] + (1-beta2)*g[j]*g[j]
			p[j] -= alpha * mm[j] / (float32(math.Sqrt(float64(vv[j]))) + eps)
		}
	}
	return loss / float64(bs)
}
