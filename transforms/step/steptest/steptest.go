// Package steptest checks the contracts every registered step makes.
//
// It serves the tests of package stubs, of the families, and of anyone's
// steps:
//
//   - its stub returns the CPU output's type and shape (CheckStubContract);
//   - its GPU implementation, through a real out-of-process executor,
//     computes what its CPU function computes within its tolerance (Equal;
//     the test binary serves as the reference executor, MaybeServe);
//   - its CUDA launch, run against a gpu.Recorder, launches kernels that
//     exist in its family's PTX with the right arguments (CheckLaunch; in a
//     build with the cuda tag, no GPU needed).
package steptest

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/executortest"
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// SameShape reports how a and b differ in type or shape; see step.SameShape.
func SameShape(a, b any) error { return step.SameShape(a, b) }

// Equal reports how the GPU output of in differs from the CPU's beyond tol
// (step.CompareWith).
func Equal(in, cpu, gpu any, tol step.Tolerance) error { return step.CompareWith(in, cpu, gpu, tol) }

// Apply runs the implementation kind of step s on in.
func Apply(s step.Any, kind backend.Kind, in any) (any, error) { return s.Apply(kind, in) }

// CheckStubContract runs the CPU implementation and the stub of step s on
// its sample and fails t unless both succeed with outputs of one type and
// shape.
func CheckStubContract(t testing.TB, s step.Any) {
	t.Helper()
	in := s.SampleInput()
	cpu, err := s.Apply(backend.CPU, in)
	if err != nil {
		t.Fatalf("step %s: CPU on its sample: %v", s.Name(), err)
	}
	stub, err := s.Apply(backend.Stub, in)
	if err != nil {
		t.Fatalf("step %s: stub on its sample: %v", s.Name(), err)
	}
	if err := SameShape(cpu, stub); err != nil {
		t.Fatalf("step %s: stub output differs from the CPU output in type or shape: %v", s.Name(), err)
	}
}

// CheckLaunch runs the CUDA launch of step s on its sample against a
// gpu.Recorder and fails t unless it runs: every kernel it launches is in
// its module's PTX with the number of arguments passed, and every device
// address it uses lies in memory it holds. The outputs are not checked (no
// kernel runs). It returns the recorder, to look at the launches.
func CheckLaunch(t testing.TB, s step.Any) *gpu.Recorder {
	t.Helper()
	if !s.HasLaunch() {
		t.Fatalf("step %s: GPU op %s has no CUDA launch registered", s.Name(), s.Backend().GPUOp)
	}
	r := gpu.NewRecorder()
	if _, err := s.ApplyLaunch(r, s.SampleInput()); err != nil {
		t.Fatalf("step %s: launch on its sample: %v", s.Name(), err)
	}
	return r
}

// CheckLaunches runs CheckLaunch on every registered step with a GPU op (a
// family's test binary registers its family's), and fails t if there is
// none: in a build with the cuda tag, every GPU op has a launch that matches
// its PTX. A family's launch test is this one call.
func CheckLaunches(t *testing.T) {
	t.Helper()
	checked := 0
	for _, s := range step.All() {
		if s.Backend().GPUOp == "" {
			continue
		}
		t.Run(s.Name(), func(t *testing.T) { CheckLaunch(t, s) })
		checked++
	}
	if checked == 0 {
		t.Fatal("no step with a GPU op is registered")
	}
}

// MaybeServe, in a test binary started again as the reference executor (by
// UseExecutor), serves the reference op of every registered GPU step (and
// the transport's test ops), then exits; elsewhere it returns at once. Call
// it first thing in TestMain.
func MaybeServe() {
	executortest.MaybeServe(func() []server.Op {
		var ops []server.Op
		for _, s := range step.All() {
			if op := s.ReferenceOp(); op != nil {
				ops = append(ops, op)
			}
		}
		return ops
	})
}

// UseExecutor points the steps' GPU implementations at this test binary,
// started again as the reference executor, and returns the backend.Executor
// for backend.Config.Executor.
func UseExecutor() backend.Executor {
	return step.UseExecutor(executortest.Use())
}

// AllZero reports the first non-zero computed number inside v (a stub's
// output): floats and unsigned integers (pixels, DNs) in slices must be
// zero. Scalars of structs (names, windows, sizes, calibration) and signed
// integers (labels, indices, which stubs pass through or set to class 0)
// are metadata.
func AllZero(v any) error {
	return allZero("out", reflect.ValueOf(v))
}

func allZero(path string, v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return allZero(path, v.Elem())
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if err := allZero(fmt.Sprintf("%s[%d]", path, i), v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		// Struct fields other than slices are metadata (names, windows,
		// sizes) that a stub copies; only the bulk data must be zero.
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); v.Type().Field(i).IsExported() && (f.Kind() == reflect.Slice || f.Kind() == reflect.Struct) {
				if err := allZero(path+"."+v.Type().Field(i).Name, f); err != nil {
					return err
				}
			}
		}
	case reflect.Float32, reflect.Float64:
		if v.Float() != 0 {
			return fmt.Errorf("%s = %v", path, v.Float())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Uint() != 0 {
			return fmt.Errorf("%s = %v", path, v.Uint())
		}
	}
	return nil
}
