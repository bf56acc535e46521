package step

import (
	"sync"

	"github.com/beamgpu/beamgpu/runtime/backend"
)

// Option configures how a step is constructed in a pipeline.
type Option func(*Options)

// Options are the construction options of a step; see Using.
type Options struct {
	// Selector resolves the step's implementation; nil means Default().
	Selector *backend.Selector
	// Recycle is set by RecycleOutputs.
	Recycle bool
}

// Using makes the step resolve its implementation with sel (and so appear in
// sel's explain report). Without it, the process default selector is used.
func Using(sel *backend.Selector) Option { return func(o *Options) { o.Selector = sel } }

// RecycleOutputs says that the consumers of a step's outputs are done with
// each output when they return from it: DoFns fused with the step that
// neither keep an output past their ProcessElement nor change it, or a
// fusion break, where the runner encodes it. The step's DoFn then hands each
// output of the CPU implementation back to the step (Def.Recycle) once it is
// emitted, and the step's next outputs reuse its buffers. Beam promises no
// such thing by itself: a consumer that keeps elements (one that buffers or
// caches them) would see them overwritten. So only the pipeline that knows
// every consumer of the output may pass it, and only to that step's
// PTransform. A step without Def.Recycle ignores it.
func RecycleOutputs() Option { return func(o *Options) { o.Recycle = true } }

// ApplyOptions applies opts.
func ApplyOptions(opts ...Option) Options {
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	if o.Selector == nil {
		o.Selector = Default()
	}
	return o
}

var (
	defaultMu  sync.Mutex
	defaultSel *backend.Selector
)

// SetDefault sets the selector used by steps constructed without Using.
func SetDefault(sel *backend.Selector) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	defaultSel = sel
}

// Default returns the process default selector: the one given to SetDefault,
// else --backend=auto with no executor.
func Default() *backend.Selector {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultSel == nil {
		defaultSel = backend.MustNew(backend.Config{})
	}
	return defaultSel
}

// Resolve chooses the implementation of s with the selector of opts (and
// records it in the selector's explain report). It returns an error, which a
// PTransform turns into a panic at construction as beam.ParDo does, when the
// chosen implementation cannot be had (a stub whose package was not
// imported) or the step is not one the selector's pipeline declared.
func Resolve(s Any, opts ...Option) (backend.Decision, error) {
	return ResolveUse(s, s.Backend(), opts...)
}

// ResolveUse is Resolve for one use of s, described by use (s.Backend()
// with its Use and NoGPU set): a step that runs many things of its own, such
// as models, resolves each with an explain line of its own, and a use that
// cannot run on the GPU says why.
func ResolveUse(s Any, use backend.Step, opts ...Option) (backend.Decision, error) {
	o := ApplyOptions(opts...)
	d, err := o.Selector.Resolve(use)
	if err != nil {
		return d, err
	}
	if d.Impl == backend.Stub && !s.HasStub() {
		return d, errNoStub(s.Name())
	}
	return d, nil
}
