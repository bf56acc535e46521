package raster

import (
	"bytes"
	"fmt"
	"image"
	"io"

	"golang.org/x/image/tiff"
)

// maxPixels bounds the size of a band accepted from a file header
// (a full Landsat panchromatic band is about 16000 x 16000).
const maxPixels = 32768 * 32768

// DecodeBand decodes a single-band 16-bit GeoTIFF into its width, height and
// row-major digital numbers. name is used in errors.
//
// Landsat Level-1 bands are unsigned 16-bit, LZW or uncompressed. Crops cut
// by GIS tools are often signed 16-bit (SampleFormat 2) with a GDAL no-data
// value (the committed crop has -32768): those are read too, with negative
// values and the no-data value mapped to DN 0, Landsat's no-data.
func DecodeBand(r io.Reader, name string) (w, h int, dn []uint16, err error) {
	data, si, err := readTIFF(r, name)
	if err != nil {
		return 0, 0, nil, err
	}
	img, err := decodeTIFF(data)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("%s: corrupt or truncated TIFF: %w", name, err)
	}
	g, ok := img.(*image.Gray16)
	if !ok {
		return 0, 0, nil, fmt.Errorf("%s: want a single-band 16-bit TIFF, got %T", name, img)
	}
	b := g.Bounds()
	w, h = b.Dx(), b.Dy()
	dn = make([]uint16, w*h)
	for y := 0; y < h; y++ {
		row := g.Pix[y*g.Stride : y*g.Stride+2*w]
		for x := 0; x < w; x++ {
			dn[y*w+x] = toDN(uint16(row[2*x])<<8|uint16(row[2*x+1]), si)
		}
	}
	return w, h, dn, nil
}

// toDN maps a raw sample to a Landsat DN: GDAL's no-data value and, for
// signed samples, negative values become 0 (no-data).
func toDN(raw uint16, si sampleInfo) uint16 {
	v := int64(raw)
	if si.format == 2 {
		v = int64(int16(raw))
	}
	if v < 0 || si.hasNoData && v == si.noData {
		return 0
	}
	return uint16(v)
}

// decodeTIFF turns a panic inside the TIFF decoder (seen on crafted input)
// into an error.
func decodeTIFF(data []byte) (img image.Image, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	return tiff.Decode(bytes.NewReader(data))
}

// DecodeBandConfig reads a band's header, not its pixels: its width and height.
func DecodeBandConfig(r io.Reader, name string) (w, h int, err error) {
	data, _, err := readTIFF(r, name)
	if err != nil {
		return 0, 0, err
	}
	cfg, _ := tiff.DecodeConfig(bytes.NewReader(data))
	return cfg.Width, cfg.Height, nil
}

// readTIFF reads a band file and checks its header: a classic TIFF of
// 16-bit integer samples of a sane size. Signed samples are presented to
// x/image/tiff, which decodes only unsigned ones, as unsigned (the bits are
// the same); toDN then interprets them.
func readTIFF(r io.Reader, name string) ([]byte, sampleInfo, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, sampleInfo{}, fmt.Errorf("%s: %w", name, err)
	}
	si, err := readSampleInfo(data)
	if err != nil {
		return nil, si, fmt.Errorf("%s: not a readable TIFF: %w", name, err)
	}
	switch si.format {
	case 1:
	case 2:
		data = append([]byte(nil), data...)
		si.order.PutUint16(data[si.formatAt:], 1)
	default:
		return nil, si, fmt.Errorf("%s: TIFF sample format %d (floating point or unknown): want 16-bit integers", name, si.format)
	}
	cfg, err := tiff.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, si, fmt.Errorf("%s: not a readable TIFF: %w", name, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width*cfg.Height > maxPixels {
		return nil, si, fmt.Errorf("%s: TIFF size %dx%d out of range", name, cfg.Width, cfg.Height)
	}
	return data, si, nil
}
