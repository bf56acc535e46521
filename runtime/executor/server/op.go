package server

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"sync"
)

// Errors an op returns (wrapped) to choose the response status: an error
// wrapping protocol.ErrFatal (e.g. a sticky CUDA error) gets StatusFatal,
// Serve returns and the executor exits non-zero; one wrapping
// protocol.ErrOutOfMemory (the memory budget, or the device) gets
// StatusOutOfMemory, and the client may split the batch and retry (Outputs
// returns it when the inputs and outputs exceed the budget); one wrapping
// protocol.ErrNeedSide (side data the request names but neither carries
// nor finds held) gets StatusNeedSide, and the client sends the request
// again with it; and:
var (
	// ErrNoSpace is returned by Outputs when the outputs do not fit the
	// output region the client gave; the op should return it (the client
	// grows its arena and sends the request again).
	ErrNoSpace = errors.New("executor: outputs do not fit the output region")
)

// Outputs allocates an op's output buffers in shared memory: one buffer per
// size, zeroed only if the op zeroes them. It may be called more than once;
// buffers handed out stay valid until Run returns. Call it before allocating
// device memory: it may wait for the memory budget.
type Outputs func(sizes ...int) ([][]byte, error)

// Op is one operation the executor serves.
type Op interface {
	// Name is the op's name in requests, e.g. "raster.ndvi".
	Name() string
	// Run runs the op on one batch. in are the input buffers (views of
	// shared memory: read them, do not keep them past Run); params is the
	// request's parameter blob. Run must stop early when ctx is done (the
	// client went away, or the executor is shutting down).
	Run(ctx context.Context, params []byte, in [][]byte, out Outputs) error
}

// SelfTester is implemented by ops that can check themselves on a tiny
// input: the executor's selftest subcommand runs every op that implements
// it (ops such as a GPU kernel check themselves against their CPU twin).
type SelfTester interface {
	// SelfTest returns a tiny input and a check of the op's outputs for it.
	SelfTest() (params []byte, in [][]byte, check func(out [][]byte) error)
}

// Func makes an Op from a name and a function.
func Func(name string, run func(ctx context.Context, params []byte, in [][]byte, out Outputs) error) Op {
	return funcOp{name, run}
}

type funcOp struct {
	name string
	run  func(ctx context.Context, params []byte, in [][]byte, out Outputs) error
}

func (f funcOp) Name() string { return f.name }
func (f funcOp) Run(ctx context.Context, params []byte, in [][]byte, out Outputs) error {
	return f.run(ctx, params, in, out)
}

var (
	regMu    sync.RWMutex
	registry = map[string]Op{}
)

// Register adds op to the ops served by executors built with New(Config{})
// (Config.Ops nil). It panics if the name is empty or taken: both are
// programming errors, found at init.
func Register(op Op) {
	regMu.Lock()
	defer regMu.Unlock()
	name := op.Name()
	if name == "" {
		panic("server.Register: op with an empty name")
	}
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("server.Register: op %q registered twice", name))
	}
	registry[name] = op
}

// Registered returns the registered ops, sorted by name.
func Registered() []Op {
	regMu.RLock()
	defer regMu.RUnlock()
	ops := make([]Op, 0, len(registry))
	for _, op := range registry {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name() < ops[j].Name() })
	return ops
}

// Lookup returns the registered op called name.
func Lookup(name string) (Op, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	op, ok := registry[name]
	return op, ok
}

// RunLocal runs op in this process with its outputs on the Go heap, outside
// any server (for selftest and tests of ops).
func RunLocal(ctx context.Context, op Op, params []byte, in [][]byte) ([][]byte, error) {
	var outs [][]byte
	alloc := func(sizes ...int) ([][]byte, error) {
		bufs := make([][]byte, len(sizes))
		for i, n := range sizes {
			if n < 0 {
				return nil, fmt.Errorf("executor: output size %d is negative", n)
			}
			bufs[i] = make([]byte, n)
		}
		outs = append(outs, bufs...)
		return bufs, nil
	}
	if err := runOp(ctx, op, params, in, alloc); err != nil {
		return nil, err
	}
	return outs, nil
}

// runOp runs op, turning a panic into an error.
func runOp(ctx context.Context, op Op, params []byte, in [][]byte, out Outputs) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("executor: op %q panicked: %v\n%s", op.Name(), r, debug.Stack())
		}
	}()
	return op.Run(ctx, params, in, out)
}
