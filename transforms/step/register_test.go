package step_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/stretchr/testify/assert"
)

// panics returns the message of f's panic ("" if it returned).
func panics(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// A declaration missing a required part, or taking a name or op that is
// taken, panics at init with what is wrong.
func TestRegisterChecksTheDeclaration(t *testing.T) {
	cpu := func(v vec) (vec, error) { return v, nil }
	sample := func() vec { return vec{} }
	full := func() *step.GPU[vec, vec] { return &step.GPU[vec, vec]{Op: "test.valid", In: vecCodec, Out: vecCodec} }
	for _, c := range []struct {
		name string
		def  step.Def[vec, vec]
		want string // "" : registers
	}{
		{"no name", step.Def[vec, vec]{CPU: cpu, Sample: sample}, `step.Register(""): no Name`},
		{"no CPU", step.Def[vec, vec]{Name: "test_r1", Sample: sample}, "no CPU implementation"},
		{"no sample", step.Def[vec, vec]{Name: "test_r2", CPU: cpu}, "no Sample"},
		{"GPU without op", step.Def[vec, vec]{Name: "test_r3", CPU: cpu, Sample: sample,
			GPU: &step.GPU[vec, vec]{In: vecCodec, Out: vecCodec}}, "GPU: no Op name"},
		{"GPU without out codec", step.Def[vec, vec]{Name: "test_r4", CPU: cpu, Sample: sample,
			GPU: &step.GPU[vec, vec]{Op: "test.r4", In: vecCodec}}, "the In and Out codecs need Encode and Decode"},
		{"split without merge", step.Def[vec, vec]{Name: "test_r5", CPU: cpu, Sample: sample,
			GPU: &step.GPU[vec, vec]{Op: "test.r5", In: vecCodec, Out: vecCodec, Split: func(v vec) (vec, vec, bool) { return v, v, false }}},
			"Split and Merge go together"},
		{"side without decode", step.Def[vec, vec]{Name: "test_r6", CPU: cpu, Sample: sample,
			GPU: &step.GPU[vec, vec]{Op: "test.r6", In: vecCodec, Out: vecCodec, Side: &step.Side[vec]{Of: func(vec) any { return nil }}}},
			"Side needs Of, Encode, Decode and With"},
		{"name taken", step.Def[vec, vec]{Name: stepScale.Name(), CPU: cpu, Sample: sample}, `step "test_scale" registered twice`},
		{"op taken", step.Def[vec, vec]{Name: "test_r7", CPU: cpu, Sample: sample,
			GPU: &step.GPU[vec, vec]{Op: "test.scale", In: vecCodec, Out: vecCodec}}, `GPU op "test.scale" is step "test_scale"'s`},
		{"valid", step.Def[vec, vec]{Name: "test_valid", CPU: cpu, Sample: sample, GPU: full()}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg := panics(func() { step.Register(c.def) })
			if c.want == "" {
				assert.Empty(t, msg)
				_, ok := step.Lookup(c.def.Name)
				assert.True(t, ok, "registered")
				return
			}
			assert.Contains(t, msg, c.want)
			if c.def.Name != "" && c.def.Name != stepScale.Name() {
				_, ok := step.Lookup(c.def.Name)
				assert.False(t, ok, "a refused declaration is not registered")
			}
		})
	}
}

// A stub or a launch is registered once, and a launch only for a GPU op.
func TestStubsAndLaunchesRegisterOnce(t *testing.T) {
	stub := func(v vec) (vec, error) { return v, nil }
	assert.Contains(t, panics(func() { step.RegisterStub(stepScale, stub) }), `step "test_scale" has a stub already`)
	launch := func(gpu.Call, vec) (vec, error) { return vec{}, nil }
	assert.Contains(t, panics(func() { step.RegisterLaunch(stepCPUOnly, launch) }), `step "test_cpu_only" has no GPU op`)

	s := step.Register(step.Def[vec, vec]{Name: "test_launched", CPU: scale, Sample: stepScale.Def().Sample,
		GPU: &step.GPU[vec, vec]{Op: "test.launched", In: vecCodec, Out: vecCodec}})
	assert.False(t, s.HasLaunch())
	assert.Nil(t, s.LaunchOp(nil), "no launch: no op on an engine")
	step.RegisterLaunch(s, launch)
	assert.True(t, s.HasLaunch())
	assert.Contains(t, panics(func() { step.RegisterLaunch(s, launch) }), "has a launch already")
}

// The registry: Lookup by name, All sorted, Backends describing steps to
// the selector.
func TestRegistry(t *testing.T) {
	a, ok := step.Lookup("test_scale")
	assert.True(t, ok)
	assert.Equal(t, stepScale, a)
	_, ok = step.Lookup("no_such_step")
	assert.False(t, ok)
	var names []string
	for _, s := range step.All() {
		names = append(names, s.Name())
	}
	assert.IsNonDecreasing(t, names)
	assert.Contains(t, strings.Join(names, ","), "test_cpu_only,")
	b := step.Backends(stepScale, stepCPUOnly)
	assert.Equal(t, "test.scale", b[0].GPUOp)
	assert.Empty(t, b[1].GPUOp)
}
