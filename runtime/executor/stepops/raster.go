package stepops

import (
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step/wire"
)

// dnToTile is the codec of the steps from DN tiles to reflectance tiles.
var dnToTile = Codec[raster.DNTile, raster.Tile]{
	EncodeIn:  raster.EncodeDNTile,
	DecodeIn:  func(b []byte, _ any) (raster.DNTile, error) { return raster.DecodeDNTile(b) },
	EncodeOut: raster.EncodeTile,
	DecodeOut: raster.DecodeTile,
	Split:     splitDNTile,
	Merge:     mergeTiles,
}

func init() {
	Define(raster.StepTOA, dnToTile)
	Define(raster.StepTOANDVI, dnToTile)
	Define(raster.StepNDVI, Codec[raster.Tile, raster.Tile]{
		EncodeIn:  raster.EncodeTile,
		DecodeIn:  func(b []byte, _ any) (raster.Tile, error) { return raster.DecodeTile(b) },
		EncodeOut: raster.EncodeTile,
		DecodeOut: raster.DecodeTile,
		Split:     splitTile,
		Merge:     mergeTiles,
	})
	Define(raster.StepComposite, Codec[raster.CompositeInput, raster.RGBATile]{
		EncodeIn:  encodeComposite,
		DecodeIn:  decodeComposite,
		EncodeOut: raster.EncodeRGBATile,
		DecodeOut: raster.DecodeRGBATile,
		Split: func(in raster.CompositeInput) (raster.CompositeInput, raster.CompositeInput, bool) {
			a, b, ok := splitTile(in.Tile)
			return raster.CompositeInput{Tile: a, Stretch: in.Stretch}, raster.CompositeInput{Tile: b, Stretch: in.Stretch}, ok
		},
		Merge: mergeRGBA,
	})
}

// encodeComposite writes the tile, then the stretch.
func encodeComposite(in raster.CompositeInput) ([]byte, error) {
	tile, err := raster.EncodeTile(in.Tile)
	if err != nil {
		return nil, err
	}
	st := in.Stretch
	b := wire.AppendBytes(nil, tile)
	b = wire.AppendString(b, st.Scene)
	b = wire.AppendUvarint(b, len(st.Lo))
	b = wire.AppendPlane(b, st.Lo)
	b = wire.AppendUvarint(b, len(st.Hi))
	b = wire.AppendPlane(b, st.Hi)
	return wire.AppendFloat64(b, st.Gamma), nil
}

func decodeComposite(b []byte, _ any) (raster.CompositeInput, error) {
	d := wire.NewDecoder(b, "composite input")
	tile, err := raster.DecodeTile(d.LenBytes())
	if err != nil {
		return raster.CompositeInput{}, err
	}
	st := raster.Stretch{Scene: d.String()}
	st.Lo = wire.Plane[float32](d, d.Uvarint())
	st.Hi = wire.Plane[float32](d, d.Uvarint())
	st.Gamma = d.Float64()
	return raster.CompositeInput{Tile: tile, Stretch: st}, d.Done()
}
