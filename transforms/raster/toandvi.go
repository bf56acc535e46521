package raster

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/transforms/step"
)

// StepTOANDVI is the fused TOA + NDVI step: one pass over the DNs that writes
// every band's reflectance ("B<n>") and, last, the NDVI, instead of writing
// the red and near-infrared reflectance and reading them back.
var StepTOANDVI = step.Register(step.Def[DNTile, Tile]{
	Name:    "toa_ndvi",
	Doc:     "TOA reflectance of each band and NDVI (from B4 and B5) in one pass",
	CPU:     TOANDVI,
	GPU:     dnToTile("raster.toa_ndvi"),
	Sample:  sampleDNTile,
	Random:  randomDNTile,
	Recycle: recycleTile,
	Bench: func(full bool) (DNTile, step.Work) {
		side := 1024
		if full {
			side = 4096
		}
		return benchDNTile(side), step.Work{Name: fmt.Sprintf("%dx%d, 4 bands", side, side)}
	},
})

// benchDNTile is a side x side tile of bands 2 to 5 with random DNs (some
// 0, no-data) and the sample scene's coefficients: the benchmark's input.
func benchDNTile(side int) DNTile {
	t := randomDNTile(1)
	t.Rect, t.SceneW, t.SceneH = Rect{W: side, H: side}, side, side
	r := uint64(12345)
	for i, b := range DefaultBands {
		t.Cal[i] = Calibration{Band: b, Mult: 2e-5, Add: -0.1}
		t.DN[i] = make([]uint16, side*side)
		for j := range t.DN[i] {
			r = r*6364136223846793005 + 1442695040888963407
			if v := uint16(r >> 48); v%64 != 0 {
				t.DN[i][j] = 5000 + v%30000
			}
		}
	}
	return t
}

// TOANDVI is the CPU implementation of the toa_ndvi step: TOA, with NDVI
// appended as the last plane; bands 4 and 5 and the NDVI are computed in one
// pass over their DNs (the same values as TOA then NDVITile, bit for bit).
// The tile must hold bands 4 and 5. Its planes are the caller's: new ones,
// or ones the step was handed back (recycleTile); never zeroed first, since
// every pixel is written (newPlane).
func TOANDVI(t DNTile) (Tile, error) {
	red, nir := -1, -1
	for i, c := range t.Cal {
		switch c.Band {
		case 4:
			red = i
		case 5:
			nir = i
		}
	}
	if red < 0 || nir < 0 {
		return Tile{}, fmt.Errorf("%s: toa_ndvi needs bands 4 and 5, the tile has %v", t.ID(), t.Cal)
	}
	if err := checkTOA(t); err != nil {
		return Tile{}, err
	}
	sin := math.Sin(t.SunElevation * math.Pi / 180)
	out := Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect,
		Names: make([]string, len(t.DN), len(t.DN)+1), Data: make([][]float32, len(t.DN), len(t.DN)+1)}
	for i, dn := range t.DN {
		out.Names[i] = BandName(t.Cal[i].Band)
		out.Data[i] = newPlane(len(dn))
		if i != red && i != nir {
			toaPlane(out.Data[i], dn, t.Cal[i].Mult/sin, t.Cal[i].Add/sin)
		}
	}
	ndvi := newPlane(t.Area())
	toaNDVIPlanes(out.Data[red], out.Data[nir], ndvi, t.DN[red], t.DN[nir],
		t.Cal[red].Mult/sin, t.Cal[red].Add/sin, t.Cal[nir].Mult/sin, t.Cal[nir].Add/sin)
	out.Names = append(out.Names, PlaneNDVI)
	out.Data = append(out.Data, ndvi)
	return out, nil
}

// toaNDVIPlanes is the fused kernel: the red and near-infrared reflectances
// and the NDVI of each pixel in one pass (8 pixels a step with the vector
// kernel of toa_amd64.s where the CPU has AVX2: the same values, bit for bit).
func toaNDVIPlanes(red, nir, ndvi []float32, dnRed, dnNIR []uint16, sr, or, sn, on float64) {
	red, nir, ndvi, dnNIR = red[:len(dnRed)], nir[:len(dnRed)], ndvi[:len(dnRed)], dnNIR[:len(dnRed)]
	done := toaNDVIVector(red, nir, ndvi, dnRed, dnNIR, sr, or, sn, on)
	if red, nir, ndvi, dnRed, dnNIR = red[done:], nir[done:], ndvi[done:], dnRed[done:], dnNIR[done:]; len(dnRed) == 0 {
		return
	}
	lr := toaTable(sr, or, len(dnRed) >= lutMinPixels)
	ln := toaTable(sn, on, len(dnNIR) >= lutMinPixels)
	red, nir, ndvi, dnNIR = red[:len(dnRed)], nir[:len(dnRed)], ndvi[:len(dnRed)], dnNIR[:len(dnRed)]
	for i, d := range dnRed {
		var r, n float32
		if lr != nil && ln != nil {
			r, n = lr[d], ln[dnNIR[i]]
		} else {
			r, n = toaValue(d, sr, or), toaValue(dnNIR[i], sn, on)
		}
		red[i], nir[i] = r, n
		sum := n + r
		if sum == 0 {
			ndvi[i] = nan32
			continue
		}
		ndvi[i] = (n - r) / sum
	}
}
