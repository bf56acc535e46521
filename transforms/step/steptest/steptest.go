// Package steptest checks the contracts every registered step makes: its
// stub returns the CPU output's type and shape. It is used by the tests of
// package stubs for every step, and by any family's own tests.
package steptest

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// SameShape reports how a and b differ in type or shape; see step.SameShape.
func SameShape(a, b any) error { return step.SameShape(a, b) }

// Equal reports how a GPU output differs from the CPU's beyond tol; see step.Compare.
func Equal(cpu, gpu any, tol step.Tolerance) error { return step.Compare(cpu, gpu, tol) }

// Apply runs the implementation kind of the registered step name on in.
func Apply(name string, kind backend.Kind, in any) (any, error) {
	fn, err := step.Impl(name, kind)
	if err != nil {
		return nil, err
	}
	out := reflect.ValueOf(fn).Call([]reflect.Value{reflect.ValueOf(in)})
	if e, _ := out[1].Interface().(error); e != nil {
		return nil, e
	}
	return out[0].Interface(), nil
}

// CheckStubContract runs the CPU implementation and the stub of step d on
// d.Sample() and fails t unless both succeed with outputs of one type and shape.
func CheckStubContract(t testing.TB, d step.Def) {
	t.Helper()
	in := d.Sample()
	cpu, err := Apply(d.Name, backend.CPU, in)
	if err != nil {
		t.Fatalf("step %s: CPU on its sample: %v", d.Name, err)
	}
	stub, err := Apply(d.Name, backend.Stub, in)
	if err != nil {
		t.Fatalf("step %s: stub on its sample: %v", d.Name, err)
	}
	if err := SameShape(cpu, stub); err != nil {
		t.Fatalf("step %s: stub output differs from the CPU output in type or shape: %v", d.Name, err)
	}
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
