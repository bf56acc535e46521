package step_test

import (
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gpuHere is an executor that says a GPU is available.
type gpuHere struct{}

func (gpuHere) Available() (bool, string) { return true, "" }

// Resolve chooses each step's implementation from the selector and records
// it for the explain report; a choice that cannot be had is an error at
// construction, saying what to do.
func TestResolveChoosesTheImplementation(t *testing.T) {
	none := backend.NoExecutor{Why: "no executor here"}
	for _, c := range []struct {
		name    string
		cfg     backend.Config
		step    step.Any
		want    backend.Kind
		reason  string
		wantErr string
	}{
		{"auto without executor", backend.Config{Executor: none}, stepScale, backend.CPU, "auto: no executor here", ""},
		{"auto with a GPU", backend.Config{Executor: gpuHere{}}, stepScale, backend.GPU, "auto:", ""},
		{"auto, no GPU op", backend.Config{Executor: gpuHere{}}, stepCPUOnly, backend.CPU, "auto: step has no GPU implementation", ""},
		{"cpu", backend.Config{Default: backend.CPU}, stepScale, backend.CPU, "requested by --backend=cpu", ""},
		{"stub", backend.Config{Default: backend.Stub}, stepScale, backend.Stub, "requested by --backend=stub", ""},
		{"stub not registered", backend.Config{Default: backend.Stub}, stepCPUOnly, backend.Stub, "",
			`step "test_cpu_only" has no stub registered: import the package that registers it with step.RegisterStub`},
		{"override", backend.Config{Default: backend.CPU, Overrides: map[string]backend.Kind{"test_scale": backend.Stub}}, stepScale, backend.Stub,
			"requested by --backend_override=test_scale=stub", ""},
		{"gpu, pipeline-wide, no GPU op", backend.Config{Default: backend.GPU, Executor: gpuHere{}}, stepCPUOnly, backend.CPU, "", ""},
		{"step not declared", backend.Config{Default: backend.CPU, Steps: step.Backends(stepCPUOnly)}, stepScale, "", "",
			"test_scale"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sel, err := backend.New(c.cfg)
			require.NoError(t, err)
			d, err := step.Resolve(c.step, step.Using(sel))
			if c.wantErr != "" {
				assert.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, d.Impl)
			assert.Contains(t, d.Reason, c.reason)
			require.Len(t, sel.Report().Decisions, 1, "the explain report records it")
			assert.Equal(t, c.step.Name(), sel.Report().Decisions[0].Step)
		})
	}
}

// Without Using, steps resolve with the process default: the one given to
// SetDefault, else --backend=auto with no executor.
func TestDefaultSelector(t *testing.T) {
	d, err := step.Resolve(stepScale)
	require.NoError(t, err)
	assert.Equal(t, backend.CPU, d.Impl)
	step.SetDefault(backend.MustNew(backend.Config{Default: backend.Stub}))
	defer step.SetDefault(nil)
	d, err = step.Resolve(stepScale)
	require.NoError(t, err)
	assert.Equal(t, backend.Stub, d.Impl)
	o := step.ApplyOptions(step.RecycleOutputs())
	assert.True(t, o.Recycle)
	assert.NotNil(t, o.Selector)
}

// Impl returns the implementation of a kind, or says why there is none.
func TestImpl(t *testing.T) {
	in := vec{Name: "v", X: []float32{1, 2}}
	for _, c := range []struct {
		step    step.Any
		kind    backend.Kind
		want    any
		wantErr string
	}{
		{stepScale, backend.CPU, vec{Name: "v", X: []float32{2, 4}}, ""},
		{stepScale, backend.Stub, vec{Name: "v", X: []float32{0, 0}}, ""},
		{stepCPUOnly, backend.Stub, nil, "has no stub registered"},
		{stepCPUOnly, backend.GPU, nil, `step "test_cpu_only" has no GPU op`},
		{stepScale, "tpu", nil, `unknown implementation "tpu"`},
	} {
		got, err := c.step.Apply(c.kind, in)
		if c.wantErr != "" {
			assert.ErrorContains(t, err, c.wantErr, "%s %s", c.step.Name(), c.kind)
			continue
		}
		assert.NoError(t, err)
		assert.Equal(t, c.want, got, "%s %s", c.step.Name(), c.kind)
	}
	_, err := stepScale.Apply(backend.CPU, 3.0)
	assert.EqualError(t, err, `step "test_scale" takes a step_test.vec, not a float64`)
}
