package raster

import (
	_ "embed" // for PTX

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

// PTX is the PTX (virtual architecture compute_70) of the raster steps' CUDA kernels,
// compiled from kernels.cu by `make ptx` (cmd/beamgpu-ptx); the GPU executor
// loads it (Module) when it opens the device; the launches of launch_cuda.go name
// its kernels. This package stays pure Go: it only carries the bytes.
//
// Kernels (every parameter is 8 bytes wide: a device pointer, a long long or a
// double; n is a number of pixels; planes are row-major and contiguous):
//
//	toa(const u16 *dn, float *out, i64 n, f64 scale, f64 offset)
//	    one band's TOA reflectance: float(dn*scale + offset) computed in double,
//	    NaN for DN 0; scale = Mult/sin(elevation), offset = Add/sin(elevation)
//	toa_ndvi(const u16 *dn, const f64 *coef, i64 nb, i64 n, i64 red, i64 nir, float *refl, float *ndvi)
//	    the TOA reflectance of nb bands (planes b*n..; coef holds scale, offset per
//	    band) and the NDVI of planes red and nir in one pass; ndvi is not written
//	    when red or nir is negative
//	ndvi(const float *red, const float *nir, float *out, i64 n)
//	    (nir - red) / (nir + red), NaN where the sum is 0 or an input is NaN
//	composite(const float *r, const float *g, const float *b, i64 n,
//	          f64 lo_r, f64 lo_g, f64 lo_b, f64 hi_r, f64 hi_g, f64 hi_b, f64 inv, uchar4 *out)
//	    RGBA8: each channel clamp((v-lo)/(hi-lo)) ^ inv * 255, rounded; alpha 255;
//	    0, 0, 0, 0 where a channel is NaN; inv = 1/gamma
//
// Launch: 1-D, 256 threads per block, any number of blocks (grid-stride loops).
//
//go:embed kernels.ptx
var PTX []byte

// Module is the raster kernels' module, as the GPU executor loads it.
var Module = gpu.NewModule("transforms/raster", PTX)
