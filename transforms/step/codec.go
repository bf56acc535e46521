package step

import (
	"fmt"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/wire"
)

// Parts is a batch as it crosses the executor boundary: a small header and
// raw arrays (see wire.Parts).
type Parts = wire.Parts

// Codec moves values of type T across the executor boundary. Encode returns
// the header and views of T's arrays (no copies: the client copies each
// array once, into shared memory); Decode builds a T whose arrays are views
// of the Parts' (no copies: the executor reads a batch where it lies, and the
// device copies it from there). The same Codec is the Beam coder of T
// (wire.Join), so a family writes one encoding per type.
type Codec[T any] struct {
	Encode func(T) (Parts, error)
	Decode func(Parts) (T, error)
}

// Marshal encodes v as one buffer (wire.Join of its parts): a Beam coder's
// encoding, for a type whose codec is c.
func (c Codec[T]) Marshal(v T) ([]byte, error) {
	p, err := c.Encode(v)
	if err != nil {
		return nil, err
	}
	return wire.Join(p), nil
}

// Unmarshal decodes what Marshal wrote; the value's arrays are views of b.
func (c Codec[T]) Unmarshal(b []byte) (T, error) {
	p, err := wire.ReadParts(b, fmt.Sprintf("%T coder", *new(T)))
	if err != nil {
		var zero T
		return zero, err
	}
	return c.Decode(p)
}

// GPU declares a step's GPU op.
type GPU[In, Out any] struct {
	// Op is the op's name on the executor, "<family>.<step>" by convention,
	// e.g. "raster.toa_ndvi".
	Op string
	// Hints are the resource hints the step carries when it runs on the GPU
	// (accelerator and min_ram), for right fitting.
	Hints backend.Hints
	// In and Out move the step's input and output.
	In  Codec[In]
	Out Codec[Out]
	// Side, when set, is the part of the input that many batches share (a
	// model's weights, a kNN reference set): it crosses once per content,
	// not once per batch.
	Side *Side[In]
	// Split and Merge, when set, let a batch the executor cannot hold (out of
	// memory: its budget, or the device's) run in two halves: Split cuts it
	// in two (ok false when it cannot be cut further) and Merge joins the two
	// outputs.
	Split func(In) (a, b In, ok bool)
	Merge func(a, b Out) (Out, error)
}

// Side is the shared part of a step's input. The client encodes and hashes
// it once per value (its identity, Of) and sends it the first time an
// executor needs it, under its content key; the executor decodes it once,
// keeps the most recent few, and a launch keeps its device copy resident
// (gpu.Call.Resident) under the decoded value.
type Side[In any] struct {
	// Of returns the identity of in's side value (the pointer many batches
	// share); nil when in has none.
	Of func(In) any
	// Encode encodes in's side value.
	Encode func(In) (Parts, error)
	// Decode decodes a side value (on the executor; the Parts are copies it
	// may keep).
	Decode func(Parts) (any, error)
	// With returns in (as the In codec decoded it, without its side value)
	// with side put in.
	With func(in In, side any) (In, error)
}

// Launch is a step's GPU implementation: it runs one batch on c (uploads
// its arrays, launches the family's kernels, downloads the results into
// host memory from c.Output) and returns the output. Its errors from c are
// the device's (out of memory: the client splits the batch; fatal: the
// executor restarts); a batch it rejects gets the CPU function's error, so
// that both implementations fail alike (a launch may call the CPU function
// for that).
type Launch[In, Out any] func(c gpu.Call, in In) (Out, error)

// RegisterLaunch registers the CUDA launch of s's GPU op. Families call it
// from their files behind the cuda build tag, so that only the CUDA
// executor has launches; the reference executor serves every GPU op with
// the CPU function instead. It panics if s has no GPU op or a launch
// already.
func RegisterLaunch[In, Out any](s *Step[In, Out], l Launch[In, Out]) {
	if s.def.GPU == nil {
		panic(fmt.Sprintf("step.RegisterLaunch: step %q has no GPU op", s.def.Name))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.launch != nil {
		panic(fmt.Sprintf("step.RegisterLaunch: step %q has a launch already", s.def.Name))
	}
	s.launch = l
}

// HasLaunch implements Any.
func (s *Step[In, Out]) HasLaunch() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.launch != nil
}

func (s *Step[In, Out]) getLaunch() Launch[In, Out] {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.launch
}

// ApplyLaunch implements Any.
func (s *Step[In, Out]) ApplyLaunch(c gpu.Call, in any) (any, error) {
	x, ok := in.(In)
	if !ok {
		return nil, fmt.Errorf("step %q takes a %T, not a %T", s.def.Name, *new(In), in)
	}
	l := s.getLaunch()
	if l == nil {
		return nil, fmt.Errorf("step %q has no launch registered (built without the cuda tag?)", s.def.Name)
	}
	return Call(func(x In) (Out, error) { return l(c, x) }, x)
}
