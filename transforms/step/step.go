package step

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
)

// Def declares a step that turns a batch of type In into a batch of type Out.
// Register checks it and returns the Step that pipelines, executors and
// stubs refer to.
type Def[In, Out any] struct {
	// Name is the step's name in --backend_override, the explain report and
	// metrics, e.g. "toa_ndvi". Names are unique in a process.
	Name string
	// Doc is a one-line description for --help and reports.
	Doc string
	// CPU is the reference implementation.
	CPU func(In) (Out, error)
	// GPU, when set, declares the step's GPU op: how its batches cross to
	// the GPU executor and back, and the resource hints a GPU step carries.
	// Its launch is registered separately (RegisterLaunch), from the
	// family's files behind the cuda build tag.
	GPU *GPU[In, Out]
	// Sample returns a small valid input, for the contract tests (the stub
	// and the CPU share type and shape) and the executor's selftest.
	Sample func() In
	// Random returns a valid input drawn with seed, for the CPU/GPU
	// equivalence tests; nil means Sample only.
	Random func(seed uint64) In
	// Tolerance is how far the GPU output may be from the CPU's.
	Tolerance Tolerance
	// Bench, when set, returns the step's benchmark input and its work: full,
	// at the size the GPU benchmark reports (serve's bench; a 4096x4096 tile,
	// 8192 rows); else at a size CI can afford.
	Bench func(full bool) (In, Work)
	// Recycle, when set, takes back an output of CPU that nothing reads any
	// more, so that CPU's next outputs reuse its buffers: a fresh output
	// costs an allocation, the garbage collector's work and, where it would
	// fit in the caches, writes to memory instead of to the cache. A step's
	// DoFn hands its outputs back only where the pipeline says that their
	// consumers keep none (RecycleOutputs). CPU must then return buffers of
	// its own: none that its input holds, none that it keeps.
	Recycle func(Out)
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
	// Check, when set, replaces the numeric comparison (after the type and
	// shape check) with the step's own rule, for what a numeric bound cannot
	// say: kNN predictions may differ only at near ties of the k-th and
	// (k+1)-th distances (tensor.KNNNearTie). It gets the step's input.
	Check func(in, cpu, gpu any) error
}

// Step is a registered step. Its methods are safe for concurrent use.
type Step[In, Out any] struct {
	def Def[In, Out]

	mu     sync.RWMutex
	stub   func(In) (Out, error)
	launch Launch[In, Out]

	sides sideCache // client side: side data encoded once per value
}

// ErrGPUUnavailable is wrapped by a GPU implementation's error when no
// executor can run the batch (none found, none with a device, or it keeps
// dying): under --backend=auto the batch then runs on the CPU.
var ErrGPUUnavailable = errors.New("GPU unavailable")

var (
	regMu    sync.RWMutex
	registry = map[string]Any{}
	gpuOps   = map[string]string{}
)

// Register checks d and registers it. It panics if the name or the GPU op is
// taken, or a required part is missing: programming errors, found at init.
// Call it from a package-level variable of the step's family:
//
//	var StepNDVI = step.Register(step.Def[Tile, Tile]{Name: "ndvi", CPU: NDVITile, ...})
func Register[In, Out any](d Def[In, Out]) *Step[In, Out] {
	if err := d.check(); err != nil {
		panic(fmt.Sprintf("step.Register(%q): %v", d.Name, err))
	}
	s := &Step[In, Out]{def: d}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[d.Name]; dup {
		panic(fmt.Sprintf("step.Register: step %q registered twice", d.Name))
	}
	if d.GPU != nil {
		if other, dup := gpuOps[d.GPU.Op]; dup {
			panic(fmt.Sprintf("step.Register(%q): GPU op %q is step %q's", d.Name, d.GPU.Op, other))
		}
		gpuOps[d.GPU.Op] = d.Name
	}
	registry[d.Name] = s
	return s
}

func (d Def[In, Out]) check() error {
	switch {
	case d.Name == "":
		return errors.New("no Name")
	case d.CPU == nil:
		return errors.New("no CPU implementation")
	case d.Sample == nil:
		return errors.New("no Sample")
	}
	if g := d.GPU; g != nil {
		switch {
		case g.Op == "":
			return errors.New("GPU: no Op name")
		case g.In.Encode == nil || g.In.Decode == nil || g.Out.Encode == nil || g.Out.Decode == nil:
			return fmt.Errorf("GPU op %s: the In and Out codecs need Encode and Decode", g.Op)
		case (g.Split == nil) != (g.Merge == nil):
			return fmt.Errorf("GPU op %s: Split and Merge go together", g.Op)
		}
		if sd := g.Side; sd != nil && (sd.Of == nil || sd.Encode == nil || sd.Decode == nil || sd.With == nil) {
			return fmt.Errorf("GPU op %s: Side needs Of, Encode, Decode and With", g.Op)
		}
	}
	return nil
}

// RegisterStub registers the stand-in of s: a function with the CPU
// function's types that returns an output of the real shape and computes
// nothing (see package stubs). Families' stubs register from the stubs/
// tree, as image formats register with package image. It panics if s has a
// stub already.
func RegisterStub[In, Out any](s *Step[In, Out], fn func(In) (Out, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stub != nil {
		panic(fmt.Sprintf("step.RegisterStub: step %q has a stub already", s.def.Name))
	}
	s.stub = fn
}

// errNoStub is the error of a stub that is not registered.
func errNoStub(name string) error {
	return fmt.Errorf("step %q has no stub registered: import the package that registers it with step.RegisterStub "+
		"(for beamgpu's own families, github.com/beamgpu/beamgpu/stubs/<family>; for a step of yours, your stubs package)", name)
}

// Name returns the step's name.
func (s *Step[In, Out]) Name() string { return s.def.Name }

// Doc returns the step's one-line description.
func (s *Step[In, Out]) Doc() string { return s.def.Doc }

// Def returns the step's definition.
func (s *Step[In, Out]) Def() Def[In, Out] { return s.def }

// Backend describes the step to the backend selector.
func (s *Step[In, Out]) Backend() backend.Step {
	st := backend.Step{Name: s.def.Name}
	if g := s.def.GPU; g != nil {
		st.GPUOp, st.Hints = g.Op, g.Hints
	}
	return st
}

// Tolerance returns how close the GPU output must be to the CPU's.
func (s *Step[In, Out]) Tolerance() Tolerance { return s.def.Tolerance }

// HasStub reports whether the step's stub is registered.
func (s *Step[In, Out]) HasStub() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.stub != nil
}

// Impl returns the implementation of kind: the CPU function, the stub, or
// the GPU implementation (the batch run on the GPU executor; see offload.go).
func (s *Step[In, Out]) Impl(kind backend.Kind) (func(In) (Out, error), error) {
	switch kind {
	case backend.CPU:
		return s.def.CPU, nil
	case backend.Stub:
		s.mu.RLock()
		defer s.mu.RUnlock()
		if s.stub == nil {
			return nil, errNoStub(s.def.Name)
		}
		return s.stub, nil
	case backend.GPU:
		if s.def.GPU == nil {
			return nil, fmt.Errorf("step %q has no GPU op", s.def.Name)
		}
		return s.offload, nil
	}
	return nil, fmt.Errorf("step %q: unknown implementation %q", s.def.Name, kind)
}

// ImplContext is Impl with the call's context, which reaches the GPU
// executor (cancellation, deadlines); the CPU function and the stub ignore
// it.
func (s *Step[In, Out]) ImplContext(kind backend.Kind) (func(context.Context, In) (Out, error), error) {
	if kind == backend.GPU && s.def.GPU != nil {
		return s.Offload, nil
	}
	fn, err := s.Impl(kind)
	if err != nil {
		return nil, err
	}
	return func(_ context.Context, in In) (Out, error) { return fn(in) }, nil
}

// Any is a registered step whatever its types: what the selector, the
// executor and the test harnesses need. Every *Step is one; nothing else is.
type Any interface {
	Name() string
	Doc() string
	Backend() backend.Step
	Tolerance() Tolerance
	HasStub() bool
	// HasLaunch reports whether the step's CUDA launch is registered (in a
	// build with the cuda tag).
	HasLaunch() bool
	// SampleInput and RandomInput are Sample and Random, as any.
	SampleInput() any
	RandomInput(seed uint64) (any, bool)
	// Apply runs the implementation kind on in, which must be the step's In.
	Apply(kind backend.Kind, in any) (any, error)
	// ApplyLaunch runs the step's launch on c (a Recorder in tests).
	ApplyLaunch(c gpu.Call, in any) (any, error)
	// Ops are the executor ops of a GPU step (nil without one): its
	// reference op, running the CPU function, and with an engine, the op
	// running its launch.
	ReferenceOp() server.Op
	LaunchOp(e Engine) server.Op
	// For the GPU benchmark: the step's benchmark input, the bytes it moves,
	// and its GPU implementation (with its phases) on inputs of any type.
	BenchInput(full bool) (in any, w Work, ok bool)
	Sizes(in any) (inBytes, outBytes, sideBytes int, err error)
	OffloadAny(ctx context.Context, in any) (any, error)
	ProfileAny(ctx context.Context, in any) (Profile, error)

	isStep()
}

func (s *Step[In, Out]) isStep() {}

// SampleInput implements Any.
func (s *Step[In, Out]) SampleInput() any { return s.def.Sample() }

// RandomInput implements Any.
func (s *Step[In, Out]) RandomInput(seed uint64) (any, bool) {
	if s.def.Random == nil {
		return nil, false
	}
	return s.def.Random(seed), true
}

// Apply implements Any.
func (s *Step[In, Out]) Apply(kind backend.Kind, in any) (any, error) {
	x, ok := in.(In)
	if !ok {
		return nil, fmt.Errorf("step %q takes a %T, not a %T", s.def.Name, *new(In), in)
	}
	fn, err := s.Impl(kind)
	if err != nil {
		return nil, err
	}
	return Call(fn, x)
}

// Call runs fn, turning a panic in it into an error, so that one bad batch
// becomes a Failure instead of a failed bundle retried forever.
func Call[In, Out any](fn func(In) (Out, error), in In) (out Out, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn(in)
}

// Lookup returns the registered step called name.
func Lookup(name string) (Any, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	s, ok := registry[name]
	return s, ok
}

// All returns every registered step of the process, sorted by name. A
// pipeline's own steps are the ones it lists (Backends); All is for
// executors and the harnesses that check every step.
func All() []Any {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]Any, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Backends describes steps to the backend selector, for
// backend.Config.Steps: a pipeline passes the steps it builds, so that
// --backend_override and the explain report know exactly those.
func Backends(steps ...Any) []backend.Step {
	out := make([]backend.Step, len(steps))
	for i, s := range steps {
		out[i] = s.Backend()
	}
	return out
}
