package onnx

import (
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The element types, for the test: each family's value says which it
// stands for.
type typed interface{ types() (t, wide nd.DType) }

func (floats[T]) types() (t, wide nd.DType)     { return nd.TypeOf[T](), nd.Undefined }
func (ints[T]) types() (t, wide nd.DType)       { return nd.TypeOf[T](), nd.Undefined }
func (numbers[T, W]) types() (t, wide nd.DType) { return nd.TypeOf[T](), nd.TypeOf[W]() }

// Each family's dispatch returns the value of the array's own type (and
// numbers the widest type of its kind), and refuses every other type with
// the one error, naming the operator.
func TestDispatch(t *testing.T) {
	all := []nd.DType{nd.Float32, nd.Float64, nd.Int8, nd.Int16, nd.Int32, nd.Int64, nd.Uint8, nd.Uint16,
		nd.Uint32, nd.Uint64, nd.Bool, nd.Float16, nd.BFloat16, nd.String, nd.Undefined}
	for _, dt := range all {
		check := func(family string, v typed, err error, in bool, wantWide nd.DType) {
			if !in {
				assert.EqualError(t, err, "Op is not supported for "+dt.String(), "%s of %v", family, dt)
				return
			}
			require.NoError(t, err, "%s of %v", family, dt)
			got, wide := v.types()
			assert.Equal(t, dt, got, "%s of %v", family, dt)
			assert.Equal(t, wantWide, wide, "%s of %v: the widest type of its kind", family, dt)
		}
		wide := nd.Uint64
		switch {
		case dt.IsFloat():
			wide = nd.Float64
		case dt.IsSigned():
			wide = nd.Int64
		}
		f, err := floating[typed]("Op", dt)
		check("floating", f, err, dt == nd.Float32 || dt == nd.Float64, nd.Undefined)
		i, err := integer[typed]("Op", dt)
		check("integer", i, err, dt.IsInt(), nd.Undefined)
		n, err := numeric[typed]("Op", dt)
		check("numeric", n, err, dt == nd.Float32 || dt == nd.Float64 || dt.IsInt(), wide)
	}
}
