package raster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// The tile types carry the bulk of a pipeline's bytes, so they have compact
// little-endian coders (a header, then the planes as raw arrays) instead of
// Beam's per-field schema coding.
func init() {
	beam.RegisterCoder(reflect.TypeOf(DNTile{}), EncodeDNTile, DecodeDNTile)
	beam.RegisterCoder(reflect.TypeOf(Tile{}), EncodeTile, DecodeTile)
	beam.RegisterCoder(reflect.TypeOf(RGBATile{}), EncodeRGBATile, DecodeRGBATile)
}

const coderVersion = 1

var le = binary.LittleEndian

func appendHeader(b []byte, scene string, sw, sh int, r Rect) []byte {
	b = append(b, coderVersion)
	b = binary.AppendUvarint(b, uint64(len(scene)))
	b = append(b, scene...)
	for _, v := range []int{sw, sh, r.X, r.Y, r.W, r.H} {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return b
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("raster coder: "+format, args...)
	}
}

func (d *decoder) uvarint() int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > math.MaxInt32 {
		d.fail("bad length")
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.fail("truncated: need %d bytes, have %d", n, len(d.b))
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) float64() float64 {
	b := d.bytes(8)
	if d.err != nil {
		return 0
	}
	return math.Float64frombits(le.Uint64(b))
}

func (d *decoder) header() (scene string, sw, sh int, r Rect) {
	if v := d.bytes(1); d.err == nil && v[0] != coderVersion {
		d.fail("version %d, want %d", v[0], coderVersion)
	}
	scene = string(d.bytes(d.uvarint()))
	sw, sh = d.uvarint(), d.uvarint()
	r = Rect{X: d.uvarint(), Y: d.uvarint(), W: d.uvarint(), H: d.uvarint()}
	if d.err == nil && r.Area() > maxPixels {
		d.fail("window %v too large", r)
	}
	return
}

func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	return d.err
}

// EncodeDNTile is the coder of DNTile.
func EncodeDNTile(t DNTile) ([]byte, error) {
	if len(t.Cal) != len(t.DN) {
		return nil, errors.New("raster coder: DNTile calibrations and planes differ in number")
	}
	b := make([]byte, 0, 64+len(t.DN)*(24+2*t.Area()))
	b = appendHeader(b, t.Scene, t.SceneW, t.SceneH, t.Rect)
	b = le.AppendUint64(b, math.Float64bits(t.SunElevation))
	b = binary.AppendUvarint(b, uint64(len(t.DN)))
	for i, p := range t.DN {
		if len(p) != t.Area() {
			return nil, fmt.Errorf("raster coder: %s plane %d has %d pixels, want %d", t.ID(), i, len(p), t.Area())
		}
		c := t.Cal[i]
		b = binary.AppendUvarint(b, uint64(c.Band))
		b = le.AppendUint64(b, math.Float64bits(c.Mult))
		b = le.AppendUint64(b, math.Float64bits(c.Add))
		b = appendPlane(b, p)
	}
	return b, nil
}

// DecodeDNTile is the decoder of DNTile.
func DecodeDNTile(data []byte) (DNTile, error) {
	d := &decoder{b: data}
	var t DNTile
	t.Scene, t.SceneW, t.SceneH, t.Rect = d.header()
	t.SunElevation = d.float64()
	n := d.uvarint()
	for i := 0; i < n && d.err == nil; i++ {
		band := d.uvarint()
		mult := d.float64()
		add := d.float64()
		raw := d.bytes(2 * t.Area())
		if d.err != nil {
			break
		}
		p := make([]uint16, t.Area())
		decodePlane(p, raw)
		t.Cal = append(t.Cal, Calibration{Band: band, Mult: mult, Add: add})
		t.DN = append(t.DN, p)
	}
	return t, d.done()
}

// EncodeTile is the coder of Tile.
func EncodeTile(t Tile) ([]byte, error) {
	if len(t.Names) != len(t.Data) {
		return nil, errors.New("raster coder: Tile names and planes differ in number")
	}
	b := make([]byte, 0, 64+len(t.Data)*(8+4*t.Area()))
	b = appendHeader(b, t.Scene, t.SceneW, t.SceneH, t.Rect)
	b = binary.AppendUvarint(b, uint64(len(t.Data)))
	for i, p := range t.Data {
		if len(p) != t.Area() {
			return nil, fmt.Errorf("raster coder: %s plane %s has %d pixels, want %d", t.ID(), t.Names[i], len(p), t.Area())
		}
		b = binary.AppendUvarint(b, uint64(len(t.Names[i])))
		b = append(b, t.Names[i]...)
		b = appendPlane(b, p)
	}
	return b, nil
}

// DecodeTile is the decoder of Tile.
func DecodeTile(data []byte) (Tile, error) {
	d := &decoder{b: data}
	var t Tile
	t.Scene, t.SceneW, t.SceneH, t.Rect = d.header()
	n := d.uvarint()
	for i := 0; i < n && d.err == nil; i++ {
		name := string(d.bytes(d.uvarint()))
		raw := d.bytes(4 * t.Area())
		if d.err != nil {
			break
		}
		p := make([]float32, t.Area())
		decodePlane(p, raw)
		t.Names = append(t.Names, name)
		t.Data = append(t.Data, p)
	}
	return t, d.done()
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
	d := &decoder{b: data}
	var t RGBATile
	t.Scene, t.SceneW, t.SceneH, t.Rect = d.header()
	t.Pix = append([]uint8(nil), d.bytes(4*t.Area())...)
	return t, d.done()
}
