package inference

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// ModelHandler loads a model and says which step runs it.
type ModelHandler interface {
	// Kind is the name the handler's factory is registered under.
	Kind() string
	// Config encodes the handler, to be decoded by its factory on a worker.
	Config() ([]byte, error)
	// Key identifies the loaded model in a process: handlers with one key share it.
	Key() string
	// Step is the registered step whose implementation runs the model.
	Step() step.Any
	// Load loads the model to run with implementation impl of Step.
	Load(impl backend.Kind) (Model, error)
}

// Model is a loaded model.
type Model interface {
	// Predict classifies the rows of a batch.
	Predict(ctx context.Context, b tensor.Batch) (tensor.Predictions, error)
	// SizeBytes is the model's size in memory.
	SizeBytes() int64
}

// Factory decodes a handler from its Config.
type Factory func(config []byte) (ModelHandler, error)

var (
	factoriesMu sync.RWMutex
	factories   = map[string]Factory{}
)

// Register makes a handler kind available to RunInference. It panics if the
// kind is registered twice.
func Register(kind string, f Factory) {
	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	if _, dup := factories[kind]; dup {
		panic("inference.Register: kind " + kind + " registered twice")
	}
	factories[kind] = f
}

func decodeHandler(kind string, config []byte) (ModelHandler, error) {
	factoriesMu.RLock()
	f, ok := factories[kind]
	factoriesMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("inference: no model handler of kind %q is registered", kind)
	}
	return f(config)
}

// shared holds the models loaded in this process, one per key and implementation.
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

// load returns the shared model of h for impl, loading it on first use.
// loaded reports whether this call did the loading (and took that long).
func load(h ModelHandler, impl backend.Kind) (m Model, took time.Duration, loaded bool, err error) {
	key := h.Key() + "|" + string(impl)
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
		e.model, e.err = h.Load(impl)
		e.took = time.Since(start)
	})
	if e.err != nil {
		return nil, 0, loaded, fmt.Errorf("inference: loading %s: %w", h.Key(), e.err)
	}
	return e.model, e.took, loaded, nil
}
