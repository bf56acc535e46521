package onnx

import (
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/stretchr/testify/require"
)

// A float32 reduction on its kept plan (reduce_fast.go) gives reduceLoop's
// bits, on random shapes and axes, every operator, the plan reused and
// remade as shapes change, and allocates nothing once its plan is kept.
func TestReduceFastEqualsLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for trial := range 150 {
		shape, _ := ewRandShapes(r)
		red := make([]bool, len(shape))
		var axes []int64
		for d := range shape {
			if r.IntN(2) == 0 {
				red[d] = true
				axes = append(axes, int64(d))
			}
		}
		if axes == nil {
			for d := range red {
				red[d] = true
			}
		}
		x := ewRandF32(r, 1, shape...)
		for _, op := range []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceLogSumExp"} {
			var attrs []*onnxpb.AttributeProto
			if axes != nil {
				attrs = append(attrs, intsAttrEW("axes", axes...))
			}
			k := ewKernel(t, op, 11, 1, attrs...).(*reduceKernel)
			got, err := ewEval(k, x)
			require.NoError(t, err)
			want := nd.Zeros(nd.Float32, got.Shape...)
			reduceTyped[float32, float64](k.op, x, red, want)
			require.Equal(t, want, got, "trial %d: %s of %v over %v", trial, op, shape, axes)
			if p := k.plans.last.Load(); p != nil && p.p.fast {
				in, out := []nd.Array{x}, []nd.Array{nd.Zeros(nd.Float32, got.Shape...)}
				require.Zero(t, testing.AllocsPerRun(3, func() { require.NoError(t, k.Run(in, out)) }), "trial %d: %s", trial, op)
			}
		}
	}
}
