package raster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// widths are the vector widths this machine can run: 0 (the scalar code)
// and those of the kernels its CPU has.
func widths() []int {
	w := []int{0}
	for _, v := range []int{8, 16} {
		if v <= simd {
			w = append(w, v)
		}
	}
	return w
}

// withWidth runs f with the kernels of width w (and non-temporal stores from
// ntMin bytes).
func withWidth(w, ntMin int, f func()) {
	defer func(s, n int) { simd, ntMinBytes = s, n }(simd, ntMinBytes)
	simd, ntMinBytes = w, ntMin
	f()
}

// coefficients: the committed scene's band 4 and 5, random ones, and an
// identity-like pair under which some red and near-infrared values are
// exact opposites (n + r == 0: NDVI NaN) and others are equal (NDVI 0).
func coefficients(r *rand.Rand) [][4]float64 {
	sin := math.Sin(58.99675180 * math.Pi / 180)
	cs := [][4]float64{
		{2e-5 / sin, -0.1 / sin, 2e-5 / sin, -0.1 / sin},
		{1, -30000, 1, -30000},
	}
	for range 3 {
		cs = append(cs, [4]float64{1e-5 + 3e-5*r.Float64(), -0.2 * r.Float64(), 1e-5 + 3e-5*r.Float64(), -0.2 * r.Float64()})
	}
	return cs
}

// allDNs returns every DN once (red) and a permutation of them (NIR), so
// every value and many pairs are covered, plus pairs summing to 60000 (the
// n + r == 0 case of the second coefficients) and equal pairs.
func allDNs(r *rand.Rand) (red, nir []uint16) {
	red, nir = make([]uint16, 1<<16), make([]uint16, 1<<16)
	for i := range red {
		red[i] = uint16(i)
	}
	for i, p := range r.Perm(1 << 16) {
		nir[i] = uint16(p)
	}
	for i := 0; i < 2000; i++ {
		red = append(red, uint16(30000-i), uint16(29000+i), 0, uint16(i))
		nir = append(nir, uint16(30000+i), uint16(29000+i), uint16(i), 0)
	}
	return red, nir
}

// The vector kernels give the scalar code's bits (NaN included) for every
// DN, on aligned and misaligned planes of many lengths, with and without
// non-temporal stores.
func TestTOAKernelsBitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	dr, dn := allDNs(r)
	checked := 0
	defer func() { t.Logf("%d pixels checked, vector widths %v", checked, widths()) }()
	for _, c := range coefficients(r) {
		// The reference: the scalar formulas, pixel by pixel.
		wantR, wantN, wantV := make([]float32, len(dr)), make([]float32, len(dr)), make([]float32, len(dr))
		for i := range dr {
			wantR[i], wantN[i] = toaValue(dr[i], c[0], c[1]), toaValue(dn[i], c[2], c[3])
			if s := wantN[i] + wantR[i]; s == 0 {
				wantV[i] = nan32
			} else {
				wantV[i] = (wantN[i] - wantR[i]) / s
			}
		}
		for _, w := range widths() {
			for _, ntMin := range []int{0, 1 << 30} {
				for _, cut := range [][2]int{{0, len(dr)}, {1, len(dr)}, {3, 3 + 37}, {5, 6}, {16, 16 + 8*1000 + 7}} {
					name := fmt.Sprintf("width %d, nt from %d bytes, coefficients %v, pixels %d..%d", w, ntMin, c, cut[0], cut[1])
					withWidth(w, ntMin, func() {
						n := cut[1] - cut[0]
						red, nir, ndvi := alignedPlane(n), alignedPlane(n), alignedPlane(n)
						toaNDVIPlanes(red, nir, ndvi, dr[cut[0]:cut[1]], dn[cut[0]:cut[1]], c[0], c[1], c[2], c[3])
						requireBits(t, wantR[cut[0]:cut[1]], red, "red, "+name)
						requireBits(t, wantN[cut[0]:cut[1]], nir, "nir, "+name)
						requireBits(t, wantV[cut[0]:cut[1]], ndvi, "ndvi, "+name)
						// One element in: planes not aligned on a vector.
						red = make([]float32, n+1)[1:]
						toaPlane(red, dr[cut[0]:cut[1]], c[0], c[1])
						requireBits(t, wantR[cut[0]:cut[1]], red, "toaPlane, "+name)
						checked += n
					})
				}
			}
		}
	}
}

// alignedPlane returns n float32s on a 64-byte boundary (as large
// allocations are), so the non-temporal path can run.
func alignedPlane(n int) []float32 {
	s := make([]float32, n+16)
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(s)))%64) / 4
	if off != 0 {
		off = 16 - off
	}
	return s[off : off+n]
}

func requireBits(t *testing.T, want, got []float32, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("%s: pixel %d: %v (%#08x), want %v (%#08x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}
