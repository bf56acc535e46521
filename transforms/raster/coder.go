package raster

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/transforms/step/wire"
)

// The tile types carry the bulk of a pipeline's bytes, so they have compact
// coders (a header, then the planes as raw little-endian arrays, a memmove
// on little-endian hosts) instead of Beam's per-field schema coding.
func init() {
	beam.RegisterCoder(reflect.TypeOf(DNTile{}), EncodeDNTile, DecodeDNTile)
	beam.RegisterCoder(reflect.TypeOf(Tile{}), EncodeTile, DecodeTile)
	beam.RegisterCoder(reflect.TypeOf(RGBATile{}), EncodeRGBATile, DecodeRGBATile)
}

const coderVersion = 1

func appendHeader(b []byte, scene string, sw, sh int, r Rect) []byte {
	b = append(b, coderVersion)
	b = wire.AppendString(b, scene)
	for _, v := range []int{sw, sh, r.X, r.Y, r.W, r.H} {
		b = wire.AppendUvarint(b, v)
	}
	return b
}

func readHeader(d *wire.Decoder) (scene string, sw, sh int, r Rect) {
	if v := d.Bytes(1); d.Err() == nil && v[0] != coderVersion {
		d.Fail("version %d, want %d", v[0], coderVersion)
	}
	scene = d.String()
	sw, sh = d.Uvarint(), d.Uvarint()
	r = Rect{X: d.Uvarint(), Y: d.Uvarint(), W: d.Uvarint(), H: d.Uvarint()}
	if d.Err() == nil && r.Area() > maxPixels {
		d.Fail("window %v too large", r)
	}
	return
}

// EncodeDNTile is the coder of DNTile.
func EncodeDNTile(t DNTile) ([]byte, error) {
	if len(t.Cal) != len(t.DN) {
		return nil, errors.New("raster coder: DNTile calibrations and planes differ in number")
	}
	b := make([]byte, 0, 64+len(t.DN)*(24+2*t.Area()))
	b = appendHeader(b, t.Scene, t.SceneW, t.SceneH, t.Rect)
	b = wire.AppendFloat64(b, t.SunElevation)
	b = wire.AppendUvarint(b, len(t.DN))
	for i, p := range t.DN {
		if len(p) != t.Area() {
			return nil, fmt.Errorf("raster coder: %s plane %d has %d pixels, want %d", t.ID(), i, len(p), t.Area())
		}
		c := t.Cal[i]
		b = wire.AppendUvarint(b, c.Band)
		b = wire.AppendFloat64(b, c.Mult)
		b = wire.AppendFloat64(b, c.Add)
		b = wire.AppendPlane(b, p)
	}
	return b, nil
}

// DecodeDNTile is the decoder of DNTile.
func DecodeDNTile(data []byte) (DNTile, error) {
	d := wire.NewDecoder(data, "raster DNTile")
	var t DNTile
	t.Scene, t.SceneW, t.SceneH, t.Rect = readHeader(d)
	t.SunElevation = d.Float64()
	n := d.Uvarint()
	for i := 0; i < n && d.Err() == nil; i++ {
		c := Calibration{Band: d.Uvarint(), Mult: d.Float64(), Add: d.Float64()}
		p := wire.Plane[uint16](d, t.Area())
		if d.Err() == nil {
			t.Cal = append(t.Cal, c)
			t.DN = append(t.DN, p)
		}
	}
	return t, d.Done()
}

// EncodeTile is the coder of Tile.
func EncodeTile(t Tile) ([]byte, error) {
	if len(t.Names) != len(t.Data) {
		return nil, errors.New("raster coder: Tile names and planes differ in number")
	}
	b := make([]byte, 0, 64+len(t.Data)*(8+4*t.Area()))
	b = appendHeader(b, t.Scene, t.SceneW, t.SceneH, t.Rect)
	b = wire.AppendUvarint(b, len(t.Data))
	for i, p := range t.Data {
		if len(p) != t.Area() {
			return nil, fmt.Errorf("raster coder: %s plane %s has %d pixels, want %d", t.ID(), t.Names[i], len(p), t.Area())
		}
		b = wire.AppendString(b, t.Names[i])
		b = wire.AppendPlane(b, p)
	}
	return b, nil
}

// DecodeTile is the decoder of Tile.
func DecodeTile(data []byte) (Tile, error) {
	d := wire.NewDecoder(data, "raster Tile")
	var t Tile
	t.Scene, t.SceneW, t.SceneH, t.Rect = readHeader(d)
	n := d.Uvarint()
	for i := 0; i < n && d.Err() == nil; i++ {
		name := d.String()
		p := wire.Plane[float32](d, t.Area())
		if d.Err() == nil {
			t.Names = append(t.Names, name)
			t.Data = append(t.Data, p)
		}
	}
	return t, d.Done()
}

// EncodeRGBATile is the coder of RGBATile.
func EncodeRGBATile(t RGBATile) ([]byte, error) {
	if len(t.Pix) != 4*t.Area() {
		return nil, fmt.Errorf("raster coder: %s has %d bytes of pixels, want %d", t.ID(), len(t.Pix), 4*t.Area())
	}
	b := make([]byte, 0, 64+len(t.Pix))
	b = appendHeader(b, t.Scene, t.SceneW, t.SceneH, t.Rect)
	return append(b, t.Pix...), nil
}

// DecodeRGBATile is the decoder of RGBATile.
func DecodeRGBATile(data []byte) (RGBATile, error) {
	d := wire.NewDecoder(data, "raster RGBATile")
	var t RGBATile
	t.Scene, t.SceneW, t.SceneH, t.Rect = readHeader(d)
	t.Pix = wire.Plane[uint8](d, 4*t.Area())
	return t, d.Done()
}
