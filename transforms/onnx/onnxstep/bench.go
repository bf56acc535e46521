package onnxstep

import (
	"context"
	"fmt"
	"os"

	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// BenchModelEnv names the environment variable that gives the onnx step's
// benchmark (beamgpu-executor bench --steps=onnx) the model it runs: an
// .onnx file, at batch 256 (full sizes) or 16 (CI sizes), random inputs.
// Unset, it runs the step's sample model. make gpu-bench-peer runs the
// exported models of transforms/onnx/testdata/models this way.
const BenchModelEnv = "BEAMGPU_BENCH_ONNX"

// benchInput is the onnx step's benchmark input (step.Def.Bench).
func benchInput(full bool) (Input, step.Work) {
	rows := 16
	if full {
		rows = 256
	}
	m, err := SampleModel()
	if path := os.Getenv(BenchModelEnv); path != "" {
		if m, err = Load(context.Background(), path); err != nil {
			fmt.Fprintf(os.Stderr, "onnx: %s=%s: %v; benchmarking the sample model\n", BenchModelEnv, path, err)
			m, err = SampleModel()
		}
	}
	if err != nil {
		panic(fmt.Sprintf("onnx: the sample model: %v", err))
	}
	in := Input{Model: m, Inputs: onnx.RandomInputs(m, rows, 1)}
	w := step.Work{Name: fmt.Sprintf("%s, batch %d", m.Name, rows)}
	if p, err := m.Plan(in.Inputs); err == nil {
		w.FLOPs = p.ProductFLOPs()
	}
	return in, w
}
