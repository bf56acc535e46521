package raster

import (
	"errors"
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/wire"
)

// The tile types carry the bulk of a pipeline's bytes. Each has one codec,
// a header and its planes as raw arrays (wire.Parts), which serves both
// boundaries a tile crosses: the GPU executor's (each plane in shared
// memory of its own, viewed in place) and Beam's (EncodeTile and DecodeTile
// are the Beam coders, registered by package rasterbeam; planes decode as
// views of the element's bytes).

// coderVersion is the version of the tiles' encodings.
const coderVersion = 2

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

// planes views arrays as n planes of area pixels each.
func planes[T wire.Number](d *wire.Decoder, arrays [][]byte, n, area int, what string) [][]T {
	if d.Err() != nil {
		return nil
	}
	if len(arrays) != n {
		d.Fail("%d planes announced, %d arrays", n, len(arrays))
		return nil
	}
	out := make([][]T, n)
	for i, a := range arrays {
		p, err := wire.View[T](a, area, fmt.Sprintf("%s plane %d", what, i))
		if err != nil {
			d.Fail("%v", err)
			return nil
		}
		out[i] = p
	}
	return out
}

func arrays[T wire.Number](planes [][]T) [][]byte {
	out := make([][]byte, len(planes))
	for i, p := range planes {
		out[i] = wire.Array(p)
	}
	return out
}

// DNTileCodec moves DN tiles: the calibration in the header, one uint16
// array per band.
var DNTileCodec = step.Codec[DNTile]{
	Encode: func(t DNTile) (step.Parts, error) {
		if len(t.Cal) != len(t.DN) {
			return step.Parts{}, errors.New("raster coder: DNTile calibrations and planes differ in number")
		}
		for i, p := range t.DN {
			if len(p) != t.Area() {
				return step.Parts{}, fmt.Errorf("raster coder: %s plane %d has %d pixels, want %d", t.ID(), i, len(p), t.Area())
			}
		}
		h := appendHeader(make([]byte, 0, 64+24*len(t.Cal)), t.Scene, t.SceneW, t.SceneH, t.Rect)
		h = wire.AppendFloat64(h, t.SunElevation)
		h = wire.AppendUvarint(h, len(t.DN))
		for _, c := range t.Cal {
			h = wire.AppendUvarint(h, c.Band)
			h = wire.AppendFloat64(h, c.Mult)
			h = wire.AppendFloat64(h, c.Add)
		}
		return step.Parts{Header: h, Arrays: arrays(t.DN)}, nil
	},
	Decode: func(p step.Parts) (DNTile, error) {
		d := wire.NewDecoder(p.Header, "raster DNTile")
		var t DNTile
		t.Scene, t.SceneW, t.SceneH, t.Rect = readHeader(d)
		t.SunElevation = d.Float64()
		n := d.Uvarint()
		if d.Err() == nil && n > len(p.Arrays) {
			d.Fail("%d bands announced, %d arrays", n, len(p.Arrays))
		}
		for i := 0; i < n && d.Err() == nil; i++ {
			t.Cal = append(t.Cal, Calibration{Band: d.Uvarint(), Mult: d.Float64(), Add: d.Float64()})
		}
		t.DN = planes[uint16](d, p.Arrays, n, t.Area(), "DN")
		if err := d.Done(); err != nil {
			return DNTile{}, err
		}
		return t, nil
	},
}

// TileCodec moves reflectance tiles: the plane names in the header, one
// float32 array per plane.
var TileCodec = step.Codec[Tile]{
	Encode: func(t Tile) (step.Parts, error) {
		h, err := tileHeader(nil, t)
		return step.Parts{Header: h, Arrays: arrays(t.Data)}, err
	},
	Decode: func(p step.Parts) (Tile, error) {
		d := wire.NewDecoder(p.Header, "raster Tile")
		t := readTile(d, p.Arrays)
		if err := d.Done(); err != nil {
			return Tile{}, err
		}
		return t, nil
	},
}

func tileHeader(b []byte, t Tile) ([]byte, error) {
	if len(t.Names) != len(t.Data) {
		return nil, errors.New("raster coder: Tile names and planes differ in number")
	}
	for i, p := range t.Data {
		if len(p) != t.Area() {
			return nil, fmt.Errorf("raster coder: %s plane %s has %d pixels, want %d", t.ID(), t.Names[i], len(p), t.Area())
		}
	}
	b = appendHeader(b, t.Scene, t.SceneW, t.SceneH, t.Rect)
	b = wire.AppendUvarint(b, len(t.Names))
	for _, n := range t.Names {
		b = wire.AppendString(b, n)
	}
	return b, nil
}

func readTile(d *wire.Decoder, arrays [][]byte) Tile {
	var t Tile
	t.Scene, t.SceneW, t.SceneH, t.Rect = readHeader(d)
	n := d.Uvarint()
	if d.Err() == nil && n > len(arrays) {
		d.Fail("%d planes announced, %d arrays", n, len(arrays))
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		t.Names = append(t.Names, d.String())
	}
	t.Data = planes[float32](d, arrays, n, t.Area(), "reflectance")
	return t
}

// RGBATileCodec moves picture tiles: one array of 4 bytes per pixel.
var RGBATileCodec = step.Codec[RGBATile]{
	Encode: func(t RGBATile) (step.Parts, error) {
		if len(t.Pix) != 4*t.Area() {
			return step.Parts{}, fmt.Errorf("raster coder: %s has %d bytes of pixels, want %d", t.ID(), len(t.Pix), 4*t.Area())
		}
		return step.Parts{Header: appendHeader(nil, t.Scene, t.SceneW, t.SceneH, t.Rect), Arrays: [][]byte{t.Pix}}, nil
	},
	Decode: func(p step.Parts) (RGBATile, error) {
		d := wire.NewDecoder(p.Header, "raster RGBATile")
		var t RGBATile
		t.Scene, t.SceneW, t.SceneH, t.Rect = readHeader(d)
		if pix := planes[uint8](d, p.Arrays, 1, 4*t.Area(), "RGBA"); pix != nil {
			t.Pix = pix[0]
		}
		if err := d.Done(); err != nil {
			return RGBATile{}, err
		}
		return t, nil
	},
}

// CompositeInputCodec moves the composite step's batch: the tile, and the
// stretch in the header.
var CompositeInputCodec = step.Codec[CompositeInput]{
	Encode: func(in CompositeInput) (step.Parts, error) {
		h, err := tileHeader(nil, in.Tile)
		st := in.Stretch
		h = wire.AppendString(h, st.Scene)
		h = wire.AppendPlane(wire.AppendUvarint(h, len(st.Lo)), st.Lo)
		h = wire.AppendPlane(wire.AppendUvarint(h, len(st.Hi)), st.Hi)
		h = wire.AppendFloat64(h, st.Gamma)
		return step.Parts{Header: h, Arrays: arrays(in.Tile.Data)}, err
	},
	Decode: func(p step.Parts) (CompositeInput, error) {
		d := wire.NewDecoder(p.Header, "raster composite input")
		t := readTile(d, p.Arrays)
		st := Stretch{Scene: d.String()}
		st.Lo = wire.Plane[float32](d, min(d.Uvarint(), 16))
		st.Hi = wire.Plane[float32](d, min(d.Uvarint(), 16))
		st.Gamma = d.Float64()
		if err := d.Done(); err != nil {
			return CompositeInput{}, err
		}
		return CompositeInput{Tile: t, Stretch: st}, nil
	},
}

// EncodeDNTile, DecodeDNTile, EncodeTile, DecodeTile, EncodeRGBATile and
// DecodeRGBATile are the codecs as one buffer each (Codec.Marshal): the
// tiles' Beam coders.
func EncodeDNTile(t DNTile) ([]byte, error)     { return DNTileCodec.Marshal(t) }
func DecodeDNTile(b []byte) (DNTile, error)     { return DNTileCodec.Unmarshal(b) }
func EncodeTile(t Tile) ([]byte, error)         { return TileCodec.Marshal(t) }
func DecodeTile(b []byte) (Tile, error)         { return TileCodec.Unmarshal(b) }
func EncodeRGBATile(t RGBATile) ([]byte, error) { return RGBATileCodec.Marshal(t) }
func DecodeRGBATile(b []byte) (RGBATile, error) { return RGBATileCodec.Unmarshal(b) }
