package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // JPEG inputs
	_ "image/png"  // PNG inputs
	"math"
	"strconv"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"golang.org/x/image/draw"
)

// The layouts of --layout.
const (
	LayoutNCHW = "NCHW"
	LayoutNHWC = "NHWC"
)

// Preprocess is what a user states about the model's images: each image is
// decoded (PNG or JPEG), converted to gray or RGB, resized bilinearly to
// Height x Width, scaled to [0,1] (/255), normalized per channel
// ((x-Mean)/Std) and laid out as one row of the model's float32 input:
// [C,H,W] (NCHW) or [H,W,C] (NHWC).
type Preprocess struct {
	Height, Width int
	Channels      int
	Layout        string
	Mean, Std     []float32
	// MaxBytes bounds an image's decoded size (width x height x its
	// pixels' bytes), read from its header before it is decoded
	// (--max_image_bytes); 0: DefaultMaxImageBytes.
	MaxBytes int64
}

// DefaultMaxImageBytes is --max_image_bytes' default: an 8192 x 8192 RGBA
// image, 256 MiB decoded.
const DefaultMaxImageBytes = 8192 * 8192 * 4

// Shape is the shape of one preprocessed row (without the batch axis).
func (p Preprocess) Shape() []int {
	if p.Layout == LayoutNHWC {
		return []int{p.Height, p.Width, p.Channels}
	}
	return []int{p.Channels, p.Height, p.Width}
}

// Check checks p's values.
func (p Preprocess) Check() error {
	if p.Height <= 0 || p.Width <= 0 {
		return fmt.Errorf("--resize=%dx%d: want positive sizes", p.Height, p.Width)
	}
	if p.Channels != 1 && p.Channels != 3 {
		return fmt.Errorf("--channels=%d: want 1 (gray) or 3 (RGB)", p.Channels)
	}
	if p.Layout != LayoutNCHW && p.Layout != LayoutNHWC {
		return fmt.Errorf("--layout=%s: want NCHW or NHWC", p.Layout)
	}
	for _, v := range []struct {
		name string
		vals []float32
	}{{"mean", p.Mean}, {"std", p.Std}} {
		if len(v.vals) != p.Channels {
			return fmt.Errorf("--%s has %d values for %d channels", v.name, len(v.vals), p.Channels)
		}
	}
	for _, s := range p.Std {
		if s == 0 || math.IsNaN(float64(s)) {
			return fmt.Errorf("--std=%v: a channel's std is zero", p.Std)
		}
	}
	return nil
}

// parseSize parses --resize: HxW.
func parseSize(s string) (h, w int, err error) {
	a, b, ok := strings.Cut(strings.ToLower(s), "x")
	if ok {
		h, err = strconv.Atoi(strings.TrimSpace(a))
		if err == nil {
			w, err = strconv.Atoi(strings.TrimSpace(b))
		}
	}
	if !ok || err != nil || h <= 0 || w <= 0 {
		return 0, 0, fmt.Errorf("--resize=%s: want HEIGHTxWIDTH, e.g. 224x224", s)
	}
	return h, w, nil
}

// parseFloats parses a comma-separated list of --name; one value is
// repeated for every channel.
func parseFloats(name, s string, channels int) ([]float32, error) {
	var out []float32
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 32)
		if err != nil {
			return nil, fmt.Errorf("--%s=%s: %q is not a number", name, s, f)
		}
		out = append(out, float32(v))
	}
	if len(out) == 1 && channels > 1 {
		for len(out) < channels {
			out = append(out, out[0])
		}
	}
	return out, nil
}

// pixelBytes is the bytes a pixel of color model m takes decoded (as the
// image package's type of that model holds it); 8, the most any takes,
// for a model it does not know.
func pixelBytes(m color.Model) int64 {
	switch m {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.YCbCrModel:
		return 3 // 4:4:4 at most; subsampled chroma takes less
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel, color.NYCbCrAModel:
		return 4
	}
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	return 8
}

// checkSize refuses an image whose header declares a decoded size over
// p's bound, before a pixel is decoded: a 2.4 MB PNG may declare 50000 x
// 50000 pixels (2.5 GB decoded at 1 byte a pixel, 10 GB as RGBA).
func (p Preprocess) checkSize(data []byte) error {
	limit := p.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxImageBytes
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("does not decode as PNG or JPEG: %w", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return fmt.Errorf("%s image of size %dx%d", format, cfg.Width, cfg.Height)
	}
	px, bpp := int64(cfg.Width)*int64(cfg.Height), pixelBytes(cfg.ColorModel) // both sides under 2^31: no overflow
	if px > limit/bpp {
		return fmt.Errorf("%s image of %dx%d pixels (%d bytes a pixel): %.0f bytes decoded, over --max_image_bytes=%d; refused from its header, before decoding",
			format, cfg.Width, cfg.Height, bpp, float64(px)*float64(bpp), limit)
	}
	return nil
}

// Image decodes one image file's bytes and preprocesses it into a row. An
// image whose header declares a decoded size over p.MaxBytes is refused
// before it is decoded.
func (p Preprocess) Image(data []byte) (nd.Array, error) {
	if err := p.checkSize(data); err != nil {
		return nd.Array{}, err
	}
	img, format, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nd.Array{}, fmt.Errorf("does not decode as PNG or JPEG: %w", err)
	}
	b := img.Bounds()
	if b.Dx() <= 0 || b.Dy() <= 0 {
		return nd.Array{}, fmt.Errorf("%s image of size %dx%d", format, b.Dx(), b.Dy())
	}
	dst := image.NewRGBA(image.Rect(0, 0, p.Width, p.Height))
	draw.BiLinear.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
	hw := p.Height * p.Width
	out := make([]byte, 4*hw*p.Channels)
	put := func(c, y, x int, v float32) {
		i := c*hw + y*p.Width + x
		if p.Layout == LayoutNHWC {
			i = (y*p.Width+x)*p.Channels + c
		}
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits((v/255-p.Mean[c])/p.Std[c]))
	}
	for y := 0; y < p.Height; y++ {
		for x := 0; x < p.Width; x++ {
			o := dst.PixOffset(x, y)
			r, g, bl := float32(dst.Pix[o]), float32(dst.Pix[o+1]), float32(dst.Pix[o+2])
			if p.Channels == 1 {
				// ITU-R 601 luma, as image/color's Gray model.
				put(0, y, x, (19595*r+38470*g+7471*bl)/65536)
				continue
			}
			put(0, y, x, r)
			put(1, y, x, g)
			put(2, y, x, bl)
		}
	}
	return nd.Array{Type: nd.Float32, Shape: p.Shape(), Data: out}, nil
}
