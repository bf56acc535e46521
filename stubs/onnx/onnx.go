// Package onnx registers the stand-in of the onnx step (transforms/onnx).
//
// The stand-in follows package stubs' contract: for a model and its inputs
// it returns the outputs the model would return, of the types and shapes
// the model declares or the runtime infers from the inputs' shapes (the
// model is planned, not run: no operator computes), every element zero. An
// input the model refuses (a wrong type, rank or size) is the same error as
// on the CPU. A model whose outputs' shapes depend on its inputs' contents
// (a detector's NonMaxSuppression, a NonZero) has no such shapes to give:
// the stand-in fails, naming the node whose shapes come from the data. A pipeline imports it for --backend=stub:
//
//	_ "github.com/beamgpu/beamgpu/stubs/onnx"
package onnx

import (
	"errors"
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/step"
)

func init() { step.RegisterStub(onnxstep.StepRun, Run) }

// Run is the onnx step's stand-in: zero outputs of the model's output types
// and of the shapes its plan for these inputs infers.
func Run(in onnxstep.Input) (onnxstep.Output, error) {
	if in.Model == nil {
		return onnxstep.Output{}, errors.New("onnx: no model")
	}
	p, err := in.Model.Plan(in.Inputs)
	if err != nil {
		return onnxstep.Output{}, fmt.Errorf("%s: %w", in.Model.Name, err)
	}
	metas, err := p.OutputMeta()
	if err != nil {
		return onnxstep.Output{}, fmt.Errorf("%s: the stand-in cannot give this model's outputs: %w", in.Model.Name, err)
	}
	out := onnxstep.Output{Outputs: make([]nd.Array, len(metas))}
	for i, m := range metas {
		t := m.Type
		if d := in.Model.Outputs[i].Type; d == nd.Float16 || d == nd.BFloat16 {
			t = d // the runtime holds them as float32 until the end
		}
		out.Outputs[i] = nd.Zeros(t, m.Shape...)
	}
	return out, nil
}
