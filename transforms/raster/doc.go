// Package raster holds the Landsat steps: reading a scene's band GeoTIFFs and
// its _MTL.txt metadata into tiles, top-of-atmosphere (TOA) reflectance,
// NDVI, a true-colour composite with a percentile contrast stretch, and the
// reassembly of tiles into whole-scene planes.
//
// Every step works on tiles, never on whole scenes, so a large scene is never
// one element and per-element costs (Beam's, a GPU's launch and transfer) are
// paid once per tile. Each step's declaration, CPU code, codecs (codec.go),
// CUDA kernel (kernels.cu, embedded as PTX) and launch (launch_cuda.go,
// behind the cuda tag) sit in this package, which imports no Beam package so
// that the GPU executor links none; its PTransforms (each returning its
// output and a dead-letter PCollection of step.Failure) are package
// rasterbeam's, its stub is registered by github.com/beamgpu/beamgpu/stubs/raster.
//
// The formulas (USGS Landsat 8 Data Users Handbook, section 5.1):
//
//	TOA  = (REFLECTANCE_MULT_BAND_n * DN + REFLECTANCE_ADD_BAND_n) / sin(SUN_ELEVATION)
//	NDVI = (B5 - B4) / (B5 + B4)
//
// DN 0 is no-data and gives NaN; NDVI is NaN where either band is NaN or
// B5 + B4 is 0.
package raster
