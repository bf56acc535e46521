package onnx

import (
	"slices"
	"sync"
	"unsafe"

	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The recurrent operators as exporters write them (PyTorch's nn.LSTM,
// nn.GRU and nn.RNN): float32, the default activations, no clip, and for
// LSTM no peepholes and no input_forget, for GRU linear_before_reset.
// These run in float32 throughout, as ONNX Runtime does:
//
//   - the batch's rows are taken longest sequence first, so that the rows
//     still running at a step (sequence_lens) are a prefix: the rows past
//     their length cost nothing;
//   - the input projections of every running (step, row) and both biases
//     (summed where the gate adds them) are one gemm product, into rows
//     that start as the biases, laid out step after step;
//   - each step is one product of the running rows' hidden states by R,
//     all gates at once, on the calling goroutine; for LSTM and RNN it
//     adds to the step's projections in place;
//   - W and R are packed once per node where they are constants (as
//     MatMul's and Conv's weights), with LSTM's c rows and RNN's rows
//     doubled (exact), so that the products give the 2x of tanh x =
//     2σ(2x) - 1;
//   - LSTM's and GRU's gates are one pass over each row (lstmGates: i,
//     o, f, c, the cell and the hidden state; gruStep: z, r, h and the
//     hidden state; in AVX2 where there is one), RNN's on the vector
//     sigmoid of numeric.go; tanh is 2σ(2x) - 1 (within 2^-23 of tanh,
//     absolutely).
//
// Other forms take recurTyped's float64 loop (ops_rnn.go).

// fastRecurrent reports whether k's node runs on recurFast32.
func (k *recurrent) fastRecurrent() bool {
	if k.clip > 0 || k.layout != 0 {
		return false
	}
	var want []string
	switch {
	case k.kind == rnnLSTM && !k.inputForget:
		want = []string{"Sigmoid", "Tanh", "Tanh"}
	case k.kind == rnnGRU && k.lbr:
		want = []string{"Sigmoid", "Tanh"}
	case k.kind == rnnSimple:
		want = []string{"Tanh"}
	default:
		return false
	}
	for _, acts := range k.acts {
		if len(acts) != len(want) {
			return false
		}
		for i, a := range acts {
			if a.name != want[i] {
				return false
			}
		}
	}
	return true
}

// recurPrep is a node's weights as recurFast32 multiplies them, per
// direction: kept on the node when W, R and B are constants (src: their
// data), made for the run otherwise.
type recurPrep struct {
	src  [3]*byte
	dirs []recurDir
}

// recurDir is one direction's weights: W and R transposed and packed
// (LSTM's c rows and RNN's rows doubled), the projections' starting rows bx (W's and R's
// biases summed, LSTM's c part doubled; GRU's h gate W's only) and GRU's R
// bias of the h gate (rbh), which is added before r scales it.
type recurDir struct {
	w, r    *gemm.Packed
	bx, rbh []float32
}

// prepare returns the weights of in (W, R and optional B) as recurDir
// holds them.
func (k *recurrent) prepare(d rnnDims, in []nd.Array) *recurPrep {
	src := [3]*byte{unsafe.SliceData(in[1].Data), unsafe.SliceData(in[2].Data), unsafe.SliceData(arrayAt(in, 3).Data)}
	if p := k.prep.Load(); p != nil && p.src == src && len(p.dirs) == k.dirs && p.dirs[0].w.Rows() == d.input && p.dirs[0].r.Rows() == d.hidden {
		return p
	}
	I, H := d.input, d.hidden
	GH := k.kind.gates() * H
	w, r := nd.MustAs[float32](in[1]), nd.MustAs[float32](in[2])
	bias := asOr[float32](arrayAt(in, 3))
	p := &recurPrep{src: src, dirs: make([]recurDir, k.dirs)}
	for dir := range k.dirs {
		wd, rd := w[dir*GH*I:(dir+1)*GH*I], r[dir*GH*H:(dir+1)*GH*H]
		bx, rbh := make([]float32, GH), make([]float32, H)
		if bias != nil {
			wb, rb := bias[dir*2*GH:dir*2*GH+GH], bias[dir*2*GH+GH:(dir+1)*2*GH]
			for j := range GH {
				bx[j] = wb[j] + rb[j]
			}
			if k.kind == rnnGRU {
				copy(bx[2*H:], wb[2*H:])
				copy(rbh, rb[2*H:])
			}
		}
		if k.kind != rnnGRU { // the last gate's rows (LSTM's c, RNN's one) doubled: 2x exactly
			lo := GH - H
			wd, rd = doubleRows(wd, lo*I), doubleRows(rd, lo*H)
			for j := lo; j < GH; j++ {
				bx[j] *= 2
			}
		}
		p.dirs[dir] = recurDir{w: gemm.Pack(true, I, GH, wd, max(I, 1)), r: gemm.Pack(true, H, GH, rd, max(H, 1)), bx: bx, rbh: rbh}
	}
	if k.constW.Load() {
		k.prep.Store(p)
	}
	return p
}

// doubleRows returns a copy of m with its elements from lo on doubled.
func doubleRows(m []float32, lo int) []float32 {
	c := slices.Clone(m)
	for i := lo; i < len(c); i++ {
		c[i] *= 2
	}
	return c
}

// recurRun is a run's scratch (pooled): the order of the rows (longest
// first), the rows running at each step and where each step's rows start,
// the inputs gathered in that order and their projections, and the
// states.
type recurRun struct {
	order, live, off []int
	xg, xp, hr       []float32
	h, c             []float32
}

var recurRuns = sync.Pool{New: func() any { return new(recurRun) }}

// grow returns s with length n, reusing its memory where it can (contents
// undefined).
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// recurFast32 runs a fastRecurrent node on float32 inputs; ok is false,
// and nothing is written, for a node with peepholes (input 7).
func recurFast32(k *recurrent, d rnnDims, lens []int, in, out []nd.Array) bool {
	if arrayAt(in, 7).Type != nd.Undefined {
		return false
	}
	S, B, I, H, G := d.seq, d.batch, d.input, d.hidden, k.kind.gates()
	GH := G * H
	xs := nd.MustAs[float32](in[0])
	h0, c0 := asOr[float32](arrayAt(in, 5)), asOr[float32](arrayAt(in, 6))
	var ys, yh, yc []float32
	if len(out) > 0 {
		ys = asOr[float32](out[0])
		clear(ys)
	}
	if len(out) > 1 {
		yh = asOr[float32](out[1])
	}
	if len(out) > 2 {
		yc = asOr[float32](out[2])
	}
	prep := k.prepare(d, in)
	run := recurRuns.Get().(*recurRun)
	defer recurRuns.Put(run)
	// The rows longest first (stable: equal lengths keep their order); at
	// step s the first live[s] of them run, their projections from row
	// off[s] of xp.
	order := grow(run.order, B)
	for b := range order {
		order[b] = b
	}
	slices.SortStableFunc(order, func(a, b int) int { return lens[b] - lens[a] })
	live, off := grow(run.live, S+1), grow(run.off, S+1)
	rows := 0
	for s := range S {
		m := 0
		for m < B && lens[order[m]] > s {
			m++
		}
		live[s], off[s] = m, rows
		rows += m
	}
	live[S], off[S] = 0, rows
	xg, xp := grow(run.xg, rows*I), grow(run.xp, rows*GH)
	h, c := grow(run.h, B*H), grow(run.c, B*H)
	var hr []float32
	if k.kind == rnnGRU {
		hr = grow(run.hr, B*GH)
	}
	run.order, run.live, run.off, run.xg, run.xp, run.hr, run.h, run.c = order, live, off, xg, xp, hr, h, c
	for dir := range k.dirs {
		pd := &prep.dirs[dir]
		rev := k.reverse || dir == 1
		// at is the step of X that row p of the order takes at step s (it
		// runs then).
		at := func(s, p int) int {
			if rev {
				return lens[order[p]] - 1 - s
			}
			return s
		}
		for s := range S {
			for p := range live[s] {
				o := (off[s] + p) * I
				copy(xg[o:o+I], xs[(at(s, p)*B+order[p])*I:])
			}
		}
		for row := range rows {
			copy(xp[row*GH:(row+1)*GH], pd.bx)
		}
		if rows > 0 && I > 0 && H > 0 {
			gemm.SgemmPacked(0, false, rows, 1, xg, I, pd.w, 0, GH, 1, xp, GH)
		}
		for p, b := range order {
			if h0 != nil {
				copy(h[p*H:(p+1)*H], h0[(dir*B+b)*H:])
			} else {
				clear(h[p*H : (p+1)*H])
			}
			if c0 != nil {
				copy(c[p*H:(p+1)*H], c0[(dir*B+b)*H:])
			} else {
				clear(c[p*H : (p+1)*H])
			}
		}
		for s := range S {
			m := live[s]
			if m == 0 {
				break // the rows are longest first: none runs from here
			}
			blk := xp[off[s]*GH : (off[s]+m)*GH]
			if k.kind == rnnGRU {
				gruStep(blk, hr[:m*GH], h[:m*H], pd, H)
			} else if H > 0 { // the step's product added to its projections
				gemm.SgemmPacked(1, false, m, 1, h, H, pd.r, 0, GH, 1, blk, GH)
			}
			switch k.kind {
			case rnnLSTM:
				lstmGates(blk, c[:m*H], h[:m*H], H)
			case rnnSimple: // h = tanh of the sums: 2σ(2x) - 1, x doubled
				sigmoidInto(blk, blk)
				for i, v := range blk {
					h[i] = 2*v - 1
				}
			}
			if ys != nil {
				for p := range m {
					o := ((at(s, p)*k.dirs+dir)*B + order[p]) * H
					copy(ys[o:o+H], h[p*H:(p+1)*H])
				}
			}
		}
		for p, b := range order {
			if yh != nil {
				copy(yh[(dir*B+b)*H:(dir*B+b+1)*H], h[p*H:(p+1)*H])
			}
			if yc != nil {
				copy(yc[(dir*B+b)*H:(dir*B+b+1)*H], c[p*H:(p+1)*H])
			}
		}
	}
	return true
}

// gruStep is a GRU step (linear_before_reset, gates z, r, h) of m rows: x
// their projections (m x 3H), hr scratch for the hidden states times R,
// h the states (m x H), updated. Each row's units are gruGate1's, the
// same bits (whole vectors of 8 in gruGatesVec's kernel where there is
// one).
func gruStep(x, hr, h []float32, pd *recurDir, H int) {
	GH := 3 * H
	m := len(h) / max(H, 1)
	if H > 0 {
		gemm.SgemmPacked(1, false, m, 1, h, H, pd.r, 0, GH, 0, hr, GH)
	}
	for p := range m {
		xp, g, hp := x[p*GH:(p+1)*GH], hr[p*GH:(p+1)*GH], h[p*H:(p+1)*H]
		for j := gruGatesVec(g, xp, pd.rbh, hp, H); j < H; j++ {
			hp[j] = gruGate1(g[j], g[H+j], g[2*H+j], xp[j], xp[H+j], xp[2*H+j], pd.rbh[j], hp[j])
		}
	}
}

// gruGate1 is one unit's hidden state from the hidden state's products
// (hz, hr, hh), the projections (xz, xr, xh: W's rows and the biases but
// the h gate's R bias rbh) and the state h: z and r the sigmoids of their
// sums, the h gate's tanh (as 2σ(2x) - 1) of xh + r (hh + rbh).
func gruGate1(hz, hr, hh, xz, xr, xh, rbh, h float32) float32 {
	z, r := sigmoidf(hz+xz), sigmoidf(hr+xr)
	n := 2*sigmoidf(2*(xh+r*(hh+rbh))) - 1
	return (1-z)*n + z*h
}

// lstmGates is an LSTM step's gates (i, o, f, c; no peepholes) for the
// rows of g (m x 4H: each row's sums, c's doubled), updating the rows'
// cells c and hidden states h (m x H):
//
//	c = σ(f) c + σ(i) tanh(c̃),  h = σ(o) tanh(c),
//
// tanh x as 2σ(2x) - 1; g is overwritten. Each value is what lstmGate1
// computes, the same bits (whole vectors of 8 in lstmGatesVec's kernel
// where there is one).
func lstmGates(g, c, h []float32, H int) {
	m := len(c) / max(H, 1)
	for p := range m {
		gp, cp, hp := g[p*4*H:(p+1)*4*H], c[p*H:(p+1)*H], h[p*H:(p+1)*H]
		for j := lstmGatesVec(gp, cp, hp, H); j < H; j++ {
			cp[j], hp[j] = lstmGate1(gp[j], gp[H+j], gp[2*H+j], gp[3*H+j], cp[j])
		}
	}
}

// lstmGate1 is one unit's cell and hidden state from its gates' sums (c's
// doubled) and its cell.
func lstmGate1(i, o, f, c2, c float32) (float32, float32) {
	c = sigmoidf(f)*c + sigmoidf(i)*(2*sigmoidf(c2)-1)
	return c, sigmoidf(o) * (2*sigmoidf(2*c) - 1)
}
