package step

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/transforms/wire"
)

// The executor side of every GPU step: the op that serves its requests,
// with its CPU function (the reference executor) or its launch on a device
// (the CUDA executor). See offload.go for the request and the response.

// Engine runs launches on a device; the CUDA executor's device layer
// (runtime/executor/cuda) is one.
type Engine interface {
	// Launch runs fn with a Call on the device, waits for the Call's work
	// and frees its buffers. output is where the Call's Output memory comes
	// from (the response's shared memory). Errors wrap protocol.ErrOutOfMemory
	// (the client splits the batch) or protocol.ErrFatal (the executor exits).
	Launch(ctx context.Context, op string, output func(n int) ([]byte, error), fn func(c gpu.Call) error) error
}

// ReferenceOp implements Any: the op serving the step's GPU op with its CPU
// function, which the reference executor serves, so that the whole
// out-of-process path is tested without a GPU.
func (s *Step[In, Out]) ReferenceOp() server.Op {
	if s.def.GPU == nil {
		return nil
	}
	return &stepOp[In, Out]{s: s, run: func(ctx context.Context, in In, _ func(int) ([]byte, error)) (Out, error) {
		start := time.Now()
		out, err := Call(s.def.CPU, in)
		if t := gpu.TimingsFrom(ctx); t != nil {
			t.Add(PhaseCPU, time.Since(start))
		}
		return out, err
	}}
}

// LaunchOp implements Any: the op serving the step's GPU op with its launch
// on e; nil when no launch is registered.
func (s *Step[In, Out]) LaunchOp(e Engine) server.Op {
	l := s.getLaunch()
	if s.def.GPU == nil || l == nil {
		return nil
	}
	return &stepOp[In, Out]{s: s, run: func(ctx context.Context, in In, output func(int) ([]byte, error)) (Out, error) {
		var out Out
		err := e.Launch(ctx, s.def.GPU.Op, output, func(c gpu.Call) error {
			var err error
			out, err = l(c, in)
			return err
		})
		return out, err
	}}
}

type stepOp[In, Out any] struct {
	s   *Step[In, Out]
	run func(ctx context.Context, in In, output func(int) ([]byte, error)) (Out, error)

	mu    sync.Mutex
	sides map[string]any
	order []string
}

// maxOpSides is how many side values an op keeps (the most recent).
const maxOpSides = 4

func (o *stepOp[In, Out]) Name() string { return o.s.def.GPU.Op }

func (o *stepOp[In, Out]) Run(ctx context.Context, params []byte, ins [][]byte, out server.Outputs) error {
	g := o.s.def.GPU
	d := wire.NewDecoder(params, "step request")
	if v := d.Bytes(1); d.Err() == nil && v[0] != requestVersion {
		return fmt.Errorf("op %s: request version %d, want %d", g.Op, v[0], requestVersion)
	}
	key, nMain, nSide, flags := d.String(), d.Uvarint(), d.Uvarint(), d.Uvarint()
	if err := d.Done(); err != nil {
		return fmt.Errorf("op %s: %w", g.Op, err)
	}
	var timings *gpu.Timings
	mark := time.Now()
	if flags&flagProfile != 0 {
		timings = &gpu.Timings{}
		ctx = gpu.WithTimings(ctx, timings)
	}
	if 1+nMain+nSide != len(ins) {
		return fmt.Errorf("op %s: %d inputs, the request says 1+%d+%d", g.Op, len(ins), nMain, nSide)
	}
	in, err := g.In.Decode(Parts{Header: ins[0], Arrays: ins[1 : 1+nMain]})
	if err != nil {
		return err
	}
	if key != "" {
		if g.Side == nil {
			return fmt.Errorf("op %s: side data sent to a step without any", g.Op)
		}
		side, err := o.side(key, ins[1+nMain:])
		if err != nil {
			return err
		}
		// Sent to the executor once, the side data is kept on each device
		// it is used on, uploaded by the first batch there (a launch's
		// Resident fill); the server counts these per device.
		server.FirstUse(ctx, key)
		if in, err = g.Side.With(in, side); err != nil {
			return err
		}
	}
	decoded := time.Since(mark)
	w := &outWriter{out: out}
	mark = time.Now()
	res, err := o.run(ctx, in, w.alloc)
	if err != nil {
		return err
	}
	ran := time.Since(mark)
	mark = time.Now()
	parts, err := g.Out.Encode(res)
	if err != nil {
		return err
	}
	var phases Profile
	if timings != nil {
		phases = Profile{{PhaseExecutorDecode, decoded}}
		var device time.Duration
		for _, p := range []string{PhaseCPU, gpu.PhaseHostToDevice, gpu.PhaseKernel, gpu.PhaseDeviceToHost} {
			if d := timings.Get(p); d > 0 {
				phases = append(phases, Phase{p, d})
				device += d
			}
		}
		if ran > device { // the launch's host side, waits and what events do not bracket
			phases = append(phases, Phase{PhaseExecutorOther, ran - device})
		}
	}
	return w.finish(parts, phases, mark)
}

// side returns the side value of key: decoded from in (the side header and
// arrays, copied out of shared memory first: the value outlives the
// request) when the request carries it, else the one kept.
func (o *stepOp[In, Out]) side(key string, in [][]byte) (any, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(in) == 0 {
		if v, ok := o.sides[key]; ok {
			return v, nil
		}
		// The status crosses to the client, which sends the request again
		// with the side data (protocol.StatusNeedSide).
		return nil, fmt.Errorf("op %s: %w: %s", o.s.def.GPU.Op, protocol.ErrNeedSide, key)
	}
	kept := clone(Parts{Header: in[0], Arrays: in[1:]})
	v, err := o.s.def.GPU.Side.Decode(kept)
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
	if len(o.order) > maxOpSides {
		delete(o.sides, o.order[0])
		o.order = o.order[1:]
	}
	return v, nil
}

// clone copies p into one Go allocation, each array 64-byte aligned.
func clone(p Parts) Parts {
	total := len(p.Header)
	for _, a := range p.Arrays {
		total += alignUp(len(a))
	}
	mem := alignedBytes(total)
	c := Parts{Arrays: make([][]byte, len(p.Arrays))}
	at := 0
	for i, a := range p.Arrays {
		c.Arrays[i] = mem[at : at+len(a) : at+len(a)]
		copy(c.Arrays[i], a)
		at += alignUp(len(a))
	}
	c.Header = mem[at : at+len(p.Header)]
	copy(c.Header, p.Header)
	return c
}

// outWriter hands an op's run output memory in the response's shared memory
// and writes the response: arrays already there are sent where they lie,
// others are copied there, then the envelope says where each is.
type outWriter struct {
	out  server.Outputs
	bufs [][]byte
}

func (w *outWriter) alloc(n int) ([]byte, error) {
	b, err := w.out(n)
	if err != nil {
		return nil, err
	}
	w.bufs = append(w.bufs, b[0])
	return b[0], nil
}

// find returns the buffer holding a and a's offset in it.
func (w *outWriter) find(a []byte) (int, int, bool) {
	if len(a) == 0 {
		return 0, 0, false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	for i, b := range w.bufs {
		if len(b) == 0 {
			continue
		}
		base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		if p >= base && p+uintptr(len(a)) <= base+uintptr(len(b)) {
			return i, int(p - base), true
		}
	}
	return 0, 0, false
}

// finish writes the response of parts; with phases (profiling), it adds the
// time since encoding began as the encode phase and appends them all.
func (w *outWriter) finish(p Parts, phases Profile, encoding time.Time) error {
	env := wire.AppendUvarint(nil, len(p.Arrays))
	for _, a := range p.Arrays {
		i, off, ok := w.find(a)
		if !ok {
			b, err := w.alloc(len(a))
			if err != nil {
				return err
			}
			copy(b, a)
			i, off = len(w.bufs)-1, 0
		}
		env = wire.AppendUvarint(env, i)
		env = wire.AppendUvarint(env, off)
		env = wire.AppendUvarint(env, len(a))
	}
	env = wire.AppendBytes(env, p.Header)
	if phases != nil {
		phases = append(phases, Phase{PhaseExecutorEncode, time.Since(encoding)})
		env = wire.AppendUvarint(env, len(phases))
		for _, ph := range phases {
			env = wire.AppendUint64(wire.AppendString(env, ph.Name), uint64(max(0, ph.Took)))
		}
	}
	b, err := w.alloc(len(env))
	if err != nil {
		return err
	}
	copy(b, env)
	return nil
}

// SelfTest implements server.SelfTester: the op on the step's sample,
// checked against the CPU function within the step's tolerance.
func (o *stepOp[In, Out]) SelfTest() ([]byte, [][]byte, func([][]byte) error) {
	g := o.s.def.GPU
	in := o.s.def.Sample()
	fail := func(err error) ([]byte, [][]byte, func([][]byte) error) {
		return nil, nil, func([][]byte) error { return err }
	}
	want, err := Call(o.s.def.CPU, in)
	if err != nil {
		return fail(fmt.Errorf("the CPU function fails on the sample: %w", err))
	}
	main, err := g.In.Encode(in)
	if err != nil {
		return fail(err)
	}
	var side *sideEntry
	if g.Side != nil {
		if side, err = sideOf(&o.s.sides, g.Side, in); err != nil {
			return fail(err)
		}
	}
	params, bufs := encodeRequest(main, side, true, 0)
	return params, bufs, func(outs [][]byte) error {
		parts, _, err := readEnvelope(outs)
		if err != nil {
			return err
		}
		got, err := g.Out.Decode(parts)
		if err != nil {
			return err
		}
		return o.s.def.Tolerance.compare(in, want, got)
	}
}
