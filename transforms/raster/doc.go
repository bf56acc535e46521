// Package raster holds the Landsat steps: reading a scene's band GeoTIFFs and
// its _MTL.txt metadata into tiles, top-of-atmosphere (TOA) reflectance,
// NDVI, a true-colour composite with a percentile contrast stretch, and the
// reassembly of tiles into whole-scene planes.
//
// Every step works on tiles, never on whole scenes, so a large scene is never
// one element and per-element costs (Beam's, a GPU's launch and transfer) are
// paid once per tile. Each step is a PTransform that returns its output and a
// dead-letter PCollection of step.Failure; its CPU code sits in this package,
// its stub is registered by github.com/beamgpu/beamgpu/stubs/raster, and its
// GPU op name is declared with it.
//
// The formulas (USGS Landsat 8 Data Users Handbook, section 5.1):
//
//	TOA  = (REFLECTANCE_MULT_BAND_n * DN + REFLECTANCE_ADD_BAND_n) / sin(SUN_ELEVATION)
//	NDVI = (B5 - B4) / (B5 + B4)
//
// DN 0 is no-data and gives NaN; NDVI is NaN where either band is NaN or
// B5 + B4 is 0.
//
// The CPU code runs at memory speed where the CPU allows: on amd64, TOA and
// the fused TOA+NDVI are Go assembly kernels (AVX-512, 16 pixels a step, or
// AVX2, 8; toa_amd64.s) that do the scalar code's float64 operations in the
// same order, so their output is bit for bit the scalar code's (tested on
// every DN); the composite replaces a math.Pow per channel and pixel by
// per-stretch tables of the 255 level thresholds, found with the scalar
// function itself, so it too gives the same bytes (tested on every float32
// of a stretch), with an AVX-512 kernel over the tables. Other architectures
// and the purego build tag run the scalar code.
package raster
