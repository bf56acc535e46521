package inference

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// KindMLP is the registered kind of MLPHandler.
const KindMLP = "mlp"

func init() {
	Register(KindMLP, func(config []byte) (ModelHandler, error) {
		var h MLPHandler
		if err := json.Unmarshal(config, &h); err != nil {
			return nil, fmt.Errorf("inference: mlp handler config: %w", err)
		}
		return h, nil
	})
}

// MLPHandler loads a model file written by tensor.SaveMLP (the trainer's
// output) and runs it with the "mlp" step.
type MLPHandler struct {
	// Path is the model file, readable by every worker.
	Path string
	// Dims, when set, is the shape the model must have (e.g. 784, 256, 128, 10).
	Dims []int
}

// Kind implements ModelHandler.
func (h MLPHandler) Kind() string { return KindMLP }

// Config implements ModelHandler.
func (h MLPHandler) Config() ([]byte, error) { return json.Marshal(h) }

// Key implements ModelHandler.
func (h MLPHandler) Key() string { return "mlp:" + h.Path }

// Step implements ModelHandler.
func (h MLPHandler) Step() step.Any { return tensor.StepMLP }

// Load implements ModelHandler.
func (h MLPHandler) Load(impl backend.Kind) (Model, error) {
	m, err := tensor.LoadMLP(h.Path)
	if err != nil {
		return nil, err
	}
	if len(h.Dims) > 0 {
		if err := m.CheckShape(h.Dims...); err != nil {
			return nil, err
		}
	}
	run, err := tensor.StepMLP.ImplContext(impl)
	if err != nil {
		return nil, err
	}
	return mlpModel{m: m, run: run}, nil
}

type mlpModel struct {
	m   *tensor.MLP
	run func(context.Context, tensor.MLPInput) (tensor.Predictions, error)
}

func (m mlpModel) Predict(ctx context.Context, b tensor.Batch) (tensor.Predictions, error) {
	return m.run(ctx, tensor.MLPInput{Batch: b, Model: m.m})
}

func (m mlpModel) SizeBytes() int64 {
	var n int64
	for _, l := range m.m.Layers {
		n += 4 * int64(len(l.W)+len(l.B))
	}
	return n
}
