//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
)

// The device's out-of-memory failures (a request the budget refuses,
// CUDA_ERROR_OUT_OF_MEMORY, CUBLAS_STATUS_ALLOC_FAILED) match
// protocol.ErrOutOfMemory: the device is still usable, split the batch and
// retry; errors.As with *OutOfMemoryError gives the sizes. A sticky CUDA
// error (an illegal address in a kernel, an uncorrectable ECC error, a lost
// MPS server) matches protocol.ErrFatal: the context is unusable, every
// later call of the Device returns the same error, and the process must
// exit so that the executor is restarted; errors.As with *FatalError gives
// the operation and the CUDA error.

// ErrClosed is returned by the methods of a closed Device.
var ErrClosed = errors.New("cuda: device closed")

// OutOfMemoryError is an allocation refused by the budget (Err nil) or by CUDA.
type OutOfMemoryError struct {
	Op        string // the operation that allocated, e.g. "dense"
	Requested int64  // bytes asked for
	InUse     int64  // bytes this Device held when it asked
	Budget    int64  // the Device's budget
	Err       error  // the CUDA or cuBLAS error; nil when the budget refused
}

func (e *OutOfMemoryError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("cuda: %s: out of device memory: %d bytes requested, %d of the budget of %d in use",
			e.Op, e.Requested, e.InUse, e.Budget)
	}
	return fmt.Sprintf("cuda: %s: out of device memory (%v): %d bytes requested, %d of the budget of %d in use",
		e.Op, e.Err, e.Requested, e.InUse, e.Budget)
}

// Is makes errors.Is(err, protocol.ErrOutOfMemory) true.
func (e *OutOfMemoryError) Is(target error) bool { return target == protocol.ErrOutOfMemory }

func (e *OutOfMemoryError) Unwrap() error { return e.Err }

// FatalError is a sticky CUDA error.
type FatalError struct {
	Op  string
	Err error
}

func (e *FatalError) Error() string {
	return fmt.Sprintf("cuda: %s: %v: fatal, the CUDA context is unusable: restart the process", e.Op, e.Err)
}

// Is makes errors.Is(err, protocol.ErrFatal) true.
func (e *FatalError) Is(target error) bool { return target == protocol.ErrFatal }

func (e *FatalError) Unwrap() error { return e.Err }

// cudaCode returns the CUresult carried by err: a driverError of this package, or
// gorgonia.org/cu's (unexported, int-based) result type, possibly wrapped.
func cudaCode(err error) (int, bool) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if de, ok := e.(driverError); ok {
			return int(de), true
		}
		v := reflect.ValueOf(e)
		if v.Kind() == reflect.Int && v.Type().PkgPath() == "gorgonia.org/cu" {
			return int(v.Int()), true
		}
	}
	return 0, false
}

// classify turns a CUDA or cuBLAS error of operation op into an *OutOfMemoryError, a *FatalError
// or a plain error naming op.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var oom *OutOfMemoryError
	var fatal *FatalError
	if errors.As(err, &oom) || errors.As(err, &fatal) {
		return err
	}
	if code, ok := cudaCode(err); ok {
		switch {
		case code == codeOutOfMemory:
			return &OutOfMemoryError{Op: op, Err: err}
		case stickyCodes[code]:
			return &FatalError{Op: op, Err: err}
		}
	}
	var st blasStatus
	if errors.As(err, &st) && st == blasAllocFailed {
		return &OutOfMemoryError{Op: op, Err: err}
	}
	return fmt.Errorf("cuda: %s: %w", op, err)
}
