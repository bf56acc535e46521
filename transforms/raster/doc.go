// Package raster holds the Landsat steps, from band GeoTIFFs to NDVI and true colour.
//
// The steps read a scene's band GeoTIFFs and its _MTL.txt metadata into
// tiles, and compute top-of-atmosphere (TOA) reflectance, NDVI, a
// true-colour composite with a percentile contrast stretch, and the
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
// # Reading in windows
//
// Reading is two steps, so that no step holds a whole band. The scan step
// (ScanScene) reads a scene's _MTL.txt and the headers of its band files,
// never their pixels, checks them, and plans windows: the scene's tiles when
// the bands are tiled in blocks that divide the tile size, otherwise bands of
// tile rows across the scene (so that each strip is decoded once). The read
// step (ReadWindow) decodes one window of every band from the strips or tiles
// that cover it, the bands in parallel, into its tiles. Read chains them,
// with Dedup (one scan per product ID: the first directory in sorted order)
// and a redistribution of the windows, so that the runner decodes them on
// every core.
//
// The reader (ReadLayout, DecodeWindow) handles single-band 16-bit
// GeoTIFFs, stripped or tiled, uncompressed, LZW or Deflate, with or without
// the horizontal predictor, unsigned or signed with GDAL's no-data value (as
// GIS tools cut crops). What it accepts is bounded before any pixel is
// decoded, and every error names the file: bands of at most MaxBandSide
// pixels a side, all of one size; tiles of at most MaxBlockBytes; at most
// MaxBlocks strips or tiles, each inside the file; a block is decoded no
// further than the size its header declares (a decompression bomb costs its
// window's memory, nothing more). Product IDs and band file names come from
// the metadata and must be plain names (PlainName), resolved inside the scene
// directory; calibration coefficients must lie within a factor of 100 of
// what USGS publishes (MinReflectanceMult, MaxReflectanceMult,
// MaxReflectanceAdd) and give reflectances below MaxReflectance.
//
// Files are opened through package files (transforms/step/files), by the
// scheme of their path: local files always; Beam's filesystems once package
// stepbeam is linked (gs:// with ranged reads in the pipelines).
//
// # Summaries without whole planes
//
// StatsCombiner (per-plane statistics, with an exact, order-independent sum)
// and StretchCombiner (the composite's percentile stretch, from a histogram
// per channel) summarise a scene from its tiles in any order, so a pipeline
// can write tiles as they arrive and still produce a scene's statistics and
// pictures; NDVILegend draws the colour bar of the NDVI picture.
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
// and the purego build tag run the scalar code. The fused TOA+NDVI step
// allocates its output planes without zeroing them (package
// transforms/internal/uninit; make under purego), since its kernels write
// every pixel: zeroing was a second pass over the planes. Where a pipeline's
// consumers keep no tile, it reuses the planes of the tiles it emitted
// (step.RecycleOutputs, which the landsat pipeline passes it), so that a
// 512x512 tile's planes are written while in the cache.
package raster
