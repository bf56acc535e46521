package step

import (
	"fmt"
	"sync"

	"github.com/beamgpu/beamgpu/runtime/backend"
)

// Option configures how a step is constructed.
type Option func(*options)

type options struct {
	sel *backend.Selector
}

// Using makes the step resolve its implementation with sel (and so appear in
// sel's explain report). Without it, the process default selector is used.
func Using(sel *backend.Selector) Option { return func(o *options) { o.sel = sel } }

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

// Resolve chooses the implementation of the registered step name and returns
// the Exec its DoFn carries. It panics, as beam.ParDo does on an invalid
// DoFn, if the step is not registered or the chosen implementation cannot be
// had (a stub that was not imported); a GPU that cannot be had is refused
// earlier, by backend.New.
func Resolve(name string, opts ...Option) Exec {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.sel == nil {
		o.sel = Default()
	}
	d, ok := Lookup(name)
	if !ok {
		panic(fmt.Sprintf("step %q is not registered", name))
	}
	dec := o.sel.Resolve(d.Step)
	if _, err := Impl(name, dec.Impl); err != nil {
		panic(err.Error())
	}
	return Exec{Step: name, Impl: dec.Impl, Fallback: dec.Impl == backend.GPU && dec.Requested == backend.Auto}
}
