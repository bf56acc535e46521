package step

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Phase is the time one part of a GPU call took.
type Phase struct {
	Name string
	Took time.Duration
}

// Profile is a GPU call's phases, in order.
type Profile []Phase

// The phases of a call (Profile): the client's, the transport's, and the
// executor's (its device phases are runtime/executor/gpu's PhaseHostToDevice,
// PhaseKernel and PhaseDeviceToHost, or PhaseCPU on the reference executor).
const (
	PhaseClientEncode   = "client encode"   // the codec, and the copy into shared memory
	PhaseTransport      = "transport"       // the round trip less the executor's time
	PhaseExecutorDecode = "executor decode" // the codec's views of the batch, and its side data
	PhaseCPU            = "cpu"             // the CPU function (the reference executor)
	PhaseExecutorOther  = "executor other"  // the launch's host time not spent on the device
	PhaseExecutorEncode = "executor encode" // the output's codec and the response
	PhaseClientDecode   = "client decode"   // the copy out of shared memory, and the codec
)

// Total is the sum of the phases.
func (p Profile) Total() time.Duration {
	var t time.Duration
	for _, ph := range p {
		t += ph.Took
	}
	return t
}

func (p Profile) String() string {
	parts := make([]string, len(p))
	for i, ph := range p {
		parts[i] = fmt.Sprintf("%s %s", ph.Name, ph.Took.Round(time.Microsecond))
	}
	return strings.Join(parts, ", ")
}

// Profile runs in on the GPU executor once, as Offload does but without
// splitting, and returns the output with the time of each phase of the call.
func (s *Step[In, Out]) Profile(ctx context.Context, in In) (Out, Profile, error) {
	var zero Out
	if s.def.GPU == nil {
		return zero, nil, fmt.Errorf("step %q has no GPU op", s.def.Name)
	}
	var p Profile
	out, err := s.call(ctx, in, &p)
	return out, p, err
}

// ProfileAny is Profile for an input of any type (in must be the step's In).
func (s *Step[In, Out]) ProfileAny(ctx context.Context, in any) (Profile, error) {
	x, ok := in.(In)
	if !ok {
		return nil, fmt.Errorf("step %q takes a %T, not a %T", s.def.Name, *new(In), in)
	}
	_, p, err := s.Profile(ctx, x)
	return p, err
}

// OffloadAny is Offload for an input of any type (in must be the step's In).
func (s *Step[In, Out]) OffloadAny(ctx context.Context, in any) (any, error) {
	x, ok := in.(In)
	if !ok {
		return nil, fmt.Errorf("step %q takes a %T, not a %T", s.def.Name, *new(In), in)
	}
	return s.Offload(ctx, x)
}

// BenchInput returns the step's benchmark input (Def.Bench) and its work.
func (s *Step[In, Out]) BenchInput(full bool) (any, Work, bool) {
	if s.def.Bench == nil {
		return nil, Work{}, false
	}
	in, w := s.def.Bench(full)
	return in, w, true
}

// Work is what a benchmark input asks of the device, for its floor.
type Work struct {
	// Name describes the input, e.g. "4096x4096, 4 bands".
	Name string
	// FLOPs are its floating-point operations in matrix products (0 for an
	// elementwise step): at the device's product rate, the compute floor.
	FLOPs float64
}

// Sizes returns the bytes of in (without its side data, which crosses once)
// and of its output as they cross the executor boundary (the codecs'
// parts), for the transfer floor, and the bytes of its side data.
func (s *Step[In, Out]) Sizes(in any) (inBytes, outBytes, sideBytes int, err error) {
	x, ok := in.(In)
	if !ok || s.def.GPU == nil {
		return 0, 0, 0, fmt.Errorf("step %q: no GPU op, or not a %T", s.def.Name, *new(In))
	}
	p, err := s.def.GPU.In.Encode(x)
	if err != nil {
		return 0, 0, 0, err
	}
	if sd := s.def.GPU.Side; sd != nil && sd.Of(x) != nil {
		sp, err := sd.Encode(x)
		if err != nil {
			return 0, 0, 0, err
		}
		sideBytes = sp.Size()
	}
	out, err := Call(s.def.CPU, x)
	if err != nil {
		return 0, 0, 0, err
	}
	op, err := s.def.GPU.Out.Encode(out)
	return p.Size(), op.Size(), sideBytes, err
}
