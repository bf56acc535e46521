package inference

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// KindMLP is the registered kind of MLPHandler.
const KindMLP = "mlp"

func init() {
	Register(KindMLP, func(config []byte) (Handler, error) {
		h := &MLPHandler{}
		if err := json.Unmarshal(config, h); err != nil {
			return nil, fmt.Errorf("inference: mlp handler config: %w", err)
		}
		return h, nil
	})
}

// MLPHandler runs a model file written by tensor.SaveMLP (the trainer's
// output) with the mlp step. Each example holds one input, RowInput: a
// float32 row of the model's width, of any shape; each result, the class
// probabilities (OutputProbabilities) and the class (OutputClass).
type MLPHandler struct {
	// Path is the model file: a local path or any Beam filesystem path
	// (gs://...), readable by every worker.
	Path string
	// Dims, when set, is the shape the model must have (e.g. 784, 256,
	// 128, 10).
	Dims []int
}

// MLP returns the handler of the MLP model file at path, which must have
// the layer sizes dims where they are given (input first, classes last).
// The file is read by each worker process, once (RunInference): a
// pipeline that wants it checked first loads it (tensor.LoadMLP).
func MLP(path string, dims ...int) (*MLPHandler, error) {
	if path == "" {
		return nil, fmt.Errorf("inference: MLP: no model path")
	}
	if len(dims) == 1 {
		return nil, fmt.Errorf("inference: MLP %s: shape %v: want at least 2 sizes (input, classes)", path, dims)
	}
	for _, d := range dims {
		if d < 1 {
			return nil, fmt.Errorf("inference: MLP %s: shape %v: want sizes of 1 or more", path, dims)
		}
	}
	return &MLPHandler{Path: path, Dims: dims}, nil
}

// Kind implements Handler.
func (h *MLPHandler) Kind() string { return KindMLP }

// Config implements Handler.
func (h *MLPHandler) Config() ([]byte, error) { return json.Marshal(h) }

// Key implements Handler.
func (h *MLPHandler) Key() string { return fmt.Sprintf("mlp:%s|%v", h.Path, h.Dims) }

// Step implements Handler: the mlp step.
func (h *MLPHandler) Step() step.Any { return tensor.StepMLP }

// Load implements Handler: it reads the model and checks its shape.
func (h *MLPHandler) Load(context.Context) (Model, error) {
	m, err := tensor.LoadMLP(h.Path)
	if err != nil {
		return nil, err
	}
	if len(h.Dims) > 0 {
		if err := m.CheckShape(h.Dims...); err != nil {
			return nil, err
		}
	}
	sum := sha256.New()
	if _, err := m.WriteTo(sum); err != nil {
		return nil, fmt.Errorf("%s: %w", h.Path, err)
	}
	return mlpModel{m: m, id: "sha256:" + hex.EncodeToString(sum.Sum(nil)[:16])}, nil
}

// mlpModel is a loaded MLP.
type mlpModel struct {
	m  *tensor.MLP
	id string
}

func (m mlpModel) ID() string    { return m.id }
func (m mlpModel) Batched() bool { return true }

func (m mlpModel) SizeBytes() int64 {
	var n int64
	for _, l := range m.m.Layers {
		n += 4 * int64(len(l.W)+len(l.B))
	}
	return n
}

func (m mlpModel) Check(e Example) error { return checkRow(e, m.m.Layers[0].In) }

// Predict runs the mlp step on the examples' rows, stacked.
func (m mlpModel) Predict(ctx context.Context, impl backend.Kind, ex []Example) ([][]Tensor, error) {
	run, err := tensor.StepMLP.ImplContext(impl)
	if err != nil {
		return nil, err
	}
	b, err := rowsBatch(ex, m.m.Layers[0].In)
	if err != nil {
		return nil, err
	}
	p, err := run(ctx, tensor.MLPInput{Batch: b, Model: m.m})
	if err != nil {
		return nil, err
	}
	return classOutputs(p, len(ex), OutputProbabilities)
}
