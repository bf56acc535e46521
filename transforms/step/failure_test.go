package step_test

import (
	"errors"
	"math"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A failure names the input, its unit of work and its size, where the input
// says them.
func TestNewFailure(t *testing.T) {
	for _, c := range []struct {
		name string
		in   any
		want step.Failure
	}{
		{"a vec", vec{Name: "v7", X: make([]float32, 3)},
			step.Failure{Input: "v7", Step: "s", Reason: "broke", Key: "unit-v7", Items: 3}},
		{"anything else", 42, step.Failure{Input: "int", Step: "s", Reason: "broke"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := step.NewFailure("s", c.in, errors.New("broke"))
			assert.Equal(t, c.want, f)
			assert.Equal(t, "s: "+c.want.Input+": broke", f.Error())
		})
	}
}

// Call turns a panic into an error: one bad batch becomes a failure, not a
// bundle retried for ever.
func TestCallRecoversAPanic(t *testing.T) {
	_, err := step.Call(scale, vec{Name: "panic"})
	assert.EqualError(t, err, "panic: the step broke")
	out, err := step.Call(scale, vec{Name: "ok", X: []float32{1}})
	require.NoError(t, err)
	assert.Equal(t, []float32{2}, out.X)
}

// Compare holds a GPU output to the CPU's within a tolerance: relative per
// value, relative in norm, integers within IntDiff, NaN where NaN, and the
// same type and shape.
func TestCompare(t *testing.T) {
	nan := math.NaN()
	type pix struct{ P []uint8 }
	for _, c := range []struct {
		name     string
		cpu, gpu any
		tol      step.Tolerance
		wantErr  string
	}{
		{"equal", []float64{1, 2}, []float64{1, 2}, step.Tolerance{}, ""},
		{"within 1e-5 by default", []float64{1}, []float64{1 + 5e-6}, step.Tolerance{}, ""},
		{"beyond 1e-5", []float64{1}, []float64{1 + 5e-5}, step.Tolerance{}, "out[0]: CPU 1, GPU 1.00005"},
		{"NaN matches NaN", []float64{nan}, []float64{nan}, step.Tolerance{}, ""},
		{"NaN against a number", []float64{nan}, []float64{0}, step.Tolerance{}, "out[0]: CPU NaN, GPU 0"},
		{"norm", []float64{1, 1000}, []float64{1.01, 1000}, step.Tolerance{Norm: 1e-4}, ""},
		{"norm beyond", []float64{1, 1}, []float64{1.1, 1}, step.Tolerance{Norm: 1e-4}, "relative"},
		{"pixels within IntDiff", pix{[]uint8{10}}, pix{[]uint8{11}}, step.Tolerance{IntDiff: 1}, ""},
		{"pixels beyond", pix{[]uint8{10}}, pix{[]uint8{12}}, step.Tolerance{IntDiff: 1}, "out.P[0]: CPU 10, GPU 12"},
		{"shape", []float64{1, 2}, []float64{1}, step.Tolerance{}, "length"},
		{"type", []float64{1}, []float32{1}, step.Tolerance{}, "type"},
		{"own rule", []int{1}, []int{2}, step.Tolerance{Check: func(in, cpu, gpu any) error { return nil }}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := step.CompareWith(nil, c.cpu, c.gpu, c.tol)
			if c.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, c.wantErr)
			}
		})
	}
}

// A codec is also a Beam coder: Marshal and Unmarshal round-trip a value
// through one buffer, and a damaged buffer is an error, not a panic.
func TestCodecMarshal(t *testing.T) {
	in := vec{Name: "v", X: []float32{1, 2, 3}}
	b, err := vecCodec.Marshal(in)
	require.NoError(t, err)
	out, err := vecCodec.Unmarshal(b)
	require.NoError(t, err)
	assert.Equal(t, in, out)
	for n := range len(b) {
		_, _ = vecCodec.Unmarshal(b[:n]) // must not panic
	}
	_, err = vecCodec.Unmarshal(b[:3])
	assert.Error(t, err)
}
