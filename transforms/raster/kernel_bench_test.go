package raster

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkTOANDVIKernel is BenchmarkTOANDVI without the allocation of the
// output planes: the fused per-pixel kernel (toaNDVIPlanes, the vector
// kernel where the CPU has one) writing into planes allocated once, as the
// copy it is compared with writes into a buffer allocated once. It
// separates the kernel's speed from the Go allocator's cost of fresh planes
// (zeroing them, the garbage collector, pages given back to the OS and
// faulted in again), which BenchmarkTOANDVI includes and reports as
// alloc-ns/pixel. ratio_to_copy as in BenchmarkTOANDVI; with nt=on the
// kernel writes around the caches (non-temporal stores).
func BenchmarkTOANDVIKernel(b *testing.B) {
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

const kernelBytes = 2*2 + 3*4 // two uint16 DNs in, three float32 planes out

func benchTOANDVIKernel(b *testing.B, size int) {
	t := sampleDNTile()
	px := size * size
	dr, dn := make([]uint16, px), make([]uint16, px)
	for i := range dr {
		dr[i], dn[i] = t.DN[2][i%len(t.DN[2])], t.DN[3][i%len(t.DN[3])]
	}
	red, nir, ndvi := make([]float32, px), make([]float32, px), make([]float32, px)
	src, dst := make([]byte, px*kernelBytes), make([]byte, px*kernelBytes)
	var kern, cp time.Duration
	b.SetBytes(int64(px * kernelBytes))
	for b.Loop() {
		start := time.Now()
		toaNDVIPlanes(red, nir, ndvi, dr, dn, 2.3e-5, -0.117, 2.3e-5, -0.117)
		kern += time.Since(start)

		start = time.Now()
		copy(dst, src)
		cp += time.Since(start)
	}
	b.ReportMetric(float64(kern.Nanoseconds())/float64(b.N)/float64(px), "ns/pixel")
	b.ReportMetric(float64(cp.Nanoseconds())/float64(b.N)/float64(px), "copy-ns/pixel")
	b.ReportMetric(float64(cp)/float64(kern), "ratio_to_copy")
}
