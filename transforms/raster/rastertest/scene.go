package rastertest

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/raster"
)

// Full-size scene: the reflective bands of a Landsat 8 Level-1 product are
// about this size (the committed crop's scene is 7881 x 7991).
const (
	FullWidth  = 7791
	FullHeight = 7941
)

// Scene describes a scene to write.
type Scene struct {
	// ProductID names the product and its files (<ProductID>_B4.TIF, ...).
	ProductID string
	// Width and Height default to FullWidth and FullHeight.
	Width, Height int
	// Layout of the band files.
	TIFF TIFF
	// Pixel returns band b's DN at x, y; nil is Landsat (a synthetic scene
	// with the tilted no-data frame of a Level-1 product).
	Pixel func(band, x, y int) uint16
}

// MTL returns the committed crop's _MTL.txt (its real coefficients and sun
// elevation) for product id with a w x h reflective grid.
func MTL(id string, w, h int) (string, error) {
	src, err := os.ReadFile(filepath.Join(raster.SampleSceneDir(), raster.SampleSceneID+"_MTL.txt"))
	if err != nil {
		return "", err
	}
	text := strings.ReplaceAll(string(src), raster.SampleSceneID, id)
	text = regexp.MustCompile(`REFLECTIVE_LINES = \d+`).ReplaceAllString(text, fmt.Sprintf("REFLECTIVE_LINES = %d", h))
	text = regexp.MustCompile(`REFLECTIVE_SAMPLES = \d+`).ReplaceAllString(text, fmt.Sprintf("REFLECTIVE_SAMPLES = %d", w))
	return text, nil
}

// WriteScene writes s into dir (created): <id>_MTL.txt and bands 2 to 5.
func WriteScene(dir string, s Scene) error {
	if s.Width == 0 {
		s.Width, s.Height = FullWidth, FullHeight
	}
	if s.Pixel == nil {
		s.Pixel = Landsat(s.Width, s.Height)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mtl, err := MTL(s.ProductID, s.Width, s.Height)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, s.ProductID+"_MTL.txt"), []byte(mtl), 0o644); err != nil {
		return err
	}
	for _, b := range raster.DefaultBands {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s_B%d.TIF", s.ProductID, b)))
		if err != nil {
			return err
		}
		err = Write(f, s.Width, s.Height, func(x, y int) uint16 { return s.Pixel(b, x, y) }, s.TIFF)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
	}
	return nil
}

// Landsat returns the DNs of a synthetic w x h Landsat 8 scene: a valid
// area rotated by 13 degrees inside a no-data (0) frame, as the footprint of
// a Level-1 product lies in its grid, holding fields of about 96 pixels of
// water, bare soil, vegetation, built-up land and cloud, each with the
// top-of-atmosphere reflectances of its kind in bands 2 to 5 (vegetation
// dark in red and bright in near infrared, water dark in both), varied per
// field and per pixel, and turned into DNs with the coefficients and sun
// elevation of the committed crop's MTL.
func Landsat(w, h int) func(band, x, y int) uint16 {
	c, s := math.Cos(0.23), math.Sin(0.23)
	// Reflectance of bands 2, 3, 4, 5 by kind, and how common each kind is (of 100).
	kinds := []struct {
		share int
		refl  [4]float64
	}{
		{12, [4]float64{0.09, 0.07, 0.05, 0.03}}, // water
		{25, [4]float64{0.11, 0.12, 0.15, 0.22}}, // bare soil
		{45, [4]float64{0.08, 0.09, 0.06, 0.35}}, // vegetation
		{13, [4]float64{0.16, 0.16, 0.17, 0.22}}, // built-up
		{5, [4]float64{0.45, 0.45, 0.46, 0.48}},  // cloud
	}
	sin := math.Sin(58.99675180 * math.Pi / 180)
	return func(band, x, y int) uint16 {
		dx, dy := float64(x)-float64(w)/2, float64(y)-float64(h)/2
		u, v := dx*c+dy*s, -dx*s+dy*c
		if math.Abs(u) >= 0.40*float64(w) || math.Abs(v) >= 0.40*float64(h) {
			return 0
		}
		bx, by := uint64(x/96), uint64(y/96)
		pick := int(hash(1, bx, by) % 100)
		k := 0
		for pick >= kinds[k].share {
			pick -= kinds[k].share
			k++
		}
		field := 0.85 + 0.3*float64(hash(2, bx, by)%1000)/1000
		noise := (float64(hash(uint64(band)+3, uint64(x), uint64(y))%1001) - 500) / 500 * 0.006
		refl := kinds[k].refl[band-2]*field + noise
		dn := (refl*sin + 0.1) / 2e-5
		return uint16(max(1, min(65535, math.Round(dn))))
	}
}

// hash mixes three numbers (SplitMix64's finaliser).
func hash(a, b, c uint64) uint64 {
	z := a*0x9E3779B97F4A7C15 ^ b*0xBF58476D1CE4E5B9 ^ c*0x94D049BB133111EB
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}
