package raster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/beamgpu/beamgpu/transforms/step"
)

// StepTOA is the TOA reflectance step: DN tiles to reflectance tiles with one
// plane per band, "B<n>".
var StepTOA = step.Register(step.Def[DNTile, Tile]{
	Name:   "toa",
	Doc:    "top-of-atmosphere reflectance of each band, NaN where DN is 0",
	CPU:    TOA,
	GPU:    dnToTile("raster.toa"),
	Sample: sampleDNTile,
	Random: randomDNTile,
})

// dnToTile is the GPU op of the steps from DN tiles to reflectance tiles.
func dnToTile(op string) *step.GPU[DNTile, Tile] {
	return &step.GPU[DNTile, Tile]{Op: op, Hints: gpuHints, In: DNTileCodec, Out: TileCodec,
		Split: splitDNTile, Merge: mergeTiles}
}

// TOA is the CPU implementation of the TOA step:
// (Mult*DN + Add) / sin(SunElevation) per pixel, computed in float64 and
// rounded to float32, with NaN where DN is 0 (no-data).
func TOA(t DNTile) (Tile, error) {
	if err := checkTOA(t); err != nil {
		return Tile{}, err
	}
	sin := math.Sin(t.SunElevation * math.Pi / 180)
	out := Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect,
		Names: make([]string, len(t.DN)), Data: make([][]float32, len(t.DN))}
	for i, dn := range t.DN {
		out.Names[i] = BandName(t.Cal[i].Band)
		out.Data[i] = make([]float32, len(dn))
		toaPlane(out.Data[i], dn, t.Cal[i].Mult/sin, t.Cal[i].Add/sin)
	}
	return out, nil
}

// checkTOA checks a DN tile's planes, calibrations and sun elevation.
func checkTOA(t DNTile) error {
	if err := checkPlanes(t.ID(), t.Rect, t.DN); err != nil {
		return err
	}
	if len(t.Cal) != len(t.DN) {
		return fmt.Errorf("%s: %d calibrations for %d bands", t.ID(), len(t.Cal), len(t.DN))
	}
	if !(t.SunElevation > 0 && t.SunElevation <= 90) {
		return fmt.Errorf("%s: sun elevation %g: want (0, 90] degrees", t.ID(), t.SunElevation)
	}
	return nil
}

// toaPlane is the per-pixel kernel: dst = scale*dn + offset, NaN for dn 0.
// On amd64 with AVX2 a vector kernel (toa_amd64.s) computes 8 pixels a step
// with the same float64 operations, so the results are identical; the rest
// (the last few pixels, or every pixel elsewhere) takes the scalar code. A DN
// is a uint16, so for planes large enough to pay for it the scalar kernel is
// a lookup in a table of all 65536 values, computed with the same float64
// expression: the results are identical again, without a conversion or
// branch per pixel.
func toaPlane(dst []float32, dn []uint16, scale, offset float64) {
	dst = dst[:len(dn)]
	done := toaVector(dst, dn, scale, offset)
	if dst, dn = dst[done:], dn[done:]; len(dn) == 0 {
		return
	}
	if lut := toaTable(scale, offset, len(dn) >= lutMinPixels); lut != nil {
		for i, v := range dn {
			dst[i] = lut[v]
		}
		return
	}
	for i, v := range dn {
		dst[i] = toaValue(v, scale, offset)
	}
}

func toaValue(dn uint16, scale, offset float64) float32 {
	if dn == 0 {
		return nan32
	}
	return float32(float64(dn)*scale + offset)
}

// lutMinPixels is the plane size from which building a table pays off; a
// table already built for the coefficients is used for any plane.
const lutMinPixels = 1 << 14

// maxTables bounds the cache of tables (256 KiB each): a worker sees a few
// coefficient pairs per scene.
const maxTables = 32

var tables struct {
	sync.Mutex
	m     map[[2]float64]*[1 << 16]float32
	order [][2]float64
}

// toaTable returns the table of (scale, offset), building it if build is
// set, or nil.
func toaTable(scale, offset float64, build bool) *[1 << 16]float32 {
	key := [2]float64{scale, offset}
	tables.Lock()
	defer tables.Unlock()
	if t := tables.m[key]; t != nil || !build {
		return t
	}
	t := new([1 << 16]float32)
	for dn := range t {
		t[dn] = toaValue(uint16(dn), scale, offset)
	}
	if tables.m == nil {
		tables.m = map[[2]float64]*[1 << 16]float32{}
	}
	if len(tables.order) == maxTables {
		delete(tables.m, tables.order[0])
		tables.order = tables.order[1:]
	}
	tables.m[key] = t
	tables.order = append(tables.order, key)
	return t
}

// BandName is the plane name of band n: "B4".
func BandName(n int) string { return fmt.Sprintf("B%d", n) }

// randomDNTile is a tile of random size and DNs (some 0, no-data), four
// bands with coefficients around Landsat 8's, and a random sun elevation.
func randomDNTile(seed uint64) DNTile {
	r := rand.New(rand.NewPCG(seed, 1))
	w, h := 1+r.IntN(70), 1+r.IntN(70)
	t := DNTile{Scene: fmt.Sprintf("random%d", seed), SceneW: w + r.IntN(50), SceneH: h + r.IntN(50),
		Rect: Rect{W: w, H: h}, SunElevation: 5 + 85*r.Float64()}
	for _, b := range DefaultBands {
		t.Cal = append(t.Cal, Calibration{Band: b, Mult: 1e-5 + 3e-5*r.Float64(), Add: -0.2 * r.Float64()})
		p := make([]uint16, w*h)
		for i := range p {
			if r.IntN(20) > 0 {
				p[i] = uint16(r.IntN(65536))
			}
		}
		t.DN = append(t.DN, p)
	}
	return t
}

// sampleDNTile is a small real tile: the top-left 16x16 of the committed
// crop, or synthetic DNs with the crop's coefficients when it is absent.
func sampleDNTile() DNTile {
	if tiles, err := ReadScene(SceneRef{Dir: SampleSceneDir(), TileSize: 16, Bands: DefaultBands}); err == nil {
		return tiles[0]
	}
	t := DNTile{Scene: SampleSceneID, SceneW: 16, SceneH: 16, Rect: Rect{W: 16, H: 16}, SunElevation: 58.99675180}
	for _, b := range DefaultBands {
		t.Cal = append(t.Cal, Calibration{Band: b, Mult: 2e-5, Add: -0.1})
		p := make([]uint16, 256)
		for i := range p {
			p[i] = uint16(7000 + 13*i*b)
		}
		t.DN = append(t.DN, p)
	}
	return t
}
