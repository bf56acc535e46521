package step

import (
	"fmt"
	"math"
	"reflect"
)

// compare is Compare, or where the tolerance has a Check, the shape check
// and the Check.
func (tol Tolerance) compare(in, cpu, gpu any) error {
	if tol.Check == nil {
		return Compare(cpu, gpu, tol)
	}
	if err := SameShape(cpu, gpu); err != nil {
		return err
	}
	return tol.Check(in, cpu, gpu)
}

// CompareWith reports how the GPU output of input in differs from the CPU
// output beyond tol: Compare, or tol.Check where it has one.
func CompareWith(in, cpu, gpu any, tol Tolerance) error { return tol.compare(in, cpu, gpu) }

// Compare reports how a GPU output differs from the CPU output beyond tol:
// the same type and shape (as SameShape) and every number within the
// tolerance. It returns nil when they agree. The equivalence tests and the
// executor's selftest use it.
func Compare(cpu, gpu any, tol Tolerance) error {
	if err := SameShape(cpu, gpu); err != nil {
		return err
	}
	if tol.Rel == 0 {
		tol.Rel = 1e-5
	}
	return equal("out", reflect.ValueOf(cpu), reflect.ValueOf(gpu), tol)
}

func equal(path string, c, g reflect.Value, tol Tolerance) error {
	switch c.Kind() {
	case reflect.Pointer, reflect.Interface:
		if c.IsNil() {
			return nil
		}
		return equal(path, c.Elem(), g.Elem(), tol)
	case reflect.Struct:
		for i := 0; i < c.NumField(); i++ {
			if c.Type().Field(i).IsExported() {
				if err := equal(path+"."+c.Type().Field(i).Name, c.Field(i), g.Field(i), tol); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if k := c.Type().Elem().Kind(); (k == reflect.Float32 || k == reflect.Float64) && tol.Norm > 0 {
			return normClose(path, c, g, tol.Norm)
		}
		for i := 0; i < c.Len(); i++ {
			if err := equal(fmt.Sprintf("%s[%d]", path, i), c.Index(i), g.Index(i), tol); err != nil {
				return err
			}
		}
	case reflect.Map:
		for _, k := range c.MapKeys() {
			if err := equal(fmt.Sprintf("%s[%v]", path, k), c.MapIndex(k), g.MapIndex(k), tol); err != nil {
				return err
			}
		}
	case reflect.Float32, reflect.Float64:
		a, b := c.Float(), g.Float()
		if math.IsNaN(a) || math.IsNaN(b) {
			if math.IsNaN(a) != math.IsNaN(b) {
				return fmt.Errorf("%s: CPU %v, GPU %v", path, a, b)
			}
			return nil
		}
		if a != b && math.Abs(a-b) > tol.Rel*math.Max(math.Abs(a), math.Abs(b)) {
			return fmt.Errorf("%s: CPU %v, GPU %v (relative error %.3g > %g)", path, a, b, math.Abs(a-b)/math.Max(math.Abs(a), math.Abs(b)), tol.Rel)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if c.Int() != g.Int() {
			return fmt.Errorf("%s: CPU %d, GPU %d", path, c.Int(), g.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		d := int64(c.Uint()) - int64(g.Uint())
		if d < -int64(tol.IntDiff) || d > int64(tol.IntDiff) {
			return fmt.Errorf("%s: CPU %d, GPU %d", path, c.Uint(), g.Uint())
		}
	case reflect.Bool:
		if c.Bool() != g.Bool() {
			return fmt.Errorf("%s: CPU %v, GPU %v", path, c.Bool(), g.Bool())
		}
	}
	return nil
}

// normClose bounds the relative error of a float array as a whole; NaNs must
// sit at the same places.
func normClose(path string, c, g reflect.Value, bound float64) error {
	var diff, ref float64
	for i := 0; i < c.Len(); i++ {
		a, b := c.Index(i).Float(), g.Index(i).Float()
		if math.IsNaN(a) || math.IsNaN(b) {
			if math.IsNaN(a) != math.IsNaN(b) {
				return fmt.Errorf("%s[%d]: CPU %v, GPU %v", path, i, a, b)
			}
			continue
		}
		diff += (a - b) * (a - b)
		ref += a * a
	}
	if diff == 0 {
		return nil
	}
	if rel := math.Sqrt(diff / ref); ref == 0 || rel > bound {
		return fmt.Errorf("%s: relative norm error %.3g > %g", path, rel, bound)
	}
	return nil
}

// SameShape reports how a and b differ in type or shape: the dynamic types,
// the lengths of every slice and map, and the strings (names and identities)
// must be equal; numbers may differ. It returns nil when they agree.
func SameShape(a, b any) error {
	return sameShape("out", reflect.ValueOf(a), reflect.ValueOf(b))
}

func sameShape(path string, a, b reflect.Value) error {
	if a.IsValid() != b.IsValid() {
		return fmt.Errorf("%s: one side is nil", path)
	}
	if !a.IsValid() {
		return nil
	}
	if a.Type() != b.Type() {
		return fmt.Errorf("%s: type %v vs %v", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() != b.IsNil() {
			return fmt.Errorf("%s: nil vs non-nil", path)
		}
		if a.IsNil() {
			return nil
		}
		return sameShape(path, a.Elem(), b.Elem())
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Errorf("%s: length %d vs %d", path, a.Len(), b.Len())
		}
		if k := a.Type().Elem().Kind(); k >= reflect.Bool && k <= reflect.Complex128 {
			return nil // numbers: values are free
		}
		for i := 0; i < a.Len(); i++ {
			if err := sameShape(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if a.Len() != b.Len() {
			return fmt.Errorf("%s: %d keys vs %d", path, a.Len(), b.Len())
		}
		for _, k := range a.MapKeys() {
			if err := sameShape(fmt.Sprintf("%s[%v]", path, k), a.MapIndex(k), b.MapIndex(k)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if err := sameShape(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i)); err != nil {
				return err
			}
		}
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Errorf("%s: %q vs %q", path, a.String(), b.String())
		}
	}
	return nil
}
