//go:build !purego

package raster

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The vector kernels of toa_amd64.s: n pixels, a multiple of 16 (AVX-512)
// or 8 (AVX2); with nt, non-temporal stores to destinations aligned on
// 64 (AVX-512) or 32 (AVX2) bytes.
//
//go:noescape
func toaAVX512(dst *float32, dn *uint16, n int, scale, offset float64, nt bool)

//go:noescape
func toaNDVIAVX512(red, nir, ndvi *float32, dnRed, dnNIR *uint16, n int, sr, or, sn, on float64, nt bool)

//go:noescape
func toaAVX2(dst *float32, dn *uint16, n int, scale, offset float64, nt bool)

//go:noescape
func toaNDVIAVX2(red, nir, ndvi *float32, dnRed, dnNIR *uint16, n int, sr, or, sn, on float64, nt bool)

// simd is the vector width the kernels use: 16 (AVX-512), 8 (AVX2) or 0
// (none: the scalar code). A variable, so the tests can run all of them.
var simd = simdWidth()

func simdWidth() int {
	switch {
	case cpu.X86.HasAVX512F:
		return 16
	case cpu.X86.HasAVX2:
		return 8
	}
	return 0
}

// ntMinBytes is the size of a destination plane from which the kernels
// write around the caches: a plane that large would push the caches' other
// contents out anyway, and the stores then skip reading the destination.
var ntMinBytes = 4 << 20

// nonTemporal reports whether planes of n pixels at ps are written with
// non-temporal stores.
func nonTemporal(n int, ps ...[]float32) bool {
	if 4*n < ntMinBytes {
		return false
	}
	for _, p := range ps {
		if uintptr(unsafe.Pointer(unsafe.SliceData(p)))%uintptr(4*simd) != 0 {
			return false
		}
	}
	return true
}

// toaVector computes the TOA of the first pixels of dn into dst with the
// vector kernel, and returns how many it did (a multiple of the vector
// width; 0 without AVX2).
func toaVector(dst []float32, dn []uint16, scale, offset float64) int {
	if simd == 0 {
		return 0
	}
	n := min(len(dst), len(dn)) / simd * simd
	if n == 0 {
		return 0
	}
	nt := nonTemporal(n, dst)
	if simd == 16 {
		toaAVX512(unsafe.SliceData(dst), unsafe.SliceData(dn), n, scale, offset, nt)
	} else {
		toaAVX2(unsafe.SliceData(dst), unsafe.SliceData(dn), n, scale, offset, nt)
	}
	return n
}

// toaNDVIVector is toaVector for the fused red, near-infrared and NDVI
// planes.
func toaNDVIVector(red, nir, ndvi []float32, dnRed, dnNIR []uint16, sr, or, sn, on float64) int {
	if simd == 0 {
		return 0
	}
	n := min(len(red), len(nir), len(ndvi), len(dnRed), len(dnNIR)) / simd * simd
	if n == 0 {
		return 0
	}
	nt := nonTemporal(n, red, nir, ndvi)
	r, i, v, dr, dn := unsafe.SliceData(red), unsafe.SliceData(nir), unsafe.SliceData(ndvi), unsafe.SliceData(dnRed), unsafe.SliceData(dnNIR)
	if simd == 16 {
		toaNDVIAVX512(r, i, v, dr, dn, n, sr, or, sn, on, nt)
	} else {
		toaNDVIAVX2(r, i, v, dr, dn, n, sr, or, sn, on, nt)
	}
	return n
}
