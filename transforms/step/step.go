package step

import (
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/beamgpu/beamgpu/runtime/backend"
)

// Def declares a step.
type Def struct {
	backend.Step
	// Doc is a one-line description for --help and reports.
	Doc string
	// CPU is the reference implementation: a func(In) (Out, error).
	CPU any
	// Sample returns a small valid input (of type In) for the contract tests
	// that every step's stub and CPU implementation share type and shape.
	Sample func() any
	// Random returns a valid input (of type In) drawn with seed, for the
	// CPU/GPU equivalence tests; nil means Sample only.
	Random func(seed uint64) any
	// Tolerance is how far the GPU implementation may be from the CPU's.
	Tolerance Tolerance
}

// Tolerance states how close a step's GPU output must be to its CPU output.
// Integers (classes, indices, labels) must be equal, or within IntDiff (8-bit
// pixels rounded from floats); NaN must match NaN.
type Tolerance struct {
	// Rel bounds each float's relative error |g-c| <= Rel*max(|g|,|c|);
	// zero means 1e-5.
	Rel float64
	// Norm, when set, bounds instead the relative error of each float
	// array as a whole, ||g-c|| / ||c|| <= Norm (matrix products, whose sums
	// the GPU orders differently).
	Norm float64
	// IntDiff bounds |g-c| for unsigned integers (pixels).
	IntDiff int
}

type entry struct {
	def     Def
	in, out reflect.Type
	stub    any
	gpu     any
}

var (
	mu       sync.RWMutex
	registry = map[string]*entry{}
)

var errType = reflect.TypeOf((*error)(nil)).Elem()

// signature checks that fn is a func(In) (Out, error) and returns In and Out.
func signature(fn any) (in, out reflect.Type, err error) {
	t := reflect.TypeOf(fn)
	if t == nil || t.Kind() != reflect.Func || t.NumIn() != 1 || t.NumOut() != 2 || t.Out(1) != errType {
		return nil, nil, fmt.Errorf("want a func(In) (Out, error), got %v", t)
	}
	return t.In(0), t.Out(0), nil
}

// Register declares a step. It panics if the name is taken or the CPU
// function has the wrong signature: both are programming errors, found at init.
func Register(d Def) {
	in, out, err := signature(d.CPU)
	if err != nil {
		panic(fmt.Sprintf("step.Register(%q): CPU: %v", d.Name, err))
	}
	if d.Name == "" || d.Sample == nil {
		panic(fmt.Sprintf("step.Register(%q): Name and Sample are required", d.Name))
	}
	mu.Lock()
	defer mu.Unlock()
	if e, ok := registry[d.Name]; ok && e.def.CPU != nil {
		panic(fmt.Sprintf("step.Register: step %q registered twice", d.Name))
	}
	e := registry[d.Name]
	if e == nil {
		e = &entry{}
		registry[d.Name] = e
	}
	e.def, e.in, e.out = d, in, out
	mustMatch(d.Name, e)
}

// RegisterStub registers the stand-in of a step: a func(In) (Out, error) with
// the CPU function's types that allocates the output's shape and computes
// nothing. The step may be registered before or after its stub.
func RegisterStub(name string, fn any) {
	registerImpl("RegisterStub", "stub", name, fn, func(e *entry) *any { return &e.stub })
}

// RegisterGPU registers the GPU implementation of a step: a func(In) (Out,
// error) with the CPU function's types that runs the step's GPU op on the
// GPU executor (package runtime/executor/stepops registers them all).
func RegisterGPU(name string, fn any) {
	registerImpl("RegisterGPU", "GPU implementation", name, fn, func(e *entry) *any { return &e.gpu })
}

// registerImpl puts fn in the slot of step name's entry, checking its
// signature (and its types against the CPU function's, if registered).
func registerImpl(caller, what, name string, fn any, slot func(*entry) *any) {
	if _, _, err := signature(fn); err != nil {
		panic(fmt.Sprintf("step.%s(%q): %v", caller, name, err))
	}
	mu.Lock()
	defer mu.Unlock()
	e := registry[name]
	if e == nil {
		e = &entry{}
		registry[name] = e
	}
	p := slot(e)
	if *p != nil {
		panic(fmt.Sprintf("step.%s: %s of %q registered twice", caller, what, name))
	}
	*p = fn
	if e.def.CPU != nil {
		mustMatch(name, e)
	}
}

func mustMatch(name string, e *entry) {
	for what, fn := range map[string]any{"stub": e.stub, "GPU implementation": e.gpu} {
		if fn == nil {
			continue
		}
		in, out, _ := signature(fn)
		if in != e.in || out != e.out {
			panic(fmt.Sprintf("step %q: %s is func(%v) (%v, error), CPU is func(%v) (%v, error)", name, what, in, out, e.in, e.out))
		}
	}
}

// Lookup returns the definition of a registered step.
func Lookup(name string) (Def, bool) {
	mu.RLock()
	defer mu.RUnlock()
	e, ok := registry[name]
	if !ok || e.def.CPU == nil {
		return Def{}, false
	}
	return e.def, true
}

// All returns every registered step, sorted by name.
func All() []Def {
	mu.RLock()
	defer mu.RUnlock()
	var out []Def
	for _, e := range registry {
		if e.def.CPU != nil {
			out = append(out, e.def)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Steps returns the backend description of each registered step, for
// backend.Config.Steps.
func Steps() []backend.Step {
	defs := All()
	out := make([]backend.Step, len(defs))
	for i, d := range defs {
		out[i] = d.Step
	}
	return out
}

// Impl returns the implementation of step name for kind (CPU or Stub) as a
// func(In) (Out, error), or an error that says what is missing.
func Impl(name string, kind backend.Kind) (any, error) {
	mu.RLock()
	defer mu.RUnlock()
	e, ok := registry[name]
	if !ok || e.def.CPU == nil {
		return nil, fmt.Errorf("step %q is not registered", name)
	}
	switch kind {
	case backend.CPU:
		return e.def.CPU, nil
	case backend.Stub:
		if e.stub == nil {
			return nil, fmt.Errorf("step %q has no stub registered: import its stubs package (github.com/beamgpu/beamgpu/stubs/...)", name)
		}
		return e.stub, nil
	case backend.GPU:
		if e.def.GPUOp == "" {
			return nil, fmt.Errorf("step %q has no GPU op", name)
		}
		if e.gpu == nil {
			return nil, fmt.Errorf("step %q: GPU op %q has no client registered: import github.com/beamgpu/beamgpu/runtime/executor/stepops", name, e.def.GPUOp)
		}
		return e.gpu, nil
	}
	return nil, fmt.Errorf("step %q: unknown implementation %q", name, kind)
}
