package gemm

//go:generate go run gen_amd64.go -o kernel_amd64.s

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
)

// Flags of a kernel call: how the tile t = A·B is written to C.
const (
	flagAlpha = 1 << iota // t = alpha*t first
	flagBeta0             // C = t (C is not read)
	flagBeta1             // C = C + t
	// neither flagBeta0 nor flagBeta1: C = beta*C + t
)

// kernel is one micro-kernel with its blocking.
type kernel struct {
	name   string
	mr, nr int // the tile it computes
	// kcMax bounds the k steps of one call (A micro-panel mr*kcMax and B
	// micro-panel nr*kcMax stay in L1 and L2); mc rows of A (a multiple of
	// mr) are packed at a time, and nc columns of B (a multiple of nr).
	kcMax, mc, nc int
	// run computes the mr x nr tile t = A·B from kc >= 1 steps of the packed
	// micro-panels a (mr floats a step) and b (nr floats a step), and writes
	// it to the tile at c (rows ldc apart) as flags say.
	run func(kc int, a, b, c []float32, ldc int, alpha, beta float32, flags int)
	// short, where not nil, is a kernel of fewer rows that reads B's
	// panels as this one packs them (the same nr and kcMax), for products
	// of few rows; narrow, a kernel of fewer columns (the same kcMax), for
	// products of few columns from B packed for it (forShape).
	short, narrow *kernel
}

// forShape is the kernel for an m x n product: short or narrow where its
// tiles cover the product with under 85% of this one's padded area (16
// rows: two tiles of 8, not 28 rows of 14-row tiles, half padding; 16
// columns: one 16-wide tile, not half of a 32-wide one), the smaller of
// the two where both do, else k. Every kernel sums each element in the
// same order, so the choice does not change the bits.
func (k *kernel) forShape(m, n int) *kernel {
	best, area := k, roundUp(m, k.mr)*roundUp(n, k.nr)
	limit := 85 * area
	for _, s := range []*kernel{k.short, k.narrow} {
		if s == nil {
			continue
		}
		if a := roundUp(m, s.mr) * roundUp(n, s.nr); 100*a < limit && a < area {
			best, area = s, a
		}
	}
	return best
}

// forRows is the kernel for a product of m rows from B packed for k: short
// where forShape would take it, else k.
func (k *kernel) forRows(m int) *kernel {
	if s := k.short; s != nil && 100*roundUp(m, s.mr) < 85*roundUp(m, k.mr) {
		return s
	}
	return k
}

// packsBAs reports whether k reads B's panels as o packs them.
func (k *kernel) packsBAs(o *kernel) bool { return k.nr == o.nr && k.kcMax == o.kcMax }

// kernels are the kernels this machine can run, portable first; the last is
// the one Sgemm uses. kernel_amd64.go appends the assembly ones the CPU
// supports.
var kernels = []*kernel{{name: "go", mr: 4, nr: 4, kcMax: 256, mc: 512, nc: 512, run: kernelGo}}

// Kernel names the micro-kernel Sgemm uses on this machine: "avx512",
// "avx2" or "go" (the portable one: other architectures, CPUs without
// AVX2 and FMA, or the purego build tag).
func Kernel() string { return best().name }

func best() *kernel { return kernels[len(kernels)-1] }

// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major float32
// matrices, where op(A) is m x k and op(B) is k x n:
//
//   - transA false: A is m x k, element (i, p) at a[i*lda+p];
//     transA true: A is k x m and op(A) its transpose, (i, p) at a[p*lda+i];
//   - transB false: B is k x n, (p, j) at b[p*ldb+j];
//     transB true: B is n x k and op(B) its transpose, (p, j) at b[j*ldb+p];
//   - C is m x n, (i, j) at c[i*ldc+j].
//
// As in BLAS, with beta == 0 C is only written (NaN or infinity in it do not
// propagate), and with alpha == 0 or k == 0 A and B are not read.
//
// It uses up to runtime.GOMAXPROCS(0) goroutines, each computing whole
// blocks of C; every element is summed by one goroutine in increasing p
// order in blocks whose bounds depend on k only, so the result is bitwise
// the same whatever the number of goroutines, the blocking of M and N, and
// the element's position in its block.
//
// Bad arguments (negative sizes, a leading dimension too small, a slice
// too short for its matrix) panic with a message naming the argument, as
// gonum's BLAS does: they are programming errors.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	SgemmWorkers(0, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmWorkers is Sgemm with at most workers goroutines (0:
// runtime.GOMAXPROCS(0); 1: the calling goroutine only, for callers that
// already run one product per core). The result is the same bits whatever
// workers is.
func SgemmWorkers(workers int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	p := problem{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc, kern: best().forShape(m, n)}
	p.check()
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p.run(workers)
}

// problem is one call's arguments.
type problem struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a, b, c        []float32
	lda, ldb, ldc  int
	kern           *kernel
	// packed, when set, is op(B) already packed, and column j of the
	// product is its column j+j0 (b, ldb and transB are unused).
	packed *Packed
	j0     int
	// packedA, when set, is op(A) already packed (a, lda and transA are
	// unused).
	packedA *PackedA
	// rowTasks x colTasks tasks cut C's rowUnits units of mr rows and
	// colUnits units of nr columns as evenly as they go, for a run on
	// several goroutines (Task, span).
	rowTasks, colTasks, rowUnits, colUnits int
}

// problems are the copies of problems that the goroutines of a run share
// (pooled: a run allocates nothing).
var problems = sync.Pool{New: func() any { return new(problem) }}

// prepacked are the Packed matrices into which a run packs a B shared by
// its row blocks, prepackedA the PackedA into which it packs an A shared by
// its column blocks (pooled).
var (
	prepacked  = sync.Pool{New: func() any { return new(Packed) }}
	prepackedA = sync.Pool{New: func() any { return new(PackedA) }}
)

// Task computes block t of C, as run cuts it.
func (p *problem) Task(t int) {
	i0, i1 := span(t/p.colTasks, p.rowTasks, p.rowUnits, p.kern.mr, p.m)
	j0, j1 := span(t%p.colTasks, p.colTasks, p.colUnits, p.kern.nr, p.n)
	p.block(i0, i1, j0, j1)
}

// span is the first and last+1 index (of n) of part i of parts that cut
// units units of size each as evenly as they go: 57 units in 8 parts are
// 7 of 7 and 1 of 8, not 7 of 8 and 1 of 1 (two goroutines then take 4
// parts each of nearly equal work, not 4 full and 3 full and one empty:
// the attention's output projection of vit_b_16 at batch 4, 788 x 768 by
// 768 x 768, scaled 1.78x on two cores while the model's other products
// scaled 1.95x).
func span(i, parts, units, size, n int) (int, int) {
	return i * units / parts * size, min(n, (i+1)*units/parts*size)
}

func (p *problem) check() {
	if p.m < 0 || p.n < 0 || p.k < 0 {
		panic(fmt.Sprintf("gemm: negative size m=%d n=%d k=%d", p.m, p.n, p.k))
	}
	ar, ac, an := p.m, p.k, "m x k"
	if p.transA {
		ar, ac, an = p.k, p.m, "k x m (transposed)"
	}
	br, bc, bn := p.k, p.n, "k x n"
	if p.transB {
		br, bc, bn = p.n, p.k, "n x k (transposed)"
	}
	if p.packedA == nil {
		checkMatrix("A", an, ar, ac, p.a, p.lda, "lda")
	}
	if p.packed == nil {
		checkMatrix("B", bn, br, bc, p.b, p.ldb, "ldb")
	}
	checkMatrix("C", "m x n", p.m, p.n, p.c, p.ldc, "ldc")
}

// checkMatrix panics unless s holds a rows x cols row-major matrix with
// leading dimension ld.
func checkMatrix(name, shape string, rows, cols int, s []float32, ld int, ldName string) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("gemm: %s %d < %d: %s is %s = %dx%d, row-major", ldName, ld, max(1, cols), name, shape, rows, cols))
	}
	if rows > 0 && cols > 0 && len(s) < (rows-1)*ld+cols {
		panic(fmt.Sprintf("gemm: %s has %d values, a %dx%d matrix with %s %d needs %d", name, len(s), rows, cols, ldName, ld, (rows-1)*ld+cols))
	}
}

// kBlocks returns the k-step block size: k split into the fewest blocks of
// at most kcMax steps, as even as possible. It depends on k (and the
// machine's kernel) only, which keeps the summation order of every element
// independent of how C is split.
func (kern *kernel) kBlock(k int) int {
	nb := (k + kern.kcMax - 1) / kern.kcMax
	return (k + nb - 1) / nb
}

// prepackMax is the size (floats) up to which a B shared by several row
// blocks is packed once up front (16 MiB).
const prepackMax = 4 << 20

// parallelMin is the work (multiply-adds) below which a product runs on one
// goroutine: starting goroutines costs more than it saves.
const parallelMin = 1 << 18

func (p *problem) run(workers int) {
	if p.m == 0 || p.n == 0 {
		return
	}
	if p.alpha == 0 || p.k == 0 {
		scaleC(p.m, p.n, p.beta, p.c, p.ldc)
		return
	}
	kern := p.kern
	// Split C into tasks along its longer side (the other operand is then
	// packed once per task): rows in multiples of mr, columns of nr.
	rowUnits, colUnits := (p.m+kern.mr-1)/kern.mr, (p.n+kern.nr-1)/kern.nr
	if workers > 1 && p.m*p.n*p.k < parallelMin {
		workers = 1
	}
	tasks := 1
	if workers > 1 {
		tasks = 4 * workers // dynamic scheduling evens out busy cores
	}
	rowTasks, colTasks := 1, 1
	if p.m >= p.n {
		rowTasks = min(tasks, rowUnits)
		colTasks = min((tasks+rowTasks-1)/rowTasks, colUnits)
	} else {
		colTasks = min(tasks, colUnits)
		rowTasks = min((tasks+colTasks-1)/colTasks, rowUnits)
	}
	total := rowTasks * colTasks
	// Row blocks would each pack all of B: where B is small enough, pack it
	// once for all of them (the same bits: see SgemmPacked).
	if rowTasks > 1 && p.packed == nil && p.k*roundUp(p.n, kern.nr) <= prepackMax {
		pk := prepacked.Get().(*Packed)
		defer prepacked.Put(pk)
		p.packed = pk.pack(kern, p.transB, p.k, p.n, p.b, p.ldb)
	}
	// Column blocks would each pack all of A (a product split along its
	// columns, of fewer rows than columns): where A is small enough, pack it
	// once for all of them. Two goroutines, B packed, fastest of 20
	// alternating: 64 x 1024 by 1024 x 4096 2.35-3.77 -> 2.23-3.60 ms,
	// 197 x 768 by 768 x 3072 4.01-4.12 -> 3.92-4.01 ms, 788 rows the same.
	if colTasks > 1 && p.packedA == nil && p.k*roundUp(p.m, kern.mr) <= prepackMax {
		pk := prepackedA.Get().(*PackedA)
		defer prepackedA.Put(pk)
		p.packedA = pk.pack(kern, p.transA, p.m, p.k, p.a, p.lda)
	}
	if workers == 1 || total == 1 { // on the calling goroutine, allocating nothing
		for r := range rowTasks {
			i0, i1 := span(r, rowTasks, rowUnits, kern.mr, p.m)
			for c := range colTasks {
				j0, j1 := span(c, colTasks, colUnits, kern.nr, p.n)
				p.block(i0, i1, j0, j1)
			}
		}
		return
	}
	// The goroutines take the blocks from a shared counter. They share a
	// copy of the problem (p itself stays on its caller's stack).
	q := problems.Get().(*problem)
	*q = *p
	q.rowTasks, q.colTasks, q.rowUnits, q.colUnits = rowTasks, colTasks, rowUnits, colUnits
	parallel.DoTasks(workers, total, q)
	*q = problem{} // hold none of the caller's matrices
	problems.Put(q)
}

// block computes rows i0..i1 and columns j0..j1 of C (i0 a multiple of mr,
// j0 of nr) with the BLIS loop nest: k blocks, then mc rows of A packed
// (reused for every column block), then nc columns of B packed, then the
// micro-kernel over mr x nr tiles, the A micro-panel staying in L1 while
// the B micro-panels stream from L2.
func (p *problem) block(i0, i1, j0, j1 int) {
	kern := p.kern
	mr, nr := kern.mr, kern.nr
	kb := kern.kBlock(p.k)
	na := min(kern.mc, roundUp(i1-i0, mr)) * kb
	if p.packedA != nil {
		na = 0
		if p.packedA.kern != kern {
			panic("gemm: A was packed for kernel " + p.packedA.kern.name + ", not " + kern.name)
		}
	}
	nb := 0
	if p.packed == nil {
		nb = min(kern.nc, roundUp(j1-j0, nr)) * kb
	}
	buf := getBuffers(na, nb, mr*nr)
	defer pool.Put(buf)
	pa, pb, tile := buf.a, buf.b, buf.tile
	if p.packed != nil && !kern.packsBAs(p.packed.kern) {
		panic("gemm: B was packed for kernel " + p.packed.kern.name + ", not " + kern.name)
	}
	for pc := 0; pc < p.k; pc += kb {
		kc := min(kb, p.k-pc)
		beta, flags := p.beta, 0
		if p.alpha != 1 {
			flags |= flagAlpha
		}
		if pc > 0 {
			beta = 1 // later k blocks add to what the first wrote
		}
		switch beta {
		case 0:
			flags |= flagBeta0
		case 1:
			flags |= flagBeta1
		}
		for ic := i0; ic < i1; ic += kern.mc {
			mc := min(kern.mc, i1-ic)
			if p.packedA != nil {
				pa = p.packedA.block(pc, kc, ic, mc)
			} else {
				packA(pa, p.a, p.lda, p.transA, ic, mc, pc, kc, mr)
			}
			for jc := j0; jc < j1; jc += kern.nc {
				nc := min(kern.nc, j1-jc)
				if p.packed != nil {
					pb = p.packed.block(pc, kc, p.j0+jc, nc)
				} else {
					packB(pb, p.b, p.ldb, p.transB, jc, nc, pc, kc, nr)
				}
				for ir := 0; ir < mc; ir += mr {
					ap := pa[ir*kc : (ir+mr)*kc]
					rows := min(mr, mc-ir)
					for jr := 0; jr < nc; jr += nr {
						bp := pb[jr*kc : (jr+nr)*kc]
						cols := min(nr, nc-jr)
						ci := (ic+ir)*p.ldc + jc + jr
						if rows == mr && cols == nr {
							kern.run(kc, ap, bp, p.c[ci:], p.ldc, p.alpha, beta, flags)
							continue
						}
						// A partial tile: the same kernel into a scratch tile,
						// then the same update of the elements that exist.
						kern.run(kc, ap, bp, tile, nr, 1, 0, flagBeta0)
						for r := range rows {
							update(p.c[ci+r*p.ldc:ci+r*p.ldc+cols], tile[r*nr:r*nr+cols], p.alpha, beta, flags)
						}
					}
				}
			}
		}
	}
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// update writes the tile row t to the C row c as a kernel does: t times
// alpha (rounded), then stored, added, or added to beta*c (rounded).
func update(c, t []float32, alpha, beta float32, flags int) {
	t = t[:len(c)]
	for j, v := range t {
		if flags&flagAlpha != 0 {
			v = float32(alpha * v)
		}
		switch {
		case flags&flagBeta0 != 0:
			c[j] = v
		case flags&flagBeta1 != 0:
			c[j] += v
		default:
			c[j] = float32(beta*c[j]) + v
		}
	}
}

// scaleC sets C = beta*C (C = 0 for beta == 0).
func scaleC(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// packA copies rows ic..ic+mc and k steps pc..pc+kc of op(A) into dst as
// micro-panels of mr rows: panel q holds, for each step p, the mr values
// op(A)[ic+q*mr+r][pc+p], rows past the end as zeros.
func packA(dst, a []float32, lda int, trans bool, ic, mc, pc, kc, mr int) {
	packPanels(dst, a, lda, trans, ic, mc, pc, kc, mr)
}

// packB copies columns jc..jc+nc and k steps pc..pc+kc of op(B) into dst as
// micro-panels of nr columns: panel q holds, for each step p, the nr values
// op(B)[pc+p][jc+q*nr+j], columns past the end as zeros.
func packB(dst, b []float32, ldb int, trans bool, jc, nc, pc, kc, nr int) {
	packPanels(dst, b, ldb, !trans, jc, nc, pc, kc, nr)
}

// packPanels copies lines i0..i0+n and k steps pc..pc+kc of x into dst as
// micro-panels of w lines: panel q holds, for each step p, the w values of
// lines i0+q*w.. at step pc+p, lines past the end as zeros. With stepMajor,
// x holds a step's values of consecutive lines together (x[p*ld+i]: A
// transposed, B as stored); otherwise a line's steps (x[i*ld+p]).
func packPanels(dst, x []float32, ld int, stepMajor bool, i0, n, pc, kc, w int) {
	for q := 0; q < n; q += w {
		panel := dst[q*kc : (q+w)*kc]
		lines := min(w, n-q)
		if stepMajor { // w consecutive values a step
			packSteps(panel, x[pc*ld+i0+q:], ld, kc, lines, w)
			continue
		}
		// Whole blocks of 16 steps transposed in registers where there is
		// a kernel, the rest value by value.
		done := packRows(panel, x[(i0+q)*ld+pc:], ld, kc, lines, w)
		if done == kc {
			continue
		}
		for r := range lines {
			src := x[(i0+q+r)*ld+pc:]
			src = src[done:kc]
			for p, v := range src {
				panel[(done+p)*w+r] = v
			}
		}
		for r := lines; r < w; r++ {
			for p := done; p < kc; p++ {
				panel[p*w+r] = 0
			}
		}
	}
}

// packSteps copies the first lines values of kc steps of x (step p at
// x[p*ld:]) into a panel of w values a step, zeros past lines. Full panels
// of 16 and 32 (the AVX-512 kernels') are copied as arrays, which the
// compiler moves in vector registers rather than calling memmove.
func packSteps(panel, x []float32, ld, kc, lines, w int) {
	switch {
	case lines == 16 && w == 16:
		for p := range kc {
			*(*[16]float32)(panel[p*16:]) = *(*[16]float32)(x[p*ld:])
		}
	case lines == 32 && w == 32:
		for p := range kc {
			*(*[32]float32)(panel[p*32:]) = *(*[32]float32)(x[p*ld:])
		}
	default:
		for p := range kc {
			d := panel[p*w : p*w+w]
			copy(d, x[p*ld:p*ld+lines])
			clear(d[lines:])
		}
	}
}

// buffers are one goroutine's packing buffers, pooled: a product needs
// at most mc x kc floats of packed A and kc x nc of packed B, fewer for a
// small one, and its goroutines reuse the buffers of earlier products.
type buffers struct {
	a, b, tile []float32
}

var pool = sync.Pool{New: func() any { return new(buffers) }}

// getBuffers returns buffers of at least na, nb and nt floats.
func getBuffers(na, nb, nt int) *buffers {
	buf := pool.Get().(*buffers)
	if len(buf.a) < na {
		buf.a = aligned(na)
	}
	if len(buf.b) < nb {
		buf.b = aligned(nb)
	}
	if len(buf.tile) < nt {
		buf.tile = aligned(nt)
	}
	return buf
}

// aligned returns n float32s starting on a 64-byte boundary (a cache line:
// the kernels' vector loads of B never straddle two).
func aligned(n int) []float32 {
	s := make([]float32, n+16)
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(s)))%64) / 4
	if off != 0 {
		off = 16 - off
	}
	return s[off : off+n : off+n]
}

// sgemmWith is SgemmWorkers with a given kernel (for the tests, which run
// every kernel the machine has).
func sgemmWith(kern *kernel, workers int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	p := &problem{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc, kern: kern}
	p.check()
	p.run(workers)
}
