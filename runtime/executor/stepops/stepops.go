// Package stepops connects the steps' GPU ops to the GPU executor.
//
// For every step with a GPU op it defines a Codec: how the step's input and
// output cross the executor boundary (one shared-memory buffer each, in the
// steps' own Beam coders where they have one). From the codec it derives
// both ends:
//
//   - the step's GPU implementation, registered with step.RegisterGPU: it
//     encodes the batch, calls the op on the process's shared executor
//     client (started lazily, restarted after a crash) and decodes the
//     result. Importing this package is what makes --backend=gpu possible.
//   - the reference op (ReferenceOps), which the CPU reference executor
//     serves: it decodes the batch, runs the step's CPU function and encodes
//     the result. With it the whole out-of-process path (transport,
//     codecs, errors, restarts) is tested without a GPU; a -tags cuda
//     executor serves CUDA kernels under the same op names instead.
//
// Large inputs that rarely change (a kNN reference set, a model's weights)
// travel as side data: the client sends them once, under a content key, and
// the executor keeps the most recent few; if the executor has lost them (it
// restarted), it says so and the client sends them again.
package stepops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	beamruntime "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// Codec moves one step's batches across the executor boundary.
type Codec[In, Out any] struct {
	EncodeIn  func(In) ([]byte, error)
	DecodeIn  func(main []byte, side any) (In, error)
	EncodeOut func(Out) ([]byte, error)
	DecodeOut func([]byte) (Out, error)

	// Side, when set, names the input's side data (a pointer to a model or a
	// reference set): EncodeSide encodes it and DecodeSide decodes it into the
	// value DecodeIn receives. The side data is encoded and hashed once per
	// pointer.
	Side       func(In) any
	EncodeSide func(In) ([]byte, error)
	DecodeSide func([]byte) (any, error)

	// Split and Merge, when set, let a batch the executor cannot hold (out
	// of memory: its budget, or the device's) be run in two halves: Split
	// cuts it in two (ok false when it cannot be cut further) and Merge puts
	// the two outputs back together as one.
	Split func(In) (a, b In, ok bool)
	Merge func(a, b Out) (Out, error)
}

// needSide is the message prefix of the error the op returns when it does
// not hold the side data a request names.
const needSide = "stepops: side data not loaded: "

// On a worker, the job's GPU sharing (how many SDK processes share the GPU,
// set by the launcher) arrives as a pipeline option; the executor this
// process starts is configured with it.
func init() {
	client.SetSharingSource(func() string { return beamruntime.GlobalOptions.Get(client.OptionSharing) })
}

var (
	pathMu sync.RWMutex
	path   string
)

// SetExecutor sets the executor binary the GPU implementations use ("": the
// BEAMGPU_EXECUTOR environment variable, else client.DefaultPath). Call it
// before the first GPU batch; pipelines call it from --gpu_executor.
func SetExecutor(p string) {
	pathMu.Lock()
	defer pathMu.Unlock()
	path = p
}

func executor() (*client.Client, error) {
	pathMu.RLock()
	defer pathMu.RUnlock()
	return client.Shared(path)
}

// sideCache remembers, per side pointer, its key and encoding; and which
// keys this process has sent to the executor.
var sideCache struct {
	sync.Mutex
	byPtr map[any]sideEntry
	sent  map[string]bool
}

type sideEntry struct {
	key  string
	data []byte
}

func sideOf[In, Out any](c Codec[In, Out], in In) (sideEntry, error) {
	ptr := c.Side(in)
	sideCache.Lock()
	defer sideCache.Unlock()
	if sideCache.byPtr == nil {
		sideCache.byPtr, sideCache.sent = map[any]sideEntry{}, map[string]bool{}
	}
	if e, ok := sideCache.byPtr[ptr]; ok {
		return e, nil
	}
	data, err := c.EncodeSide(in)
	if err != nil {
		return sideEntry{}, err
	}
	sum := sha256.Sum256(data)
	e := sideEntry{key: hex.EncodeToString(sum[:16]), data: data}
	if len(sideCache.byPtr) > 16 {
		clear(sideCache.byPtr)
	}
	sideCache.byPtr[ptr] = e
	return e, nil
}

func sent(key string) bool {
	sideCache.Lock()
	defer sideCache.Unlock()
	return sideCache.sent[key]
}

func markSent(key string, ok bool) {
	sideCache.Lock()
	defer sideCache.Unlock()
	sideCache.sent[key] = ok
}

// gpuFunc is the GPU implementation of a step: the op on the executor. A
// batch that does not fit the executor's memory is split in two and each
// half run (recursively), when the codec can split it.
func gpuFunc[In, Out any](op string, c Codec[In, Out]) func(In) (Out, error) {
	call := callFunc(op, c)
	var run func(In) (Out, error)
	run = func(in In) (Out, error) {
		out, err := call(in)
		if err == nil || !errors.Is(err, client.ErrOutOfMemory) || c.Split == nil {
			return out, err
		}
		a, b, ok := c.Split(in)
		if !ok {
			return out, err
		}
		oa, err := run(a)
		if err != nil {
			return out, err
		}
		ob, err := run(b)
		if err != nil {
			return out, err
		}
		return c.Merge(oa, ob)
	}
	return run
}

// callFunc runs one batch on the executor.
func callFunc[In, Out any](op string, c Codec[In, Out]) func(In) (Out, error) {
	return func(in In) (Out, error) {
		var zero Out
		cl, err := executor()
		if err != nil {
			return zero, fmt.Errorf("%w: %w", step.ErrGPUUnavailable, err)
		}
		main, err := c.EncodeIn(in)
		if err != nil {
			return zero, err
		}
		var side sideEntry
		if c.Side != nil {
			if side, err = sideOf(c, in); err != nil {
				return zero, err
			}
		}
		call := func(withSide bool) ([][]byte, error) {
			inputs := [][]byte{main}
			if withSide {
				inputs = append(inputs, side.data)
			}
			return cl.Call(context.Background(), op, []byte(side.key), inputs)
		}
		outs, err := call(side.key != "" && !sent(side.key))
		if err != nil && side.key != "" && strings.Contains(err.Error(), needSide) {
			outs, err = call(true) // the executor restarted, or evicted the side data
		}
		if errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrExecutorDied) || errors.Is(err, client.ErrFatal) {
			return zero, fmt.Errorf("%w: %w", step.ErrGPUUnavailable, err)
		}
		if err != nil {
			return zero, err
		}
		if side.key != "" {
			markSent(side.key, true)
		}
		if len(outs) != 1 {
			return zero, fmt.Errorf("GPU op %s returned %d outputs, want 1", op, len(outs))
		}
		return c.DecodeOut(outs[0])
	}
}

// stepOp serves a step's op with an implementation of the step: its CPU
// function (the reference executor) or a device-backed one (CUDA).
type stepOp[In, Out any] struct {
	name string
	c    Codec[In, Out]
	impl func(In) (Out, error)
	def  step.Def

	mu    sync.Mutex
	sides map[string]any
	order []string
}

// maxSides is how many side data an op keeps (the most recent).
const maxSides = 4

func (o *stepOp[In, Out]) Name() string { return o.name }

func (o *stepOp[In, Out]) side(key string, in [][]byte) (any, error) {
	if key == "" {
		return nil, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(in) < 2 {
		if v, ok := o.sides[key]; ok {
			return v, nil
		}
		return nil, errors.New(needSide + key)
	}
	v, err := o.c.DecodeSide(in[1])
	if err != nil {
		return nil, err
	}
	if o.sides == nil {
		o.sides = map[string]any{}
	}
	if _, ok := o.sides[key]; !ok {
		o.order = append(o.order, key)
	}
	o.sides[key] = v
	if len(o.order) > maxSides {
		delete(o.sides, o.order[0])
		o.order = o.order[1:]
	}
	return v, nil
}

func (o *stepOp[In, Out]) Run(ctx context.Context, params []byte, in [][]byte, out server.Outputs) error {
	if len(in) < 1 {
		return fmt.Errorf("op %s: no input", o.name)
	}
	side, err := o.side(string(params), in)
	if err != nil {
		return err
	}
	x, err := o.c.DecodeIn(in[0], side)
	if err != nil {
		return err
	}
	y, err := o.impl(x)
	if err != nil {
		return err
	}
	b, err := o.c.EncodeOut(y)
	if err != nil {
		return err
	}
	bufs, err := out(len(b))
	if err != nil {
		return err
	}
	copy(bufs[0], b)
	return nil
}

// SelfTest implements server.SelfTester: the op on the step's sample input,
// checked against the step's CPU function within the step's tolerance.
func (o *stepOp[In, Out]) SelfTest() ([]byte, [][]byte, func([][]byte) error) {
	return SelfTest(o.c, o.def)
}

// SelfTest is the selftest of any op serving the step of d with codec c:
// its request for the step's sample, and the check of its response against
// the step's CPU function.
func SelfTest[In, Out any](c Codec[In, Out], d step.Def) ([]byte, [][]byte, func([][]byte) error) {
	in, ok := d.Sample().(In)
	fail := func(err error) ([]byte, [][]byte, func([][]byte) error) {
		return nil, nil, func([][]byte) error { return err }
	}
	if !ok {
		return fail(fmt.Errorf("step %s: sample of type %T", d.Name, d.Sample()))
	}
	main, err := c.EncodeIn(in)
	if err != nil {
		return fail(err)
	}
	inputs, params := [][]byte{main}, []byte(nil)
	if c.Side != nil {
		side, err := c.EncodeSide(in)
		if err != nil {
			return fail(err)
		}
		inputs, params = append(inputs, side), []byte("selftest")
	}
	return params, inputs, func(outs [][]byte) error {
		if len(outs) != 1 {
			return fmt.Errorf("%d outputs, want 1", len(outs))
		}
		got, err := c.DecodeOut(outs[0])
		if err != nil {
			return err
		}
		want, err := d.CPU.(func(In) (Out, error))(in)
		if err != nil {
			return fmt.Errorf("CPU function: %w", err)
		}
		return step.Compare(want, got, d.Tolerance)
	}
}

var (
	opsMu    sync.Mutex
	builders = map[string]func(impl any) (server.Op, error){}
	names    []string
)

// Define registers the GPU implementation of the step called name (its
// op is the step's GPUOp) and its reference op. It panics if the step is not
// registered, has no GPU op, or its CPU function has other types.
func Define[In, Out any](name string, c Codec[In, Out]) {
	d, ok := step.Lookup(name)
	if !ok || d.GPUOp == "" {
		panic(fmt.Sprintf("stepops.Define(%q): not a registered step with a GPU op", name))
	}
	if _, ok := d.CPU.(func(In) (Out, error)); !ok {
		panic(fmt.Sprintf("stepops.Define(%q): the step's CPU function is %T", name, d.CPU))
	}
	step.RegisterGPU(name, gpuFunc(d.GPUOp, c))
	opsMu.Lock()
	defer opsMu.Unlock()
	names = append(names, name)
	builders[name] = func(impl any) (server.Op, error) {
		fn, ok := impl.(func(In) (Out, error))
		if !ok {
			return nil, fmt.Errorf("step %s: implementation is %T, want %T", name, impl, fn)
		}
		return &stepOp[In, Out]{name: d.GPUOp, c: c, impl: fn, def: d}, nil
	}
}

// Ops returns the op of every step defined here, served by impls: step name
// to an implementation with the step's CPU function's type. A step missing
// from impls is an error: an executor serves every op.
func Ops(impls map[string]any) ([]server.Op, error) {
	opsMu.Lock()
	defer opsMu.Unlock()
	var ops []server.Op
	for _, name := range names {
		impl, ok := impls[name]
		if !ok {
			return nil, fmt.Errorf("no implementation of step %s", name)
		}
		op, err := builders[name](impl)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// ReferenceOps returns the op of every step defined here served by the
// step's CPU function: what the CPU reference executor serves.
func ReferenceOps() []server.Op {
	impls := map[string]any{}
	for _, name := range Names() {
		d, _ := step.Lookup(name)
		impls[name] = d.CPU
	}
	ops, err := Ops(impls)
	if err != nil {
		panic(err) // the CPU functions have the steps' types by construction
	}
	return ops
}

// Names returns the steps defined here.
func Names() []string {
	opsMu.Lock()
	defer opsMu.Unlock()
	return append([]string(nil), names...)
}
