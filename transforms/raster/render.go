package raster

import (
	"fmt"
	"image"
	"image/color"
	"math"
)

// ndviStops is the NDVI colour map: water blue below -0.2, then bare soil
// brown, pale yellow at 0.2, green, and dark green at 0.9 and above.
var ndviStops = []struct {
	v       float32
	r, g, b uint8
}{
	{-0.2, 140, 90, 50},
	{0.0, 215, 190, 130},
	{0.2, 250, 245, 160},
	{0.5, 100, 190, 75},
	{0.9, 0, 100, 25},
}

// NDVIColor maps an NDVI value to a colour a person can read; NaN (no-data)
// is transparent.
func NDVIColor(v float32) color.NRGBA {
	switch {
	case v != v:
		return color.NRGBA{}
	case v < ndviStops[0].v:
		return color.NRGBA{30, 80, 200, 255}
	}
	for i := 1; i < len(ndviStops); i++ {
		a, b := ndviStops[i-1], ndviStops[i]
		if v <= b.v {
			f := (v - a.v) / (b.v - a.v)
			mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(float32(x) + f*(float32(y)-float32(x))))) }
			return color.NRGBA{mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b), 255}
		}
	}
	last := ndviStops[len(ndviStops)-1]
	return color.NRGBA{last.r, last.g, last.b, 255}
}

// NDVIImage renders a whole-scene NDVI plane with NDVIColor.
func NDVIImage(t Tile) (*image.NRGBA, error) {
	p, err := t.Plane(PlaneNDVI)
	if err != nil {
		return nil, err
	}
	img := image.NewNRGBA(image.Rect(0, 0, t.W, t.H))
	for i, v := range p {
		c := NDVIColor(v)
		copy(img.Pix[4*i:4*i+4], []uint8{c.R, c.G, c.B, c.A})
	}
	return img, nil
}

// AssembleRGBA puts the picture tiles of one scene into one image, checking
// that they cover the scene exactly.
func AssembleRGBA(tiles []RGBATile) (*image.NRGBA, error) {
	if len(tiles) == 0 {
		return nil, fmt.Errorf("assemble picture: no tiles")
	}
	sw, sh := tiles[0].SceneW, tiles[0].SceneH
	if sw <= 0 || sh <= 0 || sw*sh > maxPixels {
		return nil, fmt.Errorf("assemble picture: %s: scene size %dx%d out of range", tiles[0].ID(), sw, sh)
	}
	img := image.NewNRGBA(image.Rect(0, 0, sw, sh))
	seen := make([]bool, sw*sh)
	covered := 0
	for _, t := range tiles {
		if t.Scene != tiles[0].Scene || t.SceneW != sw || t.SceneH != sh || t.X < 0 || t.Y < 0 || t.W < 0 || t.H < 0 ||
			t.X+t.W > sw || t.Y+t.H > sh || len(t.Pix) != 4*t.Area() {
			return nil, fmt.Errorf("assemble picture: tile %s does not fit scene %s (%dx%d)", t.ID(), tiles[0].Scene, sw, sh)
		}
		for y := 0; y < t.H; y++ {
			for x := 0; x < t.W; x++ {
				i := (t.Y+y)*sw + t.X + x
				if seen[i] {
					return nil, fmt.Errorf("assemble picture: tile %s overlaps another", t.ID())
				}
				seen[i] = true
			}
			copy(img.Pix[((t.Y+y)*sw+t.X)*4:], t.Pix[y*t.W*4:(y+1)*t.W*4])
		}
		covered += t.Area()
	}
	if covered != sw*sh {
		return nil, fmt.Errorf("assemble picture: scene %s: tiles cover %d of %d pixels", tiles[0].Scene, covered, sw*sh)
	}
	return img, nil
}

// PlaneStats summarises one plane over its valid (non-NaN) pixels.
type PlaneStats struct {
	Scene  string  `json:"-"`
	Plane  string  `json:"-"`
	Width  int     `json:"-"`
	Height int     `json:"-"`
	Pixels int     `json:"pixels"`
	Valid  int     `json:"valid"`
	NoData int     `json:"nodata"`
	Mean   float64 `json:"mean"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Stats computes PlaneStats of a single-plane tile; sums are in float64.
// With no valid pixel, Mean, Min and Max are NaN (written as null in JSON by callers).
func Stats(t Tile) PlaneStats {
	s := PlaneStats{Scene: t.Scene, Plane: t.Names[0], Width: t.W, Height: t.H, Pixels: len(t.Data[0]),
		Min: math.Inf(1), Max: math.Inf(-1)}
	var sum float64
	for _, v := range t.Data[0] {
		if v != v {
			s.NoData++
			continue
		}
		s.Valid++
		f := float64(v)
		sum += f
		s.Min = math.Min(s.Min, f)
		s.Max = math.Max(s.Max, f)
	}
	if s.Valid == 0 {
		s.Mean, s.Min, s.Max = math.NaN(), math.NaN(), math.NaN()
	} else {
		s.Mean = sum / float64(s.Valid)
	}
	return s
}
