//go:build !amd64 || purego

package raster

// Without the amd64 vector kernels every pixel takes the scalar code.

var simd = 0

func toaVector(dst []float32, dn []uint16, scale, offset float64) int { return 0 }

func toaNDVIVector(red, nir, ndvi []float32, dnRed, dnNIR []uint16, sr, or, sn, on float64) int {
	return 0
}

type levelsVec struct{}

func (t *levels) vec() *levelsVec { return nil }

func compositeVector(pix []uint8, r, g, b []float32, tabs [3]*levels) int { return 0 }

// ntMinBytes is unused without the vector kernels (kept for the tests).
var ntMinBytes = 4 << 20
