package wire_test

import (
	"math"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	var b []byte
	b = wire.AppendString(b, "scene")
	b = wire.AppendFloat64(b, 58.9)
	b = wire.AppendUvarint(b, 3)
	b = wire.AppendPlane(b, []float32{1, float32(math.NaN()), -2})
	b = wire.AppendPlane(b, []uint16{7, 65535})
	b = wire.AppendPlane(b, []int32{-1, 9})

	d := wire.NewDecoder(b, "test")
	assert.Equal(t, "scene", d.String())
	assert.Equal(t, 58.9, d.Float64())
	n := d.Uvarint()
	f := wire.Plane[float32](d, n)
	assert.Equal(t, float32(1), f[0])
	assert.True(t, math.IsNaN(float64(f[1])))
	assert.Equal(t, []uint16{7, 65535}, wire.Plane[uint16](d, 2))
	assert.Equal(t, []int32{-1, 9}, wire.Plane[int32](d, 2))
	require.NoError(t, d.Done())
}

func TestMalformed(t *testing.T) {
	b := wire.AppendPlane(wire.AppendUvarint(nil, 4), []float32{1, 2})
	d := wire.NewDecoder(b, "test")
	_ = wire.Plane[float32](d, d.Uvarint())
	assert.EqualError(t, d.Err(), "test coder: truncated: need 16 bytes, have 8")

	d = wire.NewDecoder([]byte{1, 2}, "test")
	d.Bytes(1)
	assert.EqualError(t, d.Done(), "test coder: 1 trailing bytes")

	d = wire.NewDecoder([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "test")
	d.Uvarint()
	assert.EqualError(t, d.Err(), "test coder: bad length")
}
