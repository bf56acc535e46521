package onnx

import (
	"context"
	"fmt"
	"os"

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
	in := Input{Model: m, Inputs: RandomInputs(m, rows, 1)}
	w := step.Work{Name: fmt.Sprintf("%s, batch %d", m.Name, rows)}
	if p, err := m.Plan(in.Inputs); err == nil {
		w.FLOPs = p.ProductFLOPs()
	}
	return in, w
}

// ProductFLOPs is the floating-point work of the plan's matrix products
// (Conv, Gemm, MatMul): 2 per multiply-add, the compute floor of a run at
// the device's product rate.
func (p *Plan) ProductFLOPs() float64 {
	var f float64
	for _, s := range p.steps {
		shape := func(i int) []int {
			if i >= len(s.in) || s.in[i] < 0 {
				return nil
			}
			return p.vals[s.in[i]].meta.Shape
		}
		var out []int
		if len(s.out) > 0 && s.out[0] >= 0 {
			out = p.vals[s.out[0]].meta.Shape
		}
		switch k := s.n.kernel.(type) {
		case *conv:
			w := shape(1)
			if len(w) >= 2 && len(out) >= 2 {
				f += 2 * float64(numel(out)) * float64(numel(w[1:])) // each output: C/group x kernel products
			}
		case *matMul:
			if ms, err := matMulShape(shape(0), shape(1)); err == nil {
				f += 2 * float64(numel(ms.batch)) * float64(ms.m) * float64(ms.n) * float64(ms.k)
			}
		case *gemmOp:
			if m, kk, n, err := k.shape(shape(0), shape(1), nil, false); err == nil {
				f += 2 * float64(m) * float64(n) * float64(kk)
			}
		}
	}
	return f
}
