package step

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/shm"
	"github.com/beamgpu/beamgpu/transforms/wire"
)

// The GPU implementation of every step: its batch crosses to the GPU
// executor (a separate process, see runtime/executor) and back.
//
// The data path makes one host copy each way. The step's In codec gives the
// batch's header and views of its arrays; the client copies each array once,
// into its own buffer of the connection's shared-memory arena; the executor
// views them there (and the device copies them from there, page-locked);
// the executor's outputs come back in the same arena, and the client copies
// each once, into the Go memory the output is decoded over.
//
// A request's params name the side data (its content key) and count the
// arrays; its inputs are the main header, the main arrays, then, the first
// time an executor needs the side data, the side header and arrays. The
// response's last output is an envelope: where each output array lies in
// the outputs, then the output header.

var (
	exeMu   sync.RWMutex
	exePath string
)

// UseExecutor points the GPU implementations of every step at the executor
// binary path ("": $BEAMGPU_EXECUTOR, else client.DefaultPath) and returns
// what the backend selector asks: whether that executor starts and serves a
// device, which ops it serves, and if not, why. Pipelines call it with
// --gpu_executor, before the first GPU batch.
func UseExecutor(path string) backend.Executor {
	exeMu.Lock()
	exePath = path
	exeMu.Unlock()
	return client.Probe(path)
}

func executor() (*client.Client, error) {
	exeMu.RLock()
	defer exeMu.RUnlock()
	return client.Shared(exePath)
}

// requestVersion is the version of the params of a step request.
const requestVersion = 2

// Request flags.
const flagProfile = 1 // time the executor's phases and return them

func (s *Step[In, Out]) offload(in In) (Out, error) { return s.Offload(context.Background(), in) }

// Offload runs in on the GPU executor: the step's GPU implementation. ctx
// bounds the call (the DoFn's context). A batch that does not fit the
// executor's memory, or whose shared memory cannot be had, is run in halves
// (recursively) when the step can split it. An executor that cannot be had,
// or that keeps dying, and shared memory that cannot be had even for the
// smallest half, give an error wrapping ErrGPUUnavailable.
func (s *Step[In, Out]) Offload(ctx context.Context, in In) (Out, error) {
	var zero Out
	g := s.def.GPU
	if g == nil {
		return zero, fmt.Errorf("step %q has no GPU op", s.def.Name)
	}
	out, err := s.callOnce(ctx, in)
	tooBig := errors.Is(err, protocol.ErrOutOfMemory) || errors.Is(err, client.ErrNoArena)
	if err == nil || !tooBig {
		return out, err
	}
	var a, b In
	ok := g.Split != nil
	if ok {
		a, b, ok = g.Split(in)
	}
	if !ok {
		if errors.Is(err, client.ErrNoArena) {
			// Not the batch's fault, and it cannot be made smaller: under
			// --backend=auto it runs on the CPU.
			return out, fmt.Errorf("%w: %w", ErrGPUUnavailable, err)
		}
		return out, err
	}
	oa, err := s.Offload(ctx, a)
	if err != nil {
		return zero, err
	}
	ob, err := s.Offload(ctx, b)
	if err != nil {
		return zero, err
	}
	return g.Merge(oa, ob)
}

func (s *Step[In, Out]) callOnce(ctx context.Context, in In) (Out, error) {
	return s.call(ctx, in, nil)
}

// call runs in on the executor once; with prof set, it asks the executor to
// time its phases and adds its own and the executor's to prof.
func (s *Step[In, Out]) call(ctx context.Context, in In, prof *Profile) (Out, error) {
	var zero Out
	g := s.def.GPU
	cl, err := executor()
	if err != nil {
		return zero, fmt.Errorf("%w: %w", ErrGPUUnavailable, err)
	}
	flags := 0
	if prof != nil {
		flags = flagProfile
	}
	t0 := time.Now()
	main, err := g.In.Encode(in)
	if err != nil {
		return zero, err
	}
	var side *sideEntry
	if g.Side != nil {
		if side, err = sideOf(&s.sides, g.Side, in); err != nil {
			return zero, err
		}
	}
	encoded := time.Since(t0)
	call := func(withSide bool) (Out, error) {
		params, bufs := encodeRequest(main, side, withSide, flags)
		sizes := make([]int, len(bufs))
		for i, b := range bufs {
			sizes[i] = len(b)
		}
		var fill time.Duration
		t1 := time.Now()
		// Outputs scale with the batch, not with the side data: offer as much
		// room as the main parts take (plus the envelope).
		res, err := cl.CallFill(ctx, g.Op, params, sizes, func(dst [][]byte) error {
			tf := time.Now()
			for i, b := range bufs {
				shm.Copy(dst[i], b)
			}
			fill += time.Since(tf)
			return nil
		}, client.OutputHint(int64(main.Size()+64*(len(main.Arrays)+2))))
		if err != nil {
			return zero, err
		}
		called := time.Since(t1)
		defer res.Release()
		t2 := time.Now()
		parts, remote, err := readEnvelope(res.Outputs)
		if err != nil {
			return zero, fmt.Errorf("GPU op %s: %w", g.Op, err)
		}
		out, err := g.Out.Decode(parts)
		if prof != nil {
			var executor time.Duration
			for _, p := range remote {
				executor += p.Took
			}
			*prof = append(Profile{{PhaseClientEncode, encoded + fill}, {PhaseTransport, called - fill - executor}}, remote...)
			*prof = append(*prof, Phase{PhaseClientDecode, time.Since(t2)})
		}
		return out, err
	}
	carried := side != nil && !s.sides.wasSent(side.key)
	out, err := call(carried)
	// An op that does not hold the side data the request names (the
	// executor restarted, or evicted it) answers StatusNeedSide: send the
	// request again with the side data.
	if side != nil && errors.Is(err, protocol.ErrNeedSide) {
		carried = true
		out, err = call(true)
	}
	if errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrExecutorDied) || errors.Is(err, protocol.ErrFatal) {
		return zero, fmt.Errorf("%w: %w", ErrGPUUnavailable, err)
	}
	if err != nil {
		return zero, err
	}
	if side != nil {
		s.sides.markSent(side.key, carried)
	}
	return out, nil
}

// encodeRequest lays out a step request: its params and its input buffers.
func encodeRequest(main Parts, side *sideEntry, withSide bool, flags int) (params []byte, bufs [][]byte) {
	bufs = append([][]byte{main.Header}, main.Arrays...)
	params = []byte{requestVersion}
	key, nSide := "", 0
	if side != nil {
		key = side.key
		if withSide {
			bufs = append(append(bufs, side.parts.Header), side.parts.Arrays...)
			nSide = 1 + len(side.parts.Arrays)
		}
	}
	params = wire.AppendString(params, key)
	params = wire.AppendUvarint(params, len(main.Arrays))
	params = wire.AppendUvarint(params, nSide)
	params = wire.AppendUvarint(params, flags)
	return params, bufs
}

// readEnvelope reads the response of a step op: the last output is the
// envelope, the others hold the arrays. The header and arrays are copied out
// of shared memory into one Go allocation (the one copy back), which the
// output is decoded over. The executor's phases follow the header when the
// request asked for them.
func readEnvelope(outs [][]byte) (Parts, Profile, error) {
	if len(outs) == 0 {
		return Parts{}, nil, errors.New("no outputs")
	}
	d := wire.NewDecoder(outs[len(outs)-1], "step response")
	n := d.Uvarint()
	if d.Err() == nil && n > len(outs[len(outs)-1]) {
		d.Fail("%d arrays", n)
	}
	views := make([][]byte, 0, min(n, 64))
	total := 0
	for i := 0; i < n && d.Err() == nil; i++ {
		buf, off, l := d.Uvarint(), d.Uvarint(), d.Uvarint()
		if d.Err() != nil {
			break
		}
		if buf >= len(outs)-1 || off > len(outs[buf]) || l > len(outs[buf])-off {
			d.Fail("array %d at output %d, %d+%d: outside the outputs", i, buf, off, l)
			break
		}
		views = append(views, outs[buf][off:off+l])
		total += alignUp(l)
	}
	header := d.LenBytes()
	var phases Profile
	if d.Remaining() > 0 { // the executor's phases, when the request asked
		n := d.Uvarint()
		for i := 0; i < n && d.Err() == nil; i++ {
			phases = append(phases, Phase{Name: d.String(), Took: time.Duration(d.Uint64())})
		}
	}
	if err := d.Done(); err != nil {
		return Parts{}, nil, err
	}
	mem := alignedBytes(total + len(header))
	p := Parts{Arrays: make([][]byte, len(views))}
	at := 0
	for i, v := range views {
		p.Arrays[i] = mem[at : at+len(v) : at+len(v)]
		shm.Copy(p.Arrays[i], v)
		at += alignUp(len(v))
	}
	p.Header = mem[at : at+len(header)]
	copy(p.Header, header)
	return p, phases, nil
}

func alignUp(n int) int { return (n + 63) &^ 63 }

// alignedBytes returns n bytes starting at a multiple of 64.
func alignedBytes(n int) []byte {
	b := make([]byte, n+64)
	off := int((64 - uintptr(unsafe.Pointer(unsafe.SliceData(b)))%64) % 64)
	return b[off : off+n : off+n]
}

// sideCache is a step's client-side record of side data: each side value
// (by identity) encoded and hashed once, and which content keys this
// process has sent to its executor.
type sideCache struct {
	mu    sync.Mutex
	byPtr map[any]*sideEntry
	order []any
	sent  map[string]bool
	stats SideStats
}

// SideStats counts a step's side data in this process (a GPU
// implementation's Side: a model, a kNN reference set).
type SideStats struct {
	// Encoded is how many side values were encoded and hashed: once per
	// value, however many batches and DoFn instances use it.
	Encoded int
	// Sent is how many requests carried side data to an executor: once per
	// value and executor (again after an executor restart, when the new one
	// asks for it).
	Sent int
}

// SideStats returns the step's side-data counts in this process.
func (s *Step[In, Out]) SideStats() SideStats {
	s.sides.mu.Lock()
	defer s.sides.mu.Unlock()
	return s.sides.stats
}

type sideEntry struct {
	key   string
	parts Parts
}

// maxSideValues is how many side values a step remembers: a pipeline has
// one or two (a model, a reference set) per step.
const maxSideValues = 8

// sideOf returns the encoding and content key of in's side value, encoding
// and hashing it the first time its identity is seen; nil when in has none.
func sideOf[In any](c *sideCache, sd *Side[In], in In) (*sideEntry, error) {
	id := sd.Of(in)
	if id == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byPtr[id]; ok {
		return e, nil
	}
	parts, err := sd.Encode(in)
	if err != nil {
		return nil, err
	}
	e := &sideEntry{key: contentKey(parts), parts: parts}
	c.stats.Encoded++
	if c.byPtr == nil {
		c.byPtr = map[any]*sideEntry{}
	}
	if len(c.order) >= maxSideValues {
		delete(c.byPtr, c.order[0])
		c.order = c.order[1:]
	}
	c.byPtr[id] = e
	c.order = append(c.order, id)
	return e, nil
}

func (c *sideCache) wasSent(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent[key]
}

func (c *sideCache) markSent(key string, carried bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if carried {
		c.stats.Sent++
	}
	if c.sent == nil {
		c.sent = map[string]bool{}
	}
	c.sent[key] = true
}

// contentKey is the content key of side data: a hash of its header and
// arrays.
func contentKey(p Parts) string {
	h := sha256.New()
	h.Write(wire.AppendUvarint(nil, len(p.Header)))
	h.Write(p.Header)
	for _, a := range p.Arrays {
		h.Write(wire.AppendUvarint(nil, len(a)))
		h.Write(a)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
