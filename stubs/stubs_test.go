package stubs_test

import (
	"testing"

	_ "github.com/beamgpu/beamgpu/stubs/onnx"
	_ "github.com/beamgpu/beamgpu/stubs/raster"
	_ "github.com/beamgpu/beamgpu/stubs/tensor"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every registered step has a stub whose output has the CPU output's type and
// shape on the step's sample input.
func TestEveryStepHonoursTheStubContract(t *testing.T) {
	steps := step.All()
	require.NotEmpty(t, steps)
	for _, s := range steps {
		t.Run(s.Name(), func(t *testing.T) { steptest.CheckStubContract(t, s) })
	}
}

// Stubs compute nothing: every number they return is zero.
func TestStubsComputeNothing(t *testing.T) {
	for _, s := range step.All() {
		out, err := steptest.Apply(s, "stub", s.SampleInput())
		require.NoError(t, err, s.Name())
		assert.NoError(t, steptest.AllZero(out), s.Name())
	}
}

func TestSameShape(t *testing.T) {
	type T struct {
		Name string
		Data [][]float32
	}
	a := T{"B4", [][]float32{{1, 2}, {3}}}
	assert.NoError(t, steptest.SameShape(a, T{"B4", [][]float32{{0, 0}, {0}}}))
	assert.EqualError(t, steptest.SameShape(a, T{"B5", [][]float32{{0, 0}, {0}}}), `out.Name: "B4" vs "B5"`)
	assert.EqualError(t, steptest.SameShape(a, T{"B4", [][]float32{{0, 0}, {0, 0}}}), "out.Data[1]: length 1 vs 2")
	assert.EqualError(t, steptest.SameShape(a, 3), "out: type stubs_test.T vs int")
}
