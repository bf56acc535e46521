package stepbeam_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/rightfit"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/beamgpu/beamgpu/transforms/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	steptest.MaybeServe()
	os.Exit(ptest.MainRet(m))
}

// vec is the batch of these tests' steps.
type vec struct {
	Name string
	X    []float32
}

func (v vec) ID() string  { return v.Name }
func (v vec) Items() int  { return len(v.X) }
func (v vec) Bytes() int  { return 4 * len(v.X) }
func (v vec) Key() string { return "unit" }

var vecCodec = step.Codec[vec]{
	Encode: func(v vec) (step.Parts, error) {
		return step.Parts{Header: wire.AppendString(nil, v.Name), Arrays: [][]byte{wire.Array(v.X)}}, nil
	},
	Decode: func(p step.Parts) (vec, error) {
		d := wire.NewDecoder(p.Header, "vec")
		name := d.String()
		x, err := wire.View[float32](p.Arrays[0], len(p.Arrays[0])/4, "vec")
		return vec{Name: name, X: x}, errors.Join(d.Done(), err)
	},
}

// scale doubles every value; "bad" fails and "panic" panics.
func scale(v vec) (vec, error) {
	switch v.Name {
	case "bad":
		return vec{}, errors.New("bad vector")
	case "panic":
		panic("the step broke")
	}
	out := vec{Name: v.Name, X: make([]float32, len(v.X))}
	for i, x := range v.X {
		out.X[i] = 2 * x
	}
	return out, nil
}

// recycled counts the outputs handed back to stepScale.
var recycled atomic.Int64

var stepScale = step.Register(step.Def[vec, vec]{
	Name:    "sb_scale",
	CPU:     scale,
	GPU:     &step.GPU[vec, vec]{Op: "sb.scale", In: vecCodec, Out: vecCodec, Hints: backend.Hints{Accelerator: "type:nvidia-l4;count:1", MinRAMBytes: 1 << 30}},
	Sample:  func() vec { return vec{Name: "sample", X: []float32{1}} },
	Recycle: func(vec) { recycled.Add(1) },
})

// stepUpper has an input that does not say its size (no step.Sized).
var stepUpper = step.Register(step.Def[string, string]{
	Name:   "sb_upper",
	CPU:    func(s string) (string, error) { return strings.ToUpper(s), nil },
	Sample: func() string { return "a" },
})

func init() {
	stepbeam.Register(stepUpper)
	step.RegisterStub(stepScale, func(v vec) (vec, error) { return vec{Name: v.Name, X: make([]float32, len(v.X))}, nil })
	stepbeam.Register(stepScale)
	stepbeam.RegisterBound[offset](stepScale)
	register.Function1x1(sum)
	register.Function1x1(name)
}

// sum is the sum of a vector's values.
func sum(v vec) float64 {
	s := 0.0
	for _, x := range v.X {
		s += float64(x)
	}
	return s
}

// name is the input a failure names.
func name(f step.Failure) string { return f.Input + ": " + f.Reason }

// offset binds a number to a vector of four values: it carries V, serialized
// with the DoFn.
type offset struct{ V float32 }

func (o offset) Bind(n float64) vec {
	return vec{Name: fmt.Sprint(n), X: []float32{float32(n) + o.V, 0, 0, 0}}
}

func inputs() []vec {
	return []vec{{Name: "a", X: []float32{1, 2}}, {Name: "b", X: []float32{3}}, {Name: "bad", X: []float32{4, 4, 4}}, {Name: "panic"}}
}

// counters returns the run's beamgpu counters of the step.
func counters(t *testing.T, p *beam.Pipeline) map[string]int64 {
	t.Helper()
	res, err := ptest.RunWithMetrics(p)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, c := range res.Metrics().AllMetrics().Counters() {
		if c.Namespace() == stepbeam.Namespace {
			out[c.Name()] += c.Result()
		}
	}
	for _, d := range res.Metrics().AllMetrics().Distributions() {
		if d.Namespace() == stepbeam.Namespace {
			out[d.Name()+".count"] += d.Result().Count
		}
	}
	return out
}

// The generic DoFn runs the chosen implementation on every element, sends
// a failure or a panic to the dead-letter output naming the input, and
// feeds the step's metrics.
func TestApplyRunsTheChosenImplementation(t *testing.T) {
	for _, c := range []struct {
		kind backend.Kind
		sums []float64
	}{
		{backend.CPU, []float64{6, 6}},
		{backend.Stub, []float64{0, 0, 0, 0}}, // the stand-in fails nothing
	} {
		t.Run(string(c.kind), func(t *testing.T) {
			sel := backend.MustNew(backend.Config{Default: c.kind, Steps: step.Backends(stepScale)})
			p, s := beam.NewPipelineWithRoot()
			out, failed := stepbeam.Apply(s, stepScale, beam.CreateList(s, inputs()), step.Using(sel))
			passert.EqualsList(s, beam.ParDo(s, sum, out), c.sums)
			var wantFailed []string
			if c.kind == backend.CPU {
				wantFailed = []string{"bad: bad vector", "panic: panic: the step broke"}
			}
			passert.EqualsList(s, beam.ParDo(s, name, failed), wantFailed)
			m := counters(t, p)
			assert.Equal(t, int64(4), m["sb_scale.batches"])
			assert.Equal(t, int64(6), m["sb_scale.items"])
			assert.Equal(t, int64(24), m["sb_scale.bytes"])
			assert.Equal(t, int64(len(wantFailed)), m["sb_scale.failures"])
			assert.Equal(t, int64(4), m["sb_scale.kernel_ns.count"])
			assert.Equal(t, c.kind, sel.Report().Decisions[0].Impl, "the explain report")
		})
	}
}

// An input that is not step.Sized counts as one item of unknown bytes, so
// that the job summary counts the step's elements (it printed 0 items).
func TestUnsizedInputsCountOneItemEach(t *testing.T) {
	sel := backend.MustNew(backend.Config{Default: backend.CPU})
	p, s := beam.NewPipelineWithRoot()
	out, _ := stepbeam.Apply(s, stepUpper, beam.Create(s, "a", "bb", "ccc"), step.Using(sel))
	passert.EqualsList(s, out, []string{"A", "BB", "CCC"})
	m := counters(t, p)
	assert.Equal(t, int64(3), m["sb_upper.batches"])
	assert.Equal(t, int64(3), m["sb_upper.items"])
	assert.Zero(t, m["sb_upper.bytes"], "no size: no bytes")
}

// A Binder turns each element into the step's input, with parameters that
// travel with the DoFn.
func TestApplyBound(t *testing.T) {
	sel := backend.MustNew(backend.Config{Default: backend.CPU})
	p, s := beam.NewPipelineWithRoot()
	out, _ := stepbeam.ApplyBound(s, stepScale, beam.Create(s, 1.0, 2.0), offset{V: 10}, step.Using(sel))
	passert.EqualsList(s, beam.ParDo(s, sum, out), []float64{22, 24})
	ptest.RunAndValidate(t, p)
}

// Under --backend=auto a batch whose GPU cannot be had (here: no executor
// at run time) runs on the CPU and is counted; under --backend=gpu it fails.
func TestFallsBackToTheCPU(t *testing.T) {
	step.UseExecutor(filepath.Join(t.TempDir(), "gone"))
	defer steptest.UseExecutor()
	for _, c := range []struct {
		kind                backend.Kind
		fallbacks, failures int64
	}{
		{backend.Auto, 2, 0},
		{backend.GPU, 0, 2},
	} {
		t.Run(string(c.kind), func(t *testing.T) {
			sel := backend.MustNew(backend.Config{Default: c.kind, Executor: gpuHere{}})
			p, s := beam.NewPipelineWithRoot()
			out, failed := stepbeam.Apply(s, stepScale, beam.CreateList(s, inputs()[:2]), step.Using(sel))
			if c.kind == backend.Auto {
				passert.EqualsList(s, beam.ParDo(s, sum, out), []float64{6, 6})
			} else {
				passert.Count(s, failed, "failed", 2)
			}
			m := counters(t, p)
			assert.Equal(t, c.fallbacks, m["sb_scale.gpu_fallbacks"])
			assert.Equal(t, c.failures, m["sb_scale.failures"])
		})
	}
}

// gpuHere says a GPU executor is available (at construction).
type gpuHere struct{}

func (gpuHere) Available() (bool, string) { return true, "" }

// Outputs go back to the step (Def.Recycle) only where the pipeline says
// their consumers keep none (step.RecycleOutputs), and only those the CPU
// made.
func TestRecycling(t *testing.T) {
	for _, c := range []struct {
		name string
		kind backend.Kind
		opts []step.Option
		want int64
	}{
		{"recycled", backend.CPU, []step.Option{step.RecycleOutputs()}, 2},
		{"not asked", backend.CPU, nil, 0},
		{"stub outputs are not the step's", backend.Stub, []step.Option{step.RecycleOutputs()}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			recycled.Store(0)
			sel := backend.MustNew(backend.Config{Default: c.kind})
			p, s := beam.NewPipelineWithRoot()
			out, _ := stepbeam.Apply(s, stepScale, beam.CreateList(s, inputs()[:2]), append(c.opts, step.Using(sel))...)
			beam.ParDo(s, sum, out)
			m := counters(t, p)
			assert.Equal(t, c.want, m["sb_scale.recycled"])
			assert.Equal(t, c.want, recycled.Load())
		})
	}
}

// On the GPU the step's transforms carry its resource hints, for right
// fitting; elsewhere none.
func TestHints(t *testing.T) {
	for _, c := range []struct {
		kind   backend.Kind
		hinted []string
	}{
		{backend.GPU, []string{"sb_scale"}},
		{backend.CPU, nil},
	} {
		sel := backend.MustNew(backend.Config{Default: c.kind, Executor: gpuHere{}})
		p, s := beam.NewPipelineWithRoot()
		stepbeam.Apply(s, stepScale, beam.CreateList(s, inputs()), step.Using(sel))
		edges, _, err := p.Build()
		require.NoError(t, err)
		model, err := graphx.Marshal(edges, &graphx.Options{Environment: nil})
		require.NoError(t, err)
		assert.Equal(t, c.hinted, rightfit.Hinted(model), "%s", c.kind)
	}
	hints := stepbeam.Hints(stepScale.Backend().Hints)
	var urns []string
	for _, h := range hints {
		urns = append(urns, h.URN())
	}
	sort.Strings(urns)
	assert.Equal(t, []string{"beam:resources:accelerator:v1", "beam:resources:min_ram_bytes:v1"}, urns)
}

// An Exec checks at Setup that the step is the one its DoFn was built for.
func TestExecSetup(t *testing.T) {
	e := stepbeam.NewExec(stepScale, step.Using(backend.MustNew(backend.Config{Default: backend.CPU})))
	require.NoError(t, e.Setup())
	var failures []step.Failure
	out, ok := e.Run(context.Background(), vec{Name: "v", X: []float32{1}}, func(f step.Failure) { failures = append(failures, f) })
	assert.True(t, ok)
	assert.Equal(t, []float32{2}, out.X)
	_, ok = e.Run(context.Background(), vec{Name: "bad"}, func(f step.Failure) { failures = append(failures, f) })
	assert.False(t, ok)
	require.Len(t, failures, 1)
	assert.Equal(t, step.Failure{Input: "bad", Step: "sb_scale", Reason: "bad vector", Key: "unit"}, failures[0])

	e.Step = "no_such_step"
	assert.ErrorContains(t, e.Setup(), `step "no_such_step" is not registered in this binary`)
	wrong := stepbeam.Exec[float64, float64]{Step: "sb_scale", Impl: backend.CPU}
	assert.ErrorContains(t, wrong.Setup(), `step "sb_scale" is not a step from float64 to float64`)
	assert.PanicsWithValue(t, `step "sb_scale": Exec used before Setup`, func() {
		unset := stepbeam.Exec[vec, vec]{Step: "sb_scale"}
		unset.Run(context.Background(), vec{}, func(step.Failure) {})
	})
	assert.Panics(t, func() {
		stepbeam.NewExec(stepScale, step.Using(backend.MustNew(backend.Config{Default: backend.CPU, Steps: []backend.Step{{Name: "other"}}})))
	}, "a step the pipeline did not declare")
}
