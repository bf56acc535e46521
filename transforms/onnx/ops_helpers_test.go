package onnx_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/require"
)

// opModel is a model of one node of op at opset: inputs in0, in1, ...
// (those marked const are initializers; "" in names leaves one out) and
// outputs named by outs ("" leaves one out).
func opModel(opset int, op string, in []nd.Array, consts []bool, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.ModelProto {
	var names []string
	var inputs []*onnxpb.ValueInfoProto
	var inits []onnxtest.Named
	for i, a := range in {
		name := fmt.Sprintf("in%d", i)
		switch {
		case a.Type == nd.Undefined:
			name = ""
		case i < len(consts) && consts[i]:
			inits = append(inits, onnxtest.Init(name, a))
		default:
			inputs = append(inputs, onnxtest.Value(name, a.Type, a.Shape...))
		}
		names = append(names, name)
	}
	var outputs []*onnxpb.ValueInfoProto
	outNames := make([]string, len(outs))
	for i, o := range outs {
		// "name:int64" declares an int64 output (any type nd.ParseDType
		// reads); the rest have in0's type.
		t := in[0].Type
		if n, typ, ok := strings.Cut(o, ":"); ok {
			var err error
			if t, err = nd.ParseDType(typ); err != nil {
				panic(err)
			}
			o = n
		}
		outNames[i] = o
		if o != "" {
			outputs = append(outputs, onnxtest.ValueNoShape(o, t))
		}
	}
	return onnxtest.Model(opset, nodes{onnxtest.Node(op, names, outNames, attrs...)}, inputs, outputs, inits...)
}

// runOp loads opModel and runs it on the inputs that are not constants.
func runOp(opset int, op string, in []nd.Array, consts []bool, outs []string, attrs ...*onnxpb.AttributeProto) ([]nd.Array, error) {
	m, err := onnxtest.Load(opModel(opset, op, in, consts, outs, attrs...))
	if err != nil {
		return nil, err
	}
	return m.Run(fed(in, consts))
}

// fed is the inputs a caller feeds: not left out, not constants.
func fed(in []nd.Array, consts []bool) []nd.Array {
	var feed []nd.Array
	for i, a := range in {
		if a.Type != nd.Undefined && (i >= len(consts) || !consts[i]) {
			feed = append(feed, a)
		}
	}
	return feed
}

// mustRun is runOp that must succeed.
func mustRun(t *testing.T, opset int, op string, in []nd.Array, consts []bool, outs []string, attrs ...*onnxpb.AttributeProto) []nd.Array {
	t.Helper()
	out, err := runOp(opset, op, in, consts, outs, attrs...)
	require.NoError(t, err)
	return out
}

// loadErr is the error of loading, planning or running opModel.
func loadErr(opset int, op string, in []nd.Array, consts []bool, outs []string, attrs ...*onnxpb.AttributeProto) error {
	_, err := runOp(opset, op, in, consts, outs, attrs...)
	return err
}

// randF32 is an array of shape with values uniform in [-1, 1).
func randF32(r *rand.Rand, shape ...int) nd.Array {
	s := make([]float32, numelOf(shape))
	for i := range s {
		s[i] = 2*r.Float32() - 1
	}
	return nd.Of(s, shape...)
}

func numelOf(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// requireClose checks got against want (float64) element by element,
// |got - want| <= tol * scale[i], scale being the sum of the magnitudes of
// the terms that made want (nil: max(1, |want|)).
func requireClose(t *testing.T, want []float64, got nd.Array, tol float64, scale []float64) {
	t.Helper()
	g := nd.Float64s(got)
	require.Len(t, g, len(want))
	for i := range want {
		s := math.Max(1, math.Abs(want[i]))
		if scale != nil {
			s = math.Max(scale[i], 1e-30)
		}
		if math.IsNaN(g[i]) || math.Abs(g[i]-want[i]) > tol*s {
			require.Failf(t, "values differ", "element %d: got %v, want %v (tolerance %g x %g)", i, g[i], want[i], tol, s)
		}
	}
}
