package onnx

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/beamgpu/beamgpu/internal/parallel"
)

// Conv by Winograd's minimal filtering, F(2x2, 3x3) (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2015:
// https://arxiv.org/abs/1509.09308): a 3x3 convolution of stride 1 whose
// input and output the plan keeps blocked (plan_layout.go), as ResNet's
// are between its layers.
//
// Each 2x2 tile of output positions is computed from the 4x4 input
// pixels under it: the pixels transformed (V = Bᵀ d B, adds and
// subtractions only), each of the 16 transformed positions ξ multiplied by
// its own transformed weights (U = G g Gᵀ, once per node), an input
// channel's by an output channel's, and the 16 products transformed back
// (Y = Aᵀ M A, adds and subtractions). The products are 16 matrix
// products, tiles x input channels by input channels x output channels,
// where the direct kernel multiplies 36 values a tile (9 taps x 4
// positions) by as many weights: 2.25 times fewer multiply-adds. They run
// on the blocked kernel itself, as 1x1 convolutions whose positions are
// tiles (nchwcTile; the transformed weights packed as a 1x1 layer's).
//
// A task takes a run of tiles (winoChunkBytes of transformed inputs and
// products, in L2, in whole kernel calls), every image's in turn, and
// where those runs are fewer than the tasks the cores want, a part of the
// output blocks too: its tiles' pixels transformed into V (a row of tiles
// and an input block at a time, read from X itself, or, for the tiles
// that read padding, from a copy of their four rows with it), the 16
// products into M, each through the part's groups of output blocks, then
// M transformed into Y with the bias, the residual and the activation.
// The transforms are sums of sums, each rounded; the products' rounding
// is the kernel's; the results differ from the direct convolution's by
// the weights' transform (halves, rounded once) and the order of the
// sums (TestWinogradEqualsDirect, TestWinogradModels): ResNet-50's
// outputs stay within 2.3e-5 of ONNX Runtime's, as with the direct
// kernel.
//
// The transforms run on AVX-512 (ops_conv_winograd_amd64.s), elsewhere in
// Go (winoInGo, winoOutGo); the path is taken where the blocked kernel is
// AVX-512's (useWinograd).

// winoXi is the transformed positions of a tile (4 x 4).
const winoXi = 16

// winoChunkBytes bounds a task's transformed inputs and products (V and
// M): within the L2 of the cores with the group of weights the kernel
// reads (2 MiB on Intel's Sapphire Rapids). A variable for the tests.
var winoChunkBytes = 1 << 20

// winoMinTiles is the fewest tiles a task takes: a task reads all of U
// (16/9 of W) once, so that its products reuse each weight for this many
// tiles at least, or for every tile of the run.
var winoMinTiles = 24

// winoMinChannels is the fewest input and output channels useWinograd
// takes: on 16, each product's kernel call multiplies 16 channels, too
// few for its loads and stores (the test ResNet's 16-channel layers at
// batch 64, one thread, 4.7 and 5.0 ms a layer direct, 6.1 and 5.9 so;
// its 32-channel ones 2.0 and 4.0 -> 1.7 and 3.5).
const winoMinChannels = 32

// winoEnabled turns the path on and off (tests and benchmarks).
var winoEnabled = true

// useWinograd reports whether convolution p takes Winograd's F(2x2, 3x3):
// a 3x3 convolution of one group, stride and dilation 1, padding 1 all
// round, whole blocks of input and output channels, X and Y in the
// plan's blocked layout (a blocked residual, if any), an activation the
// blocked kernels apply (not HardSwish), on AVX-512.
func useWinograd(p convProblem) bool {
	g := p.geo
	if !winoEnabled || nchwcWidth != 16 || !p.layout.x || !p.layout.y || p.layout.nhwc || p.layout.pool != nil || p.z != nil && !p.layout.z {
		return false
	}
	if p.group != 1 || p.c%nchwcBlock != 0 || p.m%nchwcBlock != 0 || p.c < winoMinChannels || p.m < winoMinChannels {
		return false
	}
	if g.k != [3]int{1, 3, 3} || g.stride != [3]int{1, 1, 1} || g.dil != [3]int{1, 1, 1} ||
		g.padLo != [3]int{0, 1, 1} || g.out != g.in || g.in[0] != 1 {
		return false
	}
	if act, ok := p.ep.act(); !ok || act.swish {
		return false
	}
	// A run of fewer tiles than a task's fewest reads U (16/9 of W) for
	// too few products: ResNet-50's 512-channel layers on 7 x 7 at batch 1
	// (16 tiles), one thread, 1.44 ms a layer direct, 1.62 so.
	return p.n*((g.out[1]+1)/2)*((g.out[2]+1)/2) >= winoMinTiles
}

// winoWeights are W transformed (U = G g Gᵀ) and packed: 16 matrices, one
// a transformed position, each packed as packNCHWc packs a 1x1 layer's
// weights (groups of nchwcGroupBlocks(16) output blocks), xi floats apart.
type winoWeights struct {
	src *byte
	fb  int
	xi  int
	w   []float32
}

// winoWeightsOf returns W transformed and packed for the kernels: kept
// when W is a constant.
func (c *conv) winoWeightsOf(w []float32, p convProblem) *winoWeights {
	src := (*byte)(unsafe.Pointer(unsafe.SliceData(w)))
	fb := nchwcGroupBlocks(nchwcWidth)
	if ww := c.wino.Load(); ww != nil && ww.src == src && ww.fb == fb {
		return ww
	}
	u := winoTransformWeights(w, p.m, p.c)
	n := packNCHWcLen(p.m, p.c, 1, 1, fb, nchwcBlock)
	ww := &winoWeights{src: src, fb: fb, xi: n, w: make([]float32, winoXi*n)}
	for xi := range winoXi {
		packNCHWcInto(ww.w[xi*n:][:n], u[xi*p.m*p.c:][:p.m*p.c], p.m, p.c, 1, 1, fb, nchwcBlock)
	}
	if c.constW.Load() {
		c.wino.Store(ww)
	}
	return ww
}

// winoTransformWeights returns U = G g Gᵀ of each 3x3 kernel g of W (m x c
// x 3 x 3), G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1], as 16 matrices m x c (one
// a transformed position ξ = 4i + j), computed in float64 and rounded once.
func winoTransformWeights(w []float32, m, c int) []float32 {
	u := make([]float32, winoXi*m*c)
	for o := range m {
		for i := range c {
			g := w[(o*c+i)*9:][:9]
			var t [4][3]float64 // G g
			for col := range 3 {
				g0, g1, g2 := float64(g[col]), float64(g[3+col]), float64(g[6+col])
				t[0][col] = g0
				t[1][col] = (g0 + g1 + g2) / 2
				t[2][col] = (g0 - g1 + g2) / 2
				t[3][col] = g2
			}
			for r := range 4 { // (G g) Gᵀ
				g0, g1, g2 := t[r][0], t[r][1], t[r][2]
				row := [4]float64{g0, (g0 + g1 + g2) / 2, (g0 - g1 + g2) / 2, g2}
				for j, v := range row {
					u[((r*4+j)*m+o)*c+i] = float32(v)
				}
			}
		}
	}
	return u
}

// winoRun is one run of convWinograd, what its tasks share.
type winoRun struct {
	p          convProblem
	x, y       []float32
	ww         *winoWeights
	bias       []float32 // M's bias, or zeros
	act        nchwcAct
	cb, mb     int
	h, w       int          // the image's rows and columns (input and output)
	th, tw     int          // its rows and columns of tiles
	tiles      int          // of the batch
	chunk      int          // tiles a task
	parts      int          // a chunk's tasks: its groups of output blocks in parts
	partGroups int          // groups of output blocks a part
	vLen, mLen int          // floats of a task's V and M
	scratch    *heldBuffers // the tasks' V, M and strips of input rows
}

// winoHeld is the run state between runs, with its buffers (not a
// sync.Pool's: a garbage collection empties those, and a core's buffer
// is not another's to take).
var winoHeld atomic.Pointer[winoRun]

// winoZeros is the products' bias: none (the bias is added once, after).
var winoZeros [4 * nchwcBlock]float32

// convWinograd computes convolution p (useWinograd) by F(2x2, 3x3): X, Y
// and Z blocked ([N][C/16][H][W][16]).
func convWinograd(p convProblem, x []float32, ww *winoWeights, bias, y []float32) {
	const B = nchwcBlock
	r := winoHeld.Swap(nil)
	if r == nil {
		r = new(winoRun)
	}
	defer winoHeld.Store(r)
	r.p, r.x, r.y, r.ww = p, x, y, ww
	if r.scratch == nil {
		r.scratch = new(heldBuffers)
	}
	r.act, _ = p.ep.act()
	r.cb, r.mb = p.c/B, p.m/B
	r.h, r.w = p.geo.in[1], p.geo.in[2]
	r.th, r.tw = (r.h+1)/2, (r.w+1)/2
	r.tiles = p.n * r.th * r.tw
	r.bias = grow(r.bias, p.m)
	clear(r.bias)
	copy(r.bias, bias)
	perTile := winoXi * B * (r.cb + r.mb) * 4
	r.chunk = max(winoMinTiles, winoChunkBytes/perTile)
	chunks := (r.tiles + r.chunk - 1) / r.chunk
	want := nchwcTasks * runtime.GOMAXPROCS(0)
	if chunks < want {
		// Tasks enough for every core, but no fewer tiles than make the
		// weights' reads worth it.
		chunks = min(want, max(chunks, r.tiles/winoMinTiles))
	}
	r.chunk = (r.tiles + chunks - 1) / chunks // chunks as even as they go,
	if np := nchwcMaxPositions(min(ww.fb, r.mb)); r.chunk > np {
		r.chunk = (r.chunk + np - 1) / np * np // in whole kernel calls
	}
	chunks = (r.tiles + r.chunk - 1) / r.chunk
	// Where the chunks are fewer than the tasks wanted, each also split by
	// its groups of output blocks: a part's task transforms the chunk's
	// input again (a hundredth of its products' time) and reads its part
	// of the weights.
	groups := (r.mb + ww.fb - 1) / ww.fb
	r.parts = 1
	if chunks < want {
		r.parts = min(groups, (want+chunks-1)/chunks)
	}
	r.partGroups = (groups + r.parts - 1) / r.parts
	r.parts = (groups + r.partGroups - 1) / r.partGroups
	r.vLen, r.mLen = winoXi*r.cb*r.chunk*B, winoXi*min(r.mb, r.partGroups*ww.fb)*r.chunk*B
	cost := 2 * winoXi * r.chunk * p.c * min(p.m, r.partGroups*ww.fb*B)
	parallel.EachWith(chunks*r.parts, cost, *r, (*winoRun).task)
	r.p, r.x, r.y, r.ww = convProblem{}, nil, nil, nil // hold none of the run's
}

// task computes task t: part t % parts of the output blocks of chunk t /
// parts of the tiles.
func (r *winoRun) task(t int) {
	const B = nchwcBlock
	t0 := t / r.parts * r.chunk
	n := min(r.chunk, r.tiles-t0)
	fb := r.ww.fb
	g0 := t % r.parts * r.partGroups
	g1 := min(g0+r.partGroups, (r.mb+fb-1)/fb)
	ob0, ob1 := g0*fb, min(r.mb, g1*fb) // the part's output blocks
	pmb := ob1 - ob0
	stripLen := 4 * (2*r.tw + 2) * B
	buf := r.scratch.get(r.vLen + r.mLen + stripLen)
	v, m, strip := (*buf)[:r.vLen], (*buf)[r.vLen:][:r.mLen], (*buf)[r.vLen+r.mLen:][:stripLen]
	vXi, mXi := r.cb*r.chunk*B, pmb*r.chunk*B // floats between transformed positions

	// The input's tiles into V ([ξ][input block][tile][16]), a row of tiles
	// (of one image, within the task's) and an input block at a time.
	for s := t0; s < t0+n; {
		img, tr, tc := s/(r.th*r.tw), s/r.tw%r.th, s%r.tw
		k := min(r.tw-tc, t0+n-s) // the row's tiles in the task
		for b := range r.cb {
			r.in(v[(b*r.chunk+s-t0)*B:], vXi, strip, img, b, tr, tc, k)
		}
		s += k
	}

	// The 16 products, each an input block's 16 channels at a time: M
	// ([ξ][the part's output blocks][tile][16]) = V x U, through the
	// kernel.
	for xi := range winoXi {
		vx := v[xi*vXi:][:vXi]
		for grp := g0; grp < g1; grp++ {
			fbg := min(fb, r.mb-grp*fb)
			maxNP := nchwcMaxPositions(fbg)
			w := r.ww.w[xi*r.ww.xi+grp*fb*r.cb*B*B:][:fbg*r.cb*B*B]
			my := m[(xi*pmb+grp*fb-ob0)*r.chunk*B:]
			calls := (n + maxNP - 1) / maxNP
			for c, o := 0, 0; c < calls; c++ {
				np := n / calls
				if c < n%calls {
					np++
				}
				nchwcTile(my[o*B:], r.chunk*B, vx[o*B:], B, r.chunk*B, r.cb, 1, 1, 0, 0, w, winoZeros[:fbg*B], fbg, np, false, B, nil, &nchwcNoAct)
				o += np
			}
		}
	}

	// M into Y, a row of tiles and an output block at a time.
	for s := t0; s < t0+n; {
		img, tr, tc := s/(r.th*r.tw), s/r.tw%r.th, s%r.tw
		k := min(r.tw-tc, t0+n-s)
		for ob := ob0; ob < ob1; ob++ {
			r.out(m[((ob-ob0)*r.chunk+s-t0)*B:], mXi, img, ob, tr, tc, k)
		}
		s += k
	}
	r.scratch.put(buf)
}

// in transforms tiles tc to tc+k-1 of tile row tr of block b of image img
// into v (the first tile's, xi floats between transformed positions): the
// tiles that read no padding from X itself, the rest (a row's first and
// last, or every tile of the first and last rows) from a strip.
func (r *winoRun) in(v []float32, xi int, strip []float32, img, b, tr, tc, k int) {
	const B = nchwcBlock
	lo, hi := tc, tc+k
	a, e := lo, lo // the tiles within X: columns 2t-1 to 2t+2 in [0, w)
	if tr >= 1 && 2*tr+3 <= r.h {
		a = min(max(lo, 1), hi)
		e = min(max((r.w-3)/2+1, a), hi)
	}
	if a > lo {
		src, ld := r.strip(strip, img, b, tr, lo, a-lo)
		winoIn(v, xi, src, ld, a-lo)
	}
	if e > a {
		plane := r.x[(img*r.cb+b)*r.h*r.w*B:][:r.h*r.w*B]
		winoIn(v[(a-lo)*B:], xi, plane[((2*tr-1)*r.w+2*a-1)*B:], r.w*B, e-a)
	}
	if hi > e {
		src, ld := r.strip(strip, img, b, tr, e, hi-e)
		winoIn(v[(e-lo)*B:], xi, src, ld, hi-e)
	}
}

// strip returns the 4 input rows under tiles tc to tc+k-1 of tile row tr
// of block b of image img, with their padding, and the floats between
// its rows: X itself where the tiles read no padding, else a copy into
// strip (4 rows of 2k+2 pixels, zeros outside the image).
func (r *winoRun) strip(strip []float32, img, b, tr, tc, k int) ([]float32, int) {
	const B = nchwcBlock
	row0, col0, cols := 2*tr-1, 2*tc-1, 2*k+2
	plane := r.x[(img*r.cb+b)*r.h*r.w*B:][:r.h*r.w*B]
	if row0 >= 0 && row0+4 <= r.h && col0 >= 0 && col0+cols <= r.w {
		return plane[(row0*r.w+col0)*B:], r.w * B
	}
	ld := cols * B
	for i := range 4 {
		dst := strip[i*ld:][:ld]
		row := row0 + i
		if row < 0 || row >= r.h {
			clear(dst)
			continue
		}
		c0, c1 := max(col0, 0), min(col0+cols, r.w)
		clear(dst[:(c0-col0)*B])
		copy(dst[(c0-col0)*B:], plane[(row*r.w+c0)*B:(row*r.w+c1)*B])
		clear(dst[(c1-col0)*B:])
	}
	return strip, ld
}

// out transforms the products of tiles tc to tc+k-1 of tile row tr of
// output block ob of image img (m: the first tile's, mXi floats between
// transformed positions) into Y, with the bias, the residual and the
// activation; the tiles past Y's last row or column through a tile aside.
func (r *winoRun) out(m []float32, mXi, img, ob, tr, tc, k int) {
	const B = nchwcBlock
	p := &r.p
	base := (img*r.mb + ob) * r.h * r.w * B
	ld := r.w * B
	y := r.y[base:][:r.h*ld]
	var z []float32
	if p.z != nil {
		z = p.z[base:][:r.h*ld]
	}
	bias := r.bias[ob*B:][:B]
	row, col := 2*tr, 2*tc
	whole := k
	if row+2 > r.h {
		whole = 0
	} else if col+2*k > r.w {
		whole = k - 1
	}
	if whole > 0 {
		var zt []float32
		if z != nil {
			zt = z[row*ld+col*B:]
		}
		winoOut(y[row*ld+col*B:], ld, m, mXi, bias, zt, whole, &r.act)
	}
	for j := whole; j < k; j++ { // a tile past the last row or column
		var yt, zt [4 * B]float32
		c := col + 2*j
		rows, cols := min(2, r.h-row), min(2, r.w-c)
		var zs []float32
		if z != nil {
			for i := range rows {
				copy(zt[i*2*B:][:cols*B], z[(row+i)*ld+c*B:])
			}
			zs = zt[:]
		}
		winoOut(yt[:], 2*B, m[j*B:], mXi, bias, zs, 1, &r.act)
		for i := range rows {
			copy(y[(row+i)*ld+c*B:][:cols*B], yt[i*2*B:])
		}
	}
}

// winoIn transforms k tiles of 4 x 4 pixels of one block (x: the first
// tile's top left pixel, ld floats between rows; tile j's 2j pixels to the
// right) into v: transformed position ξ of tile j at v[ξ*xi + j*16].
func winoIn(v []float32, xi int, x []float32, ld, k int) {
	const B = nchwcBlock
	_ = v[15*xi+k*B-1]
	_ = x[3*ld+(2*k+2)*B-1]
	if !winoInVector(v, xi, x, ld, k) {
		winoInGo(v, xi, x, ld, k)
	}
}

// winoInGo is winoIn in Go, its sums in the order of the vector kernel's:
// Bᵀ d by rows (d0 - d2, d1 + d2, d2 - d1, d1 - d3), then each of those
// rows by B.
func winoInGo(v []float32, xi int, x []float32, ld, k int) {
	const B = nchwcBlock
	for j := range k {
		for o := range B {
			var d, t [4][4]float32
			for a := range 4 {
				for c := range 4 {
					d[a][c] = x[a*ld+(2*j+c)*B+o]
				}
			}
			for c := range 4 {
				t[0][c] = d[0][c] - d[2][c]
				t[1][c] = d[1][c] + d[2][c]
				t[2][c] = d[2][c] - d[1][c]
				t[3][c] = d[1][c] - d[3][c]
			}
			for a := range 4 {
				e := [4]float32{t[a][0] - t[a][2], t[a][1] + t[a][2], t[a][2] - t[a][1], t[a][1] - t[a][3]}
				for c, val := range e {
					v[(a*4+c)*xi+j*B+o] = val
				}
			}
		}
	}
}

// winoOut transforms the products of k tiles of one output block (m: the
// first tile's, transformed position ξ of tile j at m[ξ*xi + j*16]) into
// their 2 x 2 outputs at y (ld floats between rows; tile j's 2j positions
// to the right): Aᵀ M A, + bias, + z (laid out as y; nil: none), then
// activated by act (its clamp; not HardSwish).
func winoOut(y []float32, ld int, m []float32, xi int, bias, z []float32, k int, act *nchwcAct) {
	const B = nchwcBlock
	_ = m[15*xi+k*B-1]
	_ = y[ld+2*k*B-1]
	_ = bias[B-1]
	if z != nil {
		_ = z[ld+2*k*B-1]
	}
	if !winoOutVector(y, ld, m, xi, bias, z, k, act) {
		winoOutGo(y, ld, m, xi, bias, z, k, act)
	}
}

// winoOutGo is winoOut in Go, its sums in the order of the vector kernel's:
// each row of M by A (m0 + m1 + m2, m1 - m2 - m3), then Aᵀ by those rows,
// then the bias, then z.
func winoOutGo(y []float32, ld int, m []float32, xi int, bias, z []float32, k int, act *nchwcAct) {
	const B = nchwcBlock
	for j := range k {
		for o := range B {
			var s [4][2]float32
			for a := range 4 {
				q := func(c int) float32 { return m[(a*4+c)*xi+j*B+o] }
				s[a][0] = q(0) + q(1) + q(2)
				s[a][1] = q(1) - q(2) - q(3)
			}
			for c := range 2 {
				out := [2]float32{s[0][c] + s[1][c] + s[2][c], s[1][c] - s[2][c] - s[3][c]}
				for a, val := range out {
					val += bias[o]
					at := a*ld + (2*j+c)*B + o
					if z != nil {
						val += z[at]
					}
					if val < act.lo { // as VMAXPS and VMINPS clamp: NaN and -0 stay
						val = act.lo
					}
					if val > act.hi {
						val = act.hi
					}
					y[at] = val
				}
			}
		}
	}
}
