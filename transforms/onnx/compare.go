package onnx

import (
	"errors"
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// NormTolerance bounds the relative error in norm of a float output of
// the GPU implementation against the CPU's (products summed in another
// order); integer and boolean outputs must be equal.
const NormTolerance = 1e-4

// CompareOutputs compares a model's outputs on the device (gpu) with its
// outputs on the CPU: the same types and shapes, every float output within
// NormTolerance of the CPU's in relative norm, with NaN and infinities at
// the same places, and every other output equal.
func CompareOutputs(cpu, gpu []nd.Array) error {
	if len(cpu) != len(gpu) {
		return fmt.Errorf("%d outputs on the CPU, %d on the GPU", len(cpu), len(gpu))
	}
	for i := range cpu {
		if err := compareArrays(cpu[i], gpu[i]); err != nil {
			return fmt.Errorf("output %d: %w", i, err)
		}
	}
	return nil
}

func compareArrays(c, g nd.Array) error {
	if c.Type != g.Type || !nd.SameShape(c.Shape, g.Shape) {
		return fmt.Errorf("CPU %v, GPU %v", c, g)
	}
	if err := g.Validate(); err != nil {
		return fmt.Errorf("GPU: %w", err)
	}
	if !c.Type.IsFloat() {
		if string(c.Data) != string(g.Data) {
			cv, _ := nd.Int64s(c)
			gv, _ := nd.Int64s(g)
			for i := range cv {
				if cv[i] != gv[i] {
					return fmt.Errorf("element %d: CPU %d, GPU %d", i, cv[i], gv[i])
				}
			}
			return errors.New("CPU and GPU differ")
		}
		return nil
	}
	cv, gv := nd.Float64s(c), nd.Float64s(g)
	var diff, ref float64
	for i := range cv {
		a, b := cv[i], gv[i]
		switch {
		case math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0):
			if a != b && !(math.IsNaN(a) && math.IsNaN(b)) {
				return fmt.Errorf("element %d: CPU %v, GPU %v", i, a, b)
			}
		default:
			diff += (a - b) * (a - b)
			ref += a * a
		}
	}
	if diff == 0 {
		return nil
	}
	if rel := math.Sqrt(diff / ref); ref == 0 || rel > NormTolerance {
		return fmt.Errorf("relative norm error %.3g > %g", rel, NormTolerance)
	}
	return nil
}
