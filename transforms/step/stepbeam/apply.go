package stepbeam

import (
	"context"
	"reflect"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/resource"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/rightfit"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// Binder turns an element of type E into a step's input In, with parameters
// that it carries (its exported fields are serialized with the DoFn): a
// layer's weights, a scaler, k. Identity is the Binder of a step applied to
// elements of its own input type.
type Binder[E, In any] interface {
	Bind(E) In
}

// Identity is the Binder that passes an element through.
type Identity[T any] struct{}

// Bind implements Binder.
func (Identity[T]) Bind(x T) T { return x }

// runFn is the one DoFn of every step: bind, run, emit or fail.
type runFn[B Binder[E, In], E, In, Out any] struct {
	Exec[In, Out]
	Binder B
	// Recycle hands each output back to the step once emitted
	// (step.RecycleOutputs).
	Recycle bool
}

func (f *runFn[B, E, In, Out]) Setup() error { return f.Exec.Setup() }

func (f *runFn[B, E, In, Out]) ProcessElement(ctx context.Context, x E, emit func(Out), fail func(step.Failure)) {
	if out, ok, cpu := f.run(ctx, f.Binder.Bind(x), fail); ok {
		emit(out)
		if f.Recycle {
			f.recycle(ctx, out, cpu)
		}
	}
}

// Register registers the DoFn of s applied to elements of its input type
// (Apply). Call it from an init function of the package that applies s (its
// family's Beam package, or a pipeline's main package): Beam's workers find
// DoFns by their registered types.
func Register[In, Out any](s *step.Step[In, Out]) {
	RegisterBound[Identity[In]](s)
}

// RegisterBound registers the DoFn of s applied with binder type B
// (ApplyBound), as Register does.
func RegisterBound[B Binder[E, In], E, In, Out any](s *step.Step[In, Out]) {
	_ = s // the step fixes In and Out
	fn := &runFn[B, E, In, Out]{}
	// Steps of the same types share one instantiation: register it once.
	if _, done := registered.LoadOrStore(reflect.TypeOf(fn), true); done {
		return
	}
	register.DoFn4x0[context.Context, E, func(Out), func(step.Failure)](fn)
	register.Emitter1[Out]()
}

// registered holds the DoFn types registered with Beam.
var registered sync.Map

// Apply applies step s to every element of col (of s's input type) and
// returns its outputs and its failures (step.Failure, the dead-letter
// output). The implementation is chosen now, by the selector of opts; on
// the GPU the step's transforms carry its resource hints (Scope).
func Apply[In, Out any](s beam.Scope, st *step.Step[In, Out], col beam.PCollection, opts ...step.Option) (out, failed beam.PCollection) {
	return ApplyBound(s, st, col, Identity[In]{}, opts...)
}

// ApplyBound applies step st to every element of col (of type E), each
// turned into st's input by binder.
func ApplyBound[B Binder[E, In], E, In, Out any](s beam.Scope, st *step.Step[In, Out], col beam.PCollection, binder B, opts ...step.Option) (out, failed beam.PCollection) {
	s, ex := Scope(s, st, opts...)
	recycle := step.ApplyOptions(opts...).Recycle && st.Def().Recycle != nil
	return beam.ParDo2(s, &runFn[B, E, In, Out]{Exec: ex, Binder: binder, Recycle: recycle}, col)
}

// Scope resolves st (as NewExec does) and returns the scope its transforms
// go in with the Exec its DoFn carries. The scope is s.Scope(name), except
// where the step runs on the GPU: then it carries the step's resource hints
// (accelerator, min_ram; rightfit.Scope), so that the launcher can place the
// step's transforms on GPU workers (right fitting).
func Scope[In, Out any](s beam.Scope, st *step.Step[In, Out], opts ...step.Option) (beam.Scope, Exec[In, Out]) {
	s, d := ScopeOf(s, st, opts...)
	return s, Exec[In, Out]{Step: st.Name(), Impl: d.Impl, Fallback: d.Impl == backend.GPU && d.Requested == backend.Auto}
}

// ScopeOf is Scope for a step of any types: it returns the decision, for
// DoFns that run the step themselves (RunInference). It panics as NewExec
// does.
func ScopeOf(s beam.Scope, st step.Any, opts ...step.Option) (beam.Scope, backend.Decision) {
	return ScopeUse(s, st, st.Backend(), opts...)
}

// ScopeUse is ScopeOf for one use of st (step.ResolveUse): the scope is
// named by the use's label ("onnx[resnet50.onnx]").
func ScopeUse(s beam.Scope, st step.Any, use backend.Step, opts ...step.Option) (beam.Scope, backend.Decision) {
	d, err := step.ResolveUse(st, use, opts...)
	if err != nil {
		panic(err.Error())
	}
	if d.Impl != backend.GPU {
		return s.Scope(use.Label()), d
	}
	return rightfit.Scope(s, use.Label(), Hints(use.Hints)...), d
}

// Hints converts a step's hints to Beam's resource hints.
func Hints(h backend.Hints) []resource.Hint {
	var out []resource.Hint
	if h.Accelerator != "" {
		out = append(out, resource.Accelerator(h.Accelerator))
	}
	if h.MinRAMBytes > 0 {
		out = append(out, resource.MinRAMBytes(uint64(h.MinRAMBytes)))
	}
	return out
}
