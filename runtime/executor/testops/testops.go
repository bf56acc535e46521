// Package testops holds ops that test and benchmark the GPU executor's transport.
//
// No step is behind them: echo, sum_f32, sleep, crash and fatal. The
// reference executor registers them, so the protocol's tests run against the
// real out-of-process binary.
package testops

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/runtime/executor/shm"
)

// The op names.
const (
	Echo    = "echo"
	Discard = "discard"
	SumF32  = "sum_f32"
	Sleep   = "sleep"
	Crash   = "crash"
	Fatal   = "fatal"
)

// CrashExitCode is the exit status of the executor after the crash op.
const CrashExitCode = 86

// Probes are the harmless ops: echo and discard, which move bytes and do
// nothing else. Executors serve them as transport probes (for benchmarks and
// diagnosis); the other test ops only test builds serve.
func Probes() []server.Op { return []server.Op{echo{}, discard{}} }

// All returns the test ops, the probes included.
func All() []server.Op {
	return []server.Op{echo{}, discard{}, sumF32{}, sleep{}, crash{}, fatal{}}
}

// discard takes its inputs (in place, in shared memory) and returns nothing:
// what a batch costs to move into the executor.
type discard struct{}

func (discard) Name() string { return Discard }

func (discard) Run(context.Context, []byte, [][]byte, server.Outputs) error { return nil }

// echo copies each input to an output of the same size.
type echo struct{}

func (echo) Name() string { return Echo }

func (echo) Run(ctx context.Context, params []byte, in [][]byte, out server.Outputs) error {
	return copyAll(in, out)
}

func copyAll(in [][]byte, out server.Outputs) error {
	sizes := make([]int, len(in))
	for i, b := range in {
		sizes[i] = len(b)
	}
	bufs, err := out(sizes...)
	if err != nil {
		return err
	}
	for i, b := range in {
		shm.Copy(bufs[i], b)
	}
	return nil
}

func (echo) SelfTest() ([]byte, [][]byte, func([][]byte) error) {
	in := [][]byte{[]byte("beamgpu"), {}}
	return nil, in, func(out [][]byte) error {
		if len(out) != 2 || string(out[0]) != "beamgpu" || len(out[1]) != 0 {
			return fmt.Errorf("echo: got %q, want %q", out, in)
		}
		return nil
	}
}

// sumF32 sums its one input, little-endian float32s, into one float32
// (accumulated in float64).
type sumF32 struct{}

func (sumF32) Name() string { return SumF32 }

func (sumF32) Run(ctx context.Context, params []byte, in [][]byte, out server.Outputs) error {
	if len(in) != 1 || len(in[0])%4 != 0 {
		return errors.New("sum_f32: want one input of little-endian float32s")
	}
	var sum float64
	for b := in[0]; len(b) >= 4; b = b[4:] {
		sum += float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	}
	bufs, err := out(4)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(bufs[0], math.Float32bits(float32(sum)))
	return nil
}

func (sumF32) SelfTest() ([]byte, [][]byte, func([][]byte) error) {
	return nil, [][]byte{F32Bytes(1, 2, 3.5)}, func(out [][]byte) error {
		if len(out) != 1 || len(out[0]) != 4 {
			return fmt.Errorf("sum_f32: got %d outputs, want one of 4 bytes", len(out))
		}
		if got := math.Float32frombits(binary.LittleEndian.Uint32(out[0])); got != 6.5 {
			return fmt.Errorf("sum_f32: got %v, want 6.5", got)
		}
		return nil
	}
}

// F32Bytes encodes float32s little-endian (the sum_f32 input).
func F32Bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// sleep waits params milliseconds (ASCII decimal), or until cancelled, then
// echoes its inputs.
type sleep struct{}

func (sleep) Name() string { return Sleep }

func (sleep) Run(ctx context.Context, params []byte, in [][]byte, out server.Outputs) error {
	ms, err := strconv.Atoi(string(params))
	if err != nil || ms < 0 {
		return fmt.Errorf("sleep: params %q: want milliseconds", params)
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return copyAll(in, out)
}

func (sleep) SelfTest() ([]byte, [][]byte, func([][]byte) error) {
	return []byte("1"), [][]byte{{1, 2, 3}}, func(out [][]byte) error {
		if len(out) != 1 || string(out[0]) != "\x01\x02\x03" {
			return fmt.Errorf("sleep: got %v, want [[1 2 3]]", out)
		}
		return nil
	}
}

// crash exits the process mid-request, like a segfault in a driver would.
// (No SelfTest: it would end the selftest.)
type crash struct{}

func (crash) Name() string { return Crash }

func (crash) Run(ctx context.Context, params []byte, in [][]byte, out server.Outputs) error {
	fmt.Fprintln(os.Stderr, "beamgpu-executor: crash op: exiting mid-request")
	os.Exit(CrashExitCode)
	return nil
}

// fatal fails with ErrFatal, like a sticky CUDA error.
type fatal struct{}

func (fatal) Name() string { return Fatal }

func (fatal) Run(ctx context.Context, params []byte, in [][]byte, out server.Outputs) error {
	return fmt.Errorf("%w: fatal op (as after a sticky CUDA error)", protocol.ErrFatal)
}
