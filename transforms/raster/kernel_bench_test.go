package raster

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkTOANDVIKernel splits BenchmarkTOANDVI in two, each against a copy
// of the same bytes in the same run (ratio_to_copy as there):
//
//   - nt=off, nt=on: the fused per-pixel kernel (toaNDVIPlanes, the vector
//     kernel where the CPU has one) writing into planes allocated once, as
//     the copy writes into a buffer allocated once; with nt=on it writes
//     around the caches (non-temporal stores);
//   - alloc: no computation, only the three output planes the step
//     allocates per tile (newPlane: not zeroed; the garbage collector frees
//     them), at 512x512. Nothing writes them here, so pages the runtime gave
//     back to the OS fault in where the step's kernel writes, not in this
//     case; alloc,zeroed allocates them with make instead (zeroed, as the
//     step did before).
func BenchmarkTOANDVIKernel(b *testing.B) {
	// The allocation alone at 512x512 only: at 4096x4096 it pushes 192 MiB
	// a step through the allocator, which leaves the heap in a state that
	// slows the benchmarks run after it (BenchmarkTOANDVI among them) by
	// page faults.
	b.Run("tile=512,alloc", func(b *testing.B) { benchPlaneAlloc(b, 512, newPlane) })
	b.Run("tile=512,alloc,zeroed", func(b *testing.B) {
		benchPlaneAlloc(b, 512, func(n int) []float32 { return make([]float32, n) })
	})
	for _, size := range []int{512, 4096} {
		for _, nt := range []bool{false, true} {
			b.Run(fmt.Sprintf("tile=%d,nt=%v", size, map[bool]string{false: "off", true: "on"}[nt]), func(b *testing.B) {
				defer func(n int) { ntMinBytes = n }(ntMinBytes)
				ntMinBytes = 1 << 62
				if nt {
					ntMinBytes = 0
				}
				benchTOANDVIKernel(b, size)
			})
		}
	}
}

// BenchVsCopy times run against a copy of bytesPerPixel*pixels bytes in the
// same iterations and reports ns/pixel, copy-ns/pixel and ratio_to_copy
// (copy time / run time: 1 is as fast as memory allows). The raster
// benchmarks of both test packages measure through it. The copy's source is
// written first: a fresh allocation that was never written reads the
// kernel's one zero page, from the cache, which made the copy up to twice as
// fast in a run's first count as in the next ones.
func BenchVsCopy(b *testing.B, pixels, bytesPerPixel int, run func()) {
	src, dst := make([]byte, pixels*bytesPerPixel), make([]byte, pixels*bytesPerPixel)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	copy(dst, src) // dst's pages are faulted in before the timing, as run's inputs are
	var took, cp time.Duration
	b.SetBytes(int64(pixels * bytesPerPixel))
	for b.Loop() {
		start := time.Now()
		run()
		took += time.Since(start)

		start = time.Now()
		copy(dst, src)
		cp += time.Since(start)
	}
	b.ReportMetric(float64(took.Nanoseconds())/float64(b.N)/float64(pixels), "ns/pixel")
	b.ReportMetric(float64(cp.Nanoseconds())/float64(b.N)/float64(pixels), "copy-ns/pixel")
	b.ReportMetric(float64(cp)/float64(took), "ratio_to_copy")
}

const kernelBytes = 2*2 + 3*4 // two uint16 DNs in, three float32 planes out

func benchTOANDVIKernel(b *testing.B, size int) {
	t := sampleDNTile()
	px := size * size
	dr, dn := make([]uint16, px), make([]uint16, px)
	for i := range dr {
		dr[i], dn[i] = t.DN[2][i%len(t.DN[2])], t.DN[3][i%len(t.DN[3])]
	}
	red, nir, ndvi := make([]float32, px), make([]float32, px), make([]float32, px)
	BenchVsCopy(b, px, kernelBytes, func() { toaNDVIPlanes(red, nir, ndvi, dr, dn, 2.3e-5, -0.117, 2.3e-5, -0.117) })
}

// allocated keeps benchPlaneAlloc's allocations reachable until the next ones,
// as a step's output is.
var allocated [][]float32

func benchPlaneAlloc(b *testing.B, size int, alloc func(int) []float32) {
	px := size * size
	BenchVsCopy(b, px, kernelBytes, func() {
		allocated = [][]float32{alloc(px), alloc(px), alloc(px)}
	})
}
