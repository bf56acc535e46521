package inference

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// Handler is a model for RunInference: it says which step runs the model
// and loads it, once per worker process. The MLP, KNN and ONNX handlers are
// this package's; a handler of your own is registered by its kind
// (Register) and carried in the pipeline as its kind and Config.
type Handler interface {
	// Kind is the name the handler's factory is registered under.
	Kind() string
	// Config encodes the handler, to be decoded by its factory on a worker.
	Config() ([]byte, error)
	// Key identifies the loaded model in a process: handlers with one key
	// share one Model.
	Key() string
	// Step is the registered step whose implementations (CPU, GPU, stub)
	// run the model, with the model's use of it where it has one
	// (step.WithUse: an explain line of its own, why it cannot run on
	// the GPU). --backend, --backend_override and the explain report
	// resolve it as any step.
	Step() step.Any
	// Load loads the model. RunInference calls it once per process and
	// key, from a worker's Setup.
	Load(ctx context.Context) (Model, error)
}

// Model is a loaded model: it checks examples and runs its step on them.
// RunInference calls it from several bundles at once.
type Model interface {
	// ID identifies the model's content (a hash of its file); every
	// Result carries it.
	ID() string
	// SizeBytes is the model's size in memory.
	SizeBytes() int64
	// Check refuses an example the model cannot take (a missing input, a
	// wrong type or shape, a NaN where the model checks for them) with an
	// error naming the input and the reason: that example alone fails,
	// counted in runinference.bad_rows, and the rest of its batch runs.
	Check(e Example) error
	// Batched reports whether examples can share a call (stacked along a
	// batch axis); if not, Predict gets one example at a time.
	Batched() bool
	// Predict runs the model on examples that passed Check with the
	// implementation impl of the handler's step (Step().Name(), through
	// the step's ImplContext(impl)) and returns each example's outputs, in
	// order. An error fails every example of the call.
	Predict(ctx context.Context, impl backend.Kind, examples []Example) ([][]Tensor, error)
}

// Factory decodes a handler from its Config.
type Factory func(config []byte) (Handler, error)

var (
	factoriesMu sync.RWMutex
	factories   = map[string]Factory{}
)

// Register makes a handler kind available to RunInference: call it from
// an init function of the handler's package, so that every worker binary
// has it. It panics if the kind is registered twice.
func Register(kind string, f Factory) {
	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	if _, dup := factories[kind]; dup {
		panic("inference.Register: kind " + kind + " registered twice")
	}
	factories[kind] = f
}

func decodeHandler(kind string, config []byte) (Handler, error) {
	factoriesMu.RLock()
	f, ok := factories[kind]
	factoriesMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("inference: no model handler of kind %q is registered", kind)
	}
	return f(config)
}

// shared holds the models loaded in this process, one per key.
var shared struct {
	sync.Mutex
	m map[string]*sharedModel
}

type sharedModel struct {
	once  sync.Once
	model Model
	err   error
	took  time.Duration
}

// load returns the shared model of h, loading it on first use. loaded
// reports whether this call did the loading (and took that long).
func load(ctx context.Context, h Handler) (m Model, took time.Duration, loaded bool, err error) {
	key := h.Key()
	shared.Lock()
	if shared.m == nil {
		shared.m = map[string]*sharedModel{}
	}
	e := shared.m[key]
	if e == nil {
		e = &sharedModel{}
		shared.m[key] = e
	}
	shared.Unlock()
	e.once.Do(func() {
		loaded = true
		start := time.Now()
		e.model, e.err = h.Load(ctx)
		e.took = time.Since(start)
	})
	if e.err != nil {
		return nil, 0, loaded, fmt.Errorf("inference: loading %s: %w", key, e.err)
	}
	return e.model, e.took, loaded, nil
}
