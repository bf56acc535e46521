package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// Tolerance. Each element of C is checked against a float64 reference with
// the worst-case bound of recursive float32 summation (Higham, Accuracy and
// Stability of Numerical Algorithms, 2nd ed., section 3.1):
//
//	|C - Cref| <= gamma * (|alpha| * sum_p |a_ip| |b_pj| + |beta| |c_ij|),
//	gamma = (k + 8) * 2^-24
//
// k rounding errors of at most 2^-24 (one per multiply-add; fewer with FMA),
// plus a few for alpha, beta and the addition of k blocks. A bound relative
// to the sum of magnitudes, not to |Cref|, because C may be a difference of
// large terms (a kNN distance, a centred product): there no relative error
// in |Cref| can be promised. It cannot fail on a correct product, and a wrong
// element (a missed, doubled or misplaced term) is off by the size of a
// term, orders of magnitude more.
func tolerance(k int) float64 { return float64(k+8) * 0x1p-24 }

// ref is the float64 reference product, plus the magnitude sums of the
// tolerance.
func ref(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (want, mag []float64) {
	want, mag = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s, g float64
			for p := range k {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
				g += math.Abs(float64(av) * float64(bv))
			}
			w := float64(alpha) * s
			mg := math.Abs(float64(alpha)) * g
			if beta != 0 {
				w += float64(beta) * float64(c[i*ldc+j])
				mg += math.Abs(float64(beta) * float64(c[i*ldc+j]))
			}
			want[i*n+j], mag[i*n+j] = w, mg
		}
	}
	return want, mag
}

// gemmCase is one product with its operands stored with padding (leading
// dimensions larger than the rows), so strides are exercised.
type gemmCase struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a, b, c        []float32
	lda, ldb, ldc  int
}

func newCase(r *rand.Rand, transA, transB bool, m, n, k int, alpha, beta float32, pad int) gemmCase {
	g := gemmCase{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	g.lda, g.ldb, g.ldc = max(1, ac)+pad, max(1, bc)+pad, max(1, n)+pad
	g.a, g.b, g.c = randSlice(r, ar*g.lda), randSlice(r, br*g.ldb), randSlice(r, m*g.ldc)
	return g
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func (g gemmCase) String() string {
	return fmt.Sprintf("tA=%v tB=%v m=%d n=%d k=%d alpha=%g beta=%g lda=%d ldb=%d ldc=%d", g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.beta, g.lda, g.ldb, g.ldc)
}

// run computes the case with kern and workers goroutines, on a copy of C.
func (g gemmCase) run(kern *kernel, workers int) []float32 {
	c := append([]float32(nil), g.c...)
	sgemmWith(kern, workers, g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, c, g.ldc)
	return c
}

// checkCase checks got against the reference within tolerance, and that the
// padding of C (columns n..ldc) is untouched.
func checkCase(t *testing.T, g gemmCase, got []float32, what string) {
	t.Helper()
	want, mag := ref(g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, g.c, g.ldc)
	tol := tolerance(g.k)
	for i := range g.m {
		for j := range g.ldc {
			v := got[i*g.ldc+j]
			if j >= g.n {
				require.Equal(t, math.Float32bits(g.c[i*g.ldc+j]), math.Float32bits(v), "%s %v: padding C[%d][%d] written", what, g, i, j)
				continue
			}
			w := want[i*g.n+j]
			if math.Abs(float64(v)-w) > tol*mag[i*g.n+j] {
				t.Fatalf("%s %v: C[%d][%d] = %g, want %g (error %.3g, bound %.3g)", what, g, i, j, v, w, math.Abs(float64(v)-w), tol*mag[i*g.n+j])
			}
		}
	}
}

// The ragged sizes: 1, 7, 31, 257 and neighbours of the kernels' tiles.
var sizes = []int{1, 2, 3, 4, 5, 6, 7, 13, 14, 15, 16, 17, 31, 32, 33, 64, 257}

func TestKernelsAvailable(t *testing.T) {
	names := []string{}
	for _, k := range kernels {
		names = append(names, k.name)
	}
	t.Logf("kernels: %v, Sgemm uses %s", names, Kernel())
	require.Equal(t, "go", kernels[0].name)
	require.Equal(t, best().name, Kernel())
}

// Every kernel against the float64 reference: all transpose combinations,
// ragged shapes, alpha and beta values (0 and 1 take their own paths),
// strided operands, one goroutine and several.
func TestSgemmMatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	scalars := [][2]float32{{1, 0}, {1, 1}, {-0.5, 0}, {2, 1}, {1, -1.5}, {0.75, 0.25}}
	for _, kern := range kernels {
		t.Run(kern.name, func(t *testing.T) {
			n := 0
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					for i := range 40 {
						m, nn, k := sizes[r.IntN(len(sizes))], sizes[r.IntN(len(sizes))], sizes[r.IntN(len(sizes))]
						if i < 4 { // k past one block: the blocks are added
							k = kern.kcMax + 1 + r.IntN(2*kern.kcMax)
						}
						s := scalars[r.IntN(len(scalars))]
						g := newCase(r, tA, tB, m, nn, k, s[0], s[1], r.IntN(3))
						checkCase(t, g, g.run(kern, 1+r.IntN(3)), kern.name)
						n++
					}
				}
			}
			t.Logf("%d products", n)
		})
	}
}

// Large enough to split into tasks over several goroutines, with partial
// tiles at the task and matrix edges.
func TestSgemmParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, kern := range kernels {
		for _, dims := range [][3]int{{257, 300, 129}, {31, 1000, 70}, {1000, 7, 33}} {
			g := newCase(r, r.IntN(2) == 0, r.IntN(2) == 0, dims[0], dims[1], dims[2], 1, 0.5, 1)
			checkCase(t, g, g.run(kern, 4), kern.name)
		}
	}
}

// The same bits with 1 and N goroutines (the trainer's reproducibility and
// the kNN's query blocks rely on it), and the same bits for a row of C
// whatever the rows computed with it.
func TestSgemmDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, kern := range kernels {
		for _, dims := range [][3]int{{300, 257, 800}, {64, 4096, 784}, {1, 1000, 31}} {
			g := newCase(r, false, true, dims[0], dims[1], dims[2], 1, 0, 0)
			one := g.run(kern, 1)
			for _, w := range []int{2, 3, 8} {
				require.Equal(t, one, g.run(kern, w), "%s %v: %d goroutines", kern.name, g, w)
			}
			// Row 0 alone (m = 1): the same values as in the full product.
			row := make([]float32, g.n)
			sgemmWith(kern, 2, false, true, 1, g.n, g.k, 1, g.a, g.lda, g.b, g.ldb, 0, row, g.n)
			require.Equal(t, one[:g.n], row, "%s %v: row 0 computed alone", kern.name, g)
		}
	}
}

// BLAS conventions: beta == 0 overwrites NaN, alpha == 0 and k == 0 do not
// read A and B, empty products are no-ops.
func TestSgemmSpecialCases(t *testing.T) {
	nan := float32(math.NaN())
	for _, kern := range kernels {
		a := []float32{1, 2, 3, 4}
		b := []float32{5, 6, 7, 8}
		c := []float32{nan, nan, nan, nan}
		sgemmWith(kern, 1, false, false, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2)
		require.Equal(t, []float32{19, 22, 43, 50}, c, kern.name)

		bad := []float32{nan, nan, nan, nan}
		c = []float32{1, 2, 3, 4}
		sgemmWith(kern, 1, false, false, 2, 2, 2, 0, bad, 2, bad, 2, 2, c, 2)
		require.Equal(t, []float32{2, 4, 6, 8}, c, kern.name)
		sgemmWith(kern, 1, false, false, 2, 2, 0, 1, nil, 1, nil, 2, 0, c, 2)
		require.Equal(t, []float32{0, 0, 0, 0}, c, kern.name)
		sgemmWith(kern, 1, false, false, 0, 0, 5, 1, nil, 5, nil, 1, 0, nil, 1)
	}
}

func TestSgemmBadArguments(t *testing.T) {
	s := make([]float32, 100)
	for _, tc := range []struct {
		name string
		f    func()
		msg  string
	}{
		{"negative", func() { Sgemm(false, false, -1, 2, 2, 1, s, 2, s, 2, 0, s, 2) }, "gemm: negative size m=-1 n=2 k=2"},
		{"lda", func() { Sgemm(false, false, 2, 2, 3, 1, s, 2, s, 2, 0, s, 2) }, "gemm: lda 2 < 3: A is m x k = 2x3, row-major"},
		{"lda trans", func() { Sgemm(true, false, 4, 2, 3, 1, s, 3, s, 2, 0, s, 2) }, "gemm: lda 3 < 4: A is k x m (transposed) = 3x4, row-major"},
		{"ldb trans", func() { Sgemm(false, true, 2, 2, 3, 1, s, 3, s, 2, 0, s, 2) }, "gemm: ldb 2 < 3: B is n x k (transposed) = 2x3, row-major"},
		{"ldc", func() { Sgemm(false, false, 2, 5, 3, 1, s, 3, s, 5, 0, s, 4) }, "gemm: ldc 4 < 5: C is m x n = 2x5, row-major"},
		{"short a", func() { Sgemm(false, false, 20, 2, 10, 1, s, 10, s, 2, 0, s, 2) }, "gemm: A has 100 values, a 20x10 matrix with lda 10 needs 200"},
		{"short c", func() { Sgemm(false, false, 3, 40, 1, 1, s, 1, s, 40, 0, s, 40) }, "gemm: C has 100 values, a 3x40 matrix with ldc 40 needs 120"},
	} {
		require.PanicsWithValue(t, tc.msg, tc.f, tc.name)
	}
}

// A packed B gives bitwise Sgemm's result, for any aligned column range and
// number of goroutines.
func TestSgemmPackedEqualsSgemm(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, kern := range kernels {
		for _, dims := range [][3]int{{37, 300, 785}, {5, 64, 7}, {300, 257, 100}} {
			for _, tB := range []bool{false, true} {
				g := newCase(r, r.IntN(2) == 0, tB, dims[0], dims[1], dims[2], 0.5, 0.25, 1)
				want := g.run(kern, 1)
				pk := packWith(kern, tB, g.k, g.n, g.b, g.ldb)
				require.Equal(t, g.k, pk.Rows())
				require.Equal(t, g.n, pk.Cols())
				for _, cols := range [][2]int{{0, g.n}, {kern.nr, g.n}, {0, 1}, {2 * kern.nr, min(g.n, 5*kern.nr+3)}} {
					j0, j1 := cols[0], cols[1]
					if j0 > j1 {
						continue
					}
					c := append([]float32(nil), g.c...)
					p := &problem{transA: g.transA, m: g.m, n: j1 - j0, k: g.k, alpha: g.alpha, a: g.a, lda: g.lda, beta: g.beta, c: c[j0:], ldc: g.ldc, kern: kern, packed: pk, j0: j0}
					p.check()
					p.run(1 + r.IntN(3))
					for i := range g.m {
						require.Equal(t, want[i*g.ldc+j0:i*g.ldc+j1], c[i*g.ldc+j0:i*g.ldc+j1], "%s %v: columns %d..%d, row %d", kern.name, g, j0, j1, i)
					}
				}
			}
		}
	}
	// The exported entry point, with the machine's kernel.
	g := newCase(r, false, true, 20, 100, 50, 1, 0, 0)
	want := g.run(best(), 1)
	pk := Pack(true, g.k, g.n, g.b, g.ldb)
	c := make([]float32, len(g.c))
	SgemmPacked(0, false, g.m, 1, g.a, g.lda, pk, 0, g.n, 0, c, g.ldc)
	require.Equal(t, want, c)
	require.PanicsWithValue(t, "gemm: columns 1..5 of a packed 50x100 matrix: want 0 <= j0 <= j1 <= 100, j0 a multiple of "+fmt.Sprint(PanelWidth()), func() {
		SgemmPacked(0, false, g.m, 1, g.a, g.lda, pk, 1, 5, 0, c, g.ldc)
	})
}

// A product on one goroutine (workers 1, as callers that run one product
// per core ask) allocates nothing once its packing buffers exist: the
// problem stays on the stack and no closure is made. (The collector is
// off while it is counted: a collection empties the buffers' pool.)
func TestSgemmOneWorkerAllocatesNothing(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector makes sync.Pool drop what it holds: allocations are counted without it")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	r := rand.New(rand.NewPCG(5, 6))
	m, n, k := 70, 90, 300
	a, b, c := randSlice(r, m*k), randSlice(r, k*n), make([]float32, m*n)
	pk := Pack(false, k, n, b, n)
	for _, kern := range kernels {
		run := func() { sgemmWith(kern, 1, false, true, m, n, k, 1, a, k, b, k, 0, c, n) }
		run()
		require.Zero(t, testing.AllocsPerRun(10, run), kern.name)
	}
	packed := func() { SgemmPacked(1, false, m, 1, a, k, pk, 0, n, 0, c, n) }
	packed()
	require.Zero(t, testing.AllocsPerRun(10, packed))
}

// A product on several goroutines allocates nothing once its buffers are
// pooled: neither the problem its goroutines share nor the B it packs once
// for its row blocks (300 x 200) or the A for its column blocks (60 x 900).
func TestNoAllocations(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector makes sync.Pool drop what it holds: allocations are counted without it")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, dims := range [][3]int{{300, 200, 100}, {60, 900, 100}} {
		m, n, k := dims[0], dims[1], dims[2]
		a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
		for i := range a {
			a[i] = float32(i%7) - 3
		}
		for i := range b {
			b[i] = float32(i%5) - 2
		}
		SgemmWorkers(4, false, false, m, n, k, 1, a, k, b, n, 0, c, n)
		want := append([]float32{}, c...)
		allocs := testing.AllocsPerRun(20, func() {
			SgemmWorkers(4, false, false, m, n, k, 1, a, k, b, n, 0, c, n)
		})
		require.Zero(t, allocs, "%v", dims)
		require.Equal(t, want, c, "%v", dims)
	}
}

// A product of few rows takes the short kernel where there is one (16 rows:
// two 8-row tiles, not two 14-row ones), a tall one the long kernel, and
// either gives the long kernel's bits, from B unpacked and packed.
func TestShortKernelForFewRows(t *testing.T) {
	long := best()
	if long.short == nil {
		t.Skipf("kernel %s has no short sibling on this machine", long.name)
	}
	require.Same(t, long.short, long.forRows(16))
	require.Same(t, long.short, long.forRows(8))
	require.Same(t, long, long.forRows(128))
	require.Same(t, long, long.forRows(1000))
	r := rand.New(rand.NewPCG(5, 6))
	for _, m := range []int{1, 7, 16, 33} {
		n, k := 70, 2*long.kcMax+5
		a, b := randSlice(r, m*k), randSlice(r, k*n)
		want, got, packed := make([]float32, m*n), make([]float32, m*n), make([]float32, m*n)
		sgemmWith(long, 1, false, false, m, n, k, 1, a, k, b, n, 0, want, n)
		Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, got, n)
		SgemmPacked(1, false, m, 1, a, k, Pack(false, k, n, b, n), 0, n, 0, packed, n)
		require.Equal(t, want, got, "m %d", m)
		require.Equal(t, want, packed, "m %d, B packed", m)
	}
}

// packPanels of a row-major A gives the same panels with and without the
// vector transpose (packRows), for panel widths 1 to 32, ragged last
// panels, steps not a multiple of 16, and offsets into A.
func TestPackRowsEqualsLoop(t *testing.T) {
	saved := packRowsVector
	defer func() { packRowsVector = saved }()
	r := rand.New(rand.NewPCG(7, 8))
	for _, w := range []int{1, 4, 6, 8, 14, 16, 17, 24, 32} {
		for _, kc := range []int{1, 15, 16, 33, 200} {
			m, k, ld := 2*w+3, kc+5, kc+9
			x := randSlice(r, m*ld)
			size := roundUp(m, w) * kc
			packRowsVector = false
			want := make([]float32, size)
			packPanels(want, x, ld, false, 0, m, 2, kc, w)
			packRowsVector = saved
			got := make([]float32, size)
			for i := range got {
				got[i] = -1
			}
			packPanels(got, x, ld, false, 0, m, 2, kc, w)
			require.Equal(t, want, got, "w %d kc %d k %d", w, kc, k)
		}
	}
}

// A product of few columns takes the narrow kernel where there is one (16
// columns: one 16-wide tile, not half of a 32-wide one), a wide one the
// long kernel, and either gives the long kernel's bits, B transposed or
// not, k over one block or several.
func TestNarrowKernelForFewColumns(t *testing.T) {
	long := best()
	if long.narrow == nil {
		t.Skipf("kernel %s has no narrow sibling on this machine", long.name)
	}
	require.Same(t, long.narrow, long.forShape(64, 16))
	require.Same(t, long.narrow, long.forShape(16, 16))
	require.Same(t, long.narrow, long.forShape(1000, 8))
	require.Same(t, long, long.forShape(64, 64))
	require.Same(t, long, long.forShape(1000, 1000))
	require.Same(t, long.short, long.forShape(16, 64))
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1, 5, 16, 17} {
		for _, k := range []int{16, 31, 2*long.kcMax + 5} {
			for _, transB := range []bool{false, true} {
				m := 37
				a, b := randSlice(r, m*k), randSlice(r, k*n)
				ldb := n
				if transB {
					ldb = k
				}
				want, got := make([]float32, m*n), make([]float32, m*n)
				sgemmWith(long, 1, false, transB, m, n, k, 1, a, k, b, ldb, 0, want, n)
				Sgemm(false, transB, m, n, k, 1, a, k, b, ldb, 0, got, n)
				require.Equal(t, want, got, "n %d k %d transB %v", n, k, transB)
			}
		}
	}
}

// span cuts units of size into parts that follow one another from 0 to n,
// each a multiple of size but the last (cut at n), none empty, their units
// one apart at most.
func TestSpan(t *testing.T) {
	for _, c := range []struct{ parts, units, size, n int }{
		{8, 57, 14, 788}, {8, 8, 14, 100}, {3, 10, 32, 300}, {1, 5, 16, 70}, {8, 96, 32, 3072},
	} {
		end, lo, hi := 0, c.units, 0
		for i := range c.parts {
			i0, i1 := span(i, c.parts, c.units, c.size, c.n)
			require.Equal(t, end, i0, "%+v: part %d starts where %d ends", c, i, i-1)
			require.Less(t, i0, i1, "%+v: part %d is empty", c, i)
			require.Zero(t, i0%c.size, "%+v: part %d", c, i)
			u := (i1 - i0 + c.size - 1) / c.size
			lo, hi, end = min(lo, u), max(hi, u), i1
		}
		require.Equal(t, c.n, end, "%+v: the parts end at n", c)
		require.LessOrEqual(t, hi-lo, 1, "%+v: parts of %d to %d units", c, lo, hi)
	}
}
