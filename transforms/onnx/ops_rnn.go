package onnx

import (
	"fmt"
	"math"
	"strings"
	"sync/atomic"

	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// RNN, GRU and LSTM (opsets 7 and 14): the recurrent layers, forward,
// reverse or bidirectional.
//
// Inputs: X (seq x batch x input; batch x seq x input with layout=1, from
// 14), W (dirs x gates*hidden x input), R (dirs x gates*hidden x hidden),
// optional B (dirs x 2*gates*hidden: W's biases then R's), sequence_lens
// (batch int32s, each at most seq), initial_h (dirs x batch x hidden;
// batch x dirs x hidden with layout=1) and, for LSTM, initial_c (as
// initial_h) and P (dirs x 3*hidden: the peepholes of the i, o and f
// gates). The gates are RNN's i; GRU's z, r, h; LSTM's i, o, f, c, in that
// order in W, R and B.
//
// Outputs, each optional: Y (seq x dirs x batch x hidden; batch x seq x
// dirs x hidden with layout=1), Y_h and, for LSTM, Y_c (as initial_h). A
// sequence shorter than seq (sequence_lens) has zeros in Y past its length
// and its Y_h and Y_c taken at its own last step; reverse runs each
// sequence from its own last step.
//
// Attributes: hidden_size (the gates' rows of W over the gate count when
// absent; an error when they disagree), direction, activations (per
// direction: RNN f, default Tanh; GRU f and g, Sigmoid and Tanh; LSTM f, g
// and h, Sigmoid, Tanh and Tanh) with activation_alpha and
// activation_beta (consumed in order by the activations that take them:
// Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu;
// Softsign, Softplus, Relu, Tanh, Sigmoid take none), clip (the gates'
// inputs clipped to [-clip, clip] before their activations), GRU's
// linear_before_reset and LSTM's input_forget (f = 1 - i).
//
// On the CPU the input projections of every time step are one product
// (package gemm for float32), then each step is a product of the hidden
// state with R (packed once per direction) and the gates' element-wise
// arithmetic in float64, rounded to X's type; for float32, Sigmoid and
// Tanh run a gate at a time as the vector loops the activation operators
// use (sigmoidInto, tanhInto); the float32 forms exporters write (LSTM,
// GRU and RNN with their default activations) run wholly in float32
// instead, their weights packed once per node (ops_rnn_fast.go). The
// device has no kernel for them yet: a device plan runs them on the host
// inside the run (ops_rnn_gpu.go; the ops table shows them with no
// conformance test wholly on the device).

func init() {
	RegisterOp(OpDef{Name: "RNN", Versions: []int{7, 14}, New: newRecurrent(rnnSimple)})
	RegisterOp(OpDef{Name: "GRU", Versions: []int{7, 14}, New: newRecurrent(rnnGRU)})
	RegisterOp(OpDef{Name: "LSTM", Versions: []int{7, 14}, New: newRecurrent(rnnLSTM)})
}

type rnnKind uint8

const (
	rnnSimple rnnKind = iota
	rnnGRU
	rnnLSTM
)

// gates is the number of gates of the kind; acts its activations per
// direction and their defaults.
func (r rnnKind) gates() int { return [...]int{1, 3, 4}[r] }

func (r rnnKind) defaultActs() []string {
	return [...][]string{{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}}[r]
}

// rnnAct is one activation with its alpha and beta; f is apply bound to
// them, resolved once per node.
type rnnAct struct {
	name        string
	alpha, beta float64
	f           func(float64) float64
}

// rnnActs lists the activations ONNX's recurrent operators take, with the
// defaults of their alpha and beta (NaN: takes none).
var rnnActs = map[string][2]float64{
	"Relu": {math.NaN(), math.NaN()}, "Tanh": {math.NaN(), math.NaN()}, "Sigmoid": {math.NaN(), math.NaN()},
	"Softsign": {math.NaN(), math.NaN()}, "Softplus": {math.NaN(), math.NaN()},
	"Affine": {1, 0}, "LeakyRelu": {0.01, math.NaN()}, "ThresholdedRelu": {1, math.NaN()},
	"ScaledTanh": {1, 1}, "HardSigmoid": {0.2, 0.5}, "Elu": {1, math.NaN()},
}

// into applies the activation to v in place; with fast, Sigmoid and Tanh
// run as float32 vector loops over buf (float32 models: the values are
// float32 before and after).
func (a rnnAct) into(v []float64, buf []float32, fast bool) {
	if fast && (a.name == "Sigmoid" || a.name == "Tanh") {
		b := buf[:len(v)]
		for i, x := range v {
			b[i] = float32(x)
		}
		if a.name == "Sigmoid" {
			sigmoidInto(b, b)
		} else {
			tanhInto(b, b)
		}
		for i, x := range b {
			v[i] = float64(x)
		}
		return
	}
	for i, x := range v {
		v[i] = a.f(x)
	}
}

// fn is the activation as a function of its input.
func (a rnnAct) fn() func(float64) float64 {
	alpha, beta := a.alpha, a.beta
	switch a.name {
	case "Relu":
		return func(x float64) float64 { return math.Max(x, 0) }
	case "Tanh":
		return math.Tanh
	case "Sigmoid":
		return func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	case "Softsign":
		return func(x float64) float64 { return x / (1 + math.Abs(x)) }
	case "Softplus":
		return func(x float64) float64 { return math.Log1p(math.Exp(x)) }
	case "Affine":
		return func(x float64) float64 { return alpha*x + beta }
	case "LeakyRelu":
		return func(x float64) float64 {
			if x < 0 {
				return alpha * x
			}
			return x
		}
	case "ThresholdedRelu":
		return func(x float64) float64 {
			if x > alpha {
				return x
			}
			return 0
		}
	case "ScaledTanh":
		return func(x float64) float64 { return alpha * math.Tanh(beta*x) }
	case "HardSigmoid":
		return func(x float64) float64 { return math.Max(0, math.Min(1, alpha*x+beta)) }
	case "Elu":
		return func(x float64) float64 {
			if x < 0 {
				return alpha * (math.Exp(x) - 1)
			}
			return x
		}
	}
	return func(x float64) float64 { return x }
}

type recurrent struct {
	kind        rnnKind
	name        string
	hidden      int // 0: from W
	dirs        int
	reverse     bool // the one direction is reverse
	acts        [][]rnnAct
	clip        float64 // 0: none
	lbr         bool    // GRU linear_before_reset
	inputForget bool    // LSTM input_forget
	layout      int
	// constW is set when W, R and B are constants (initializers): their
	// packing for the float32 products (prep) is then kept.
	constW atomic.Bool
	prep   atomic.Pointer[recurPrep]
}

func newRecurrent(kind rnnKind) func(n *Node) (Kernel, error) {
	return func(n *Node) (Kernel, error) {
		a := n.Attrs
		k := &recurrent{kind: kind, name: n.Op, dirs: 1}
		maxIn, maxOut := 6, 2
		if kind == rnnLSTM {
			maxIn, maxOut = 8, 3
		}
		if err := n.CheckArity(3, maxIn, 0, maxOut); err != nil {
			return nil, err
		}
		k.hidden = int(a.Int("hidden_size", 0))
		dir := a.String("direction", "forward")
		a.OneOf("direction", dir, "forward", "reverse", "bidirectional")
		switch dir {
		case "reverse":
			k.reverse = true
		case "bidirectional":
			k.dirs = 2
		}
		if a.Has("clip") {
			k.clip = float64(a.Float("clip", 0))
			if !(k.clip > 0) {
				return nil, fmt.Errorf("attribute clip is %v: want a positive bound", k.clip)
			}
		}
		switch kind {
		case rnnGRU:
			k.lbr = a.Int("linear_before_reset", 0) != 0
		case rnnLSTM:
			k.inputForget = a.Int("input_forget", 0) != 0
		}
		if n.Since >= 14 {
			k.layout = int(a.Int("layout", 0))
			if k.layout != 0 && k.layout != 1 {
				return nil, fmt.Errorf("attribute layout is %d: want 0 or 1", k.layout)
			}
		}
		names, ok := a.Strings("activations")
		per := len(kind.defaultActs())
		if !ok {
			for range k.dirs {
				names = append(names, kind.defaultActs()...)
			}
		}
		if len(names) != per*k.dirs {
			return nil, fmt.Errorf("attribute activations has %d functions, want %d (%d per direction)", len(names), per*k.dirs, per)
		}
		alphas, _ := a.Floats("activation_alpha")
		betas, _ := a.Floats("activation_beta")
		k.acts = make([][]rnnAct, k.dirs)
		for i, name := range names {
			def, ok := rnnActs[name]
			if !ok {
				// ONNX's names are case-insensitive in ORT; match them so.
				for known, d := range rnnActs {
					if strings.EqualFold(known, name) {
						name, def, ok = known, d, true
					}
				}
			}
			if !ok {
				return nil, fmt.Errorf("activation %q is not one of ONNX's recurrent activations", name)
			}
			act := rnnAct{name: name, alpha: def[0], beta: def[1]}
			if !math.IsNaN(def[0]) && len(alphas) > 0 {
				act.alpha, alphas = float64(alphas[0]), alphas[1:]
			}
			if !math.IsNaN(def[1]) && len(betas) > 0 {
				act.beta, betas = float64(betas[0]), betas[1:]
			}
			act.f = act.fn()
			k.acts[i/per] = append(k.acts[i/per], act)
		}
		return k, a.Err()
	}
}

// rnnDims are a node's sizes.
type rnnDims struct{ seq, batch, input, hidden int }

// dims checks the inputs' types and shapes against each other and the
// attributes.
func (k *recurrent) dims(in []Meta) (rnnDims, error) {
	x, w := in[0], in[1]
	if x.Type != nd.Float32 && x.Type != nd.Float64 {
		return rnnDims{}, fmt.Errorf("input X is %v: %s takes float32 or float64", x.Type, k.name)
	}
	if len(x.Shape) != 3 {
		return rnnDims{}, fmt.Errorf("input X has shape %s: want 3 dimensions", nd.ShapeString(x.Shape))
	}
	d := rnnDims{seq: x.Shape[0], batch: x.Shape[1], input: x.Shape[2]}
	if k.layout == 1 {
		d.seq, d.batch = d.batch, d.seq
	}
	g := k.kind.gates()
	if len(w.Shape) != 3 || w.Shape[0] != k.dirs || w.Shape[1]%g != 0 || w.Shape[2] != d.input {
		return rnnDims{}, fmt.Errorf("input W has shape %s: want [%d, %d*hidden_size, %d] (directions, gates, X's input size)",
			nd.ShapeString(w.Shape), k.dirs, g, d.input)
	}
	d.hidden = w.Shape[1] / g
	if k.hidden != 0 && k.hidden != d.hidden {
		return rnnDims{}, fmt.Errorf("attribute hidden_size is %d, but W's shape %s gives %d", k.hidden, nd.ShapeString(w.Shape), d.hidden)
	}
	want := map[int][]int{
		2: {k.dirs, g * d.hidden, d.hidden},
		3: {k.dirs, 2 * g * d.hidden},
		4: {d.batch},
		5: {k.dirs, d.batch, d.hidden},
		6: {k.dirs, d.batch, d.hidden},
		7: {k.dirs, 3 * d.hidden},
	}
	if k.layout == 1 {
		want[5] = []int{d.batch, k.dirs, d.hidden}
		want[6] = want[5]
	}
	names := []string{"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"}
	for i := 1; i < len(in); i++ {
		m := in[i]
		if m.Type == nd.Undefined {
			if i == 2 {
				return rnnDims{}, fmt.Errorf("input R is missing")
			}
			continue
		}
		if i == 4 {
			if m.Type != nd.Int32 {
				return rnnDims{}, fmt.Errorf("input sequence_lens is %v: want int32", m.Type)
			}
		} else if m.Type != x.Type {
			return rnnDims{}, fmt.Errorf("input %s is %v, X %v: want one type", names[i], m.Type, x.Type)
		}
		if w := want[i]; w != nil && !sameInts(m.Shape, w) {
			return rnnDims{}, fmt.Errorf("input %s has shape %s, want %s", names[i], nd.ShapeString(m.Shape), nd.ShapeString(w))
		}
	}
	return d, nil
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (k *recurrent) Infer(in []Meta) ([]Meta, error) {
	d, err := k.dims(in)
	if err != nil {
		return nil, err
	}
	y := []int{d.seq, k.dirs, d.batch, d.hidden}
	h := []int{k.dirs, d.batch, d.hidden}
	if k.layout == 1 {
		y = []int{d.batch, d.seq, k.dirs, d.hidden}
		h = []int{d.batch, k.dirs, d.hidden}
	}
	if b := metaAt(in, 3); in[1].Value != nil && in[2].Value != nil && (b.Type == nd.Undefined || b.Value != nil) {
		k.constW.Store(true)
	}
	t := in[0].Type
	out := []Meta{{Type: t, Shape: y}, {Type: t, Shape: h}}
	if k.kind == rnnLSTM {
		out = append(out, Meta{Type: t, Shape: h})
	}
	return out, nil
}

func (k *recurrent) Run(in, out []nd.Array) error {
	d, err := k.dims(ValueMetas(in))
	if err != nil {
		return err
	}
	lens := make([]int, d.batch)
	for b := range lens {
		lens[b] = d.seq
	}
	if s := arrayAt(in, 4); s.Type != nd.Undefined {
		for b, v := range nd.MustAs[int32](s) {
			if v < 0 || int(v) > d.seq {
				return fmt.Errorf("sequence_lens[%d] is %d: want 0 to the sequence length %d", b, v, d.seq)
			}
			lens[b] = int(v)
		}
	}
	f, err := floating[rnnLoop](k.name, in[0].Type)
	if err != nil {
		return err
	}
	f.recur(k, d, lens, in, out)
	return nil
}

type rnnLoop interface {
	recur(k *recurrent, d rnnDims, lens []int, in, out []nd.Array)
}

func (floats[T]) recur(k *recurrent, d rnnDims, lens []int, in, out []nd.Array) {
	if _, f32 := any(T(0)).(float32); f32 && k.fastRecurrent() && recurFast32(k, d, lens, in, out) {
		return
	}
	recurTyped[T](k, d, lens, in, out)
}

// matmulT computes c (m x n) = a (m x kk) times bᵀ (b is n x kk), plus c
// when acc.
func matmulT[T floatElem](m, n, kk int, a, b, c []T, acc bool) {
	if a32, ok := any(a).([]float32); ok {
		beta := float32(0)
		if acc {
			beta = 1
		}
		gemm.Sgemm(false, true, m, n, kk, 1, a32, max(kk, 1), any(b).([]float32), max(kk, 1), beta, any(c).([]float32), max(n, 1))
		return
	}
	for i := range m {
		for j := range n {
			var s T
			if acc {
				s = c[i*n+j]
			}
			ar, br := a[i*kk:(i+1)*kk], b[j*kk:(j+1)*kk]
			for p := range kk {
				s += ar[p] * br[p]
			}
			c[i*n+j] = s
		}
	}
}

// stepProduct returns c (m x n) = a (m x kk) times bᵀ (b n x kk, the same
// every step): for float32 b is packed once (gemm.Pack) and each step is a
// packed product on the calling goroutine (the products are small).
func stepProduct[T floatElem](n, kk int, b []T) func(m int, a, c []T) {
	if b32, ok := any(b).([]float32); ok {
		pk := gemm.Pack(true, kk, n, b32, max(kk, 1))
		return func(m int, a, c []T) {
			gemm.SgemmPacked(1, false, m, 1, any(a).([]float32), max(kk, 1), pk, 0, n, 0, any(c).([]float32), max(n, 1))
		}
	}
	return func(m int, a, c []T) { matmulT(m, n, kk, a, b, c, false) }
}

func recurTyped[T floatElem](k *recurrent, d rnnDims, lens []int, in, out []nd.Array) {
	S, B, I, H, G := d.seq, d.batch, d.input, d.hidden, k.kind.gates()
	GH := G * H
	xs := nd.MustAs[T](in[0])
	if k.layout == 1 { // to seq x batch x input
		t := make([]T, len(xs))
		for b := range B {
			for s := range S {
				copy(t[(s*B+b)*I:(s*B+b+1)*I], xs[(b*S+s)*I:(b*S+s+1)*I])
			}
		}
		xs = t
	}
	w, r := nd.MustAs[T](in[1]), nd.MustAs[T](in[2])
	bias, h0, c0, peep := asOr[T](arrayAt(in, 3)), asOr[T](arrayAt(in, 5)), asOr[T](arrayAt(in, 6)), asOr[T](arrayAt(in, 7))
	var ys, yh, yc []T
	if len(out) > 0 {
		ys = asOr[T](out[0])
		clear(ys)
	}
	if len(out) > 1 {
		yh = asOr[T](out[1])
	}
	if len(out) > 2 {
		yc = asOr[T](out[2])
	}
	// stateAt is the offset of (direction, batch) in initial_h, Y_h and the
	// like; yAt of (step, direction, batch) in Y.
	stateAt := func(dir, b int) int {
		if k.layout == 1 {
			return (b*k.dirs + dir) * H
		}
		return (dir*B + b) * H
	}
	yAt := func(s, dir, b int) int {
		if k.layout == 1 {
			return ((b*S+s)*k.dirs + dir) * H
		}
		return ((s*k.dirs+dir)*B + b) * H
	}
	clip := func(v float64) float64 {
		if k.clip > 0 {
			return math.Max(-k.clip, math.Min(k.clip, v))
		}
		return v
	}
	xp := make([]T, S*B*GH) // the input projections, every step
	hr := make([]T, B*GH)   // the hidden state times R
	h, c := make([]T, B*H), make([]T, B*H)
	rh := make([]T, B*H)  // GRU: r ⊙ h
	rhr := make([]T, B*H) // GRU: (r ⊙ h) Rhᵀ
	gate := make([]float64, GH)
	buf := make([]float32, GH)
	// fast: float32 values take the vector sigmoid and tanh
	// (sigmoidInto, tanhInto), as the activation operators do.
	_, fast := any(xs).([]float32)
	for dir := range k.dirs {
		wd, rd := w[dir*GH*I:(dir+1)*GH*I], r[dir*GH*H:(dir+1)*GH*H]
		matmulT(S*B, GH, I, xs, wd, xp, false)
		byR := stepProduct(GH, H, rd)
		var byRh func(m int, a, c []T)
		if k.kind == rnnGRU && !k.lbr {
			byRh = stepProduct(H, H, rd[2*H*H:])
		}
		// wb: W's and R's biases summed (GRU's h gate with
		// linear_before_reset keeps R's apart: rb).
		wb, rb := make([]float64, GH), make([]float64, GH)
		if bias != nil {
			for j := range GH {
				wb[j] = float64(bias[dir*2*GH+j])
				rb[j] = float64(bias[dir*2*GH+GH+j])
			}
		}
		for b := range B {
			for j := range H {
				if h0 != nil {
					h[b*H+j] = h0[stateAt(dir, b)+j]
				} else {
					h[b*H+j] = 0
				}
				if c0 != nil {
					c[b*H+j] = c0[stateAt(dir, b)+j]
				} else {
					c[b*H+j] = 0
				}
			}
		}
		var pi, po, pf []T
		if peep != nil {
			p := peep[dir*3*H : (dir+1)*3*H]
			pi, po, pf = p[:H], p[H:2*H], p[2*H:]
		}
		acts := k.acts[dir]
		rev := k.reverse || dir == 1
		for s := range S {
			byR(B, h, hr)
			if k.kind == rnnGRU && !k.lbr {
				// r first, then (r ⊙ h) Rhᵀ.
				for b := range B {
					if s >= lens[b] {
						continue
					}
					t := s
					if rev {
						t = lens[b] - 1 - s
					}
					x := xp[(t*B+b)*GH:]
					for j := range H {
						v := float64(x[H+j]) + float64(hr[b*GH+H+j]) + wb[H+j] + rb[H+j]
						rh[b*H+j] = T(acts[0].f(clip(v)) * float64(h[b*H+j]))
					}
				}
				byRh(B, rh, rhr)
			}
			for b := range B {
				if s >= lens[b] {
					continue
				}
				t := s
				if rev {
					t = lens[b] - 1 - s
				}
				x, hb, cb := xp[(t*B+b)*GH:(t*B+b+1)*GH], h[b*H:(b+1)*H], c[b*H:(b+1)*H]
				for j := range GH {
					gate[j] = float64(x[j]) + float64(hr[b*GH+j]) + wb[j] + rb[j]
				}
				// The gates' inputs, clipped, then each gate's activation
				// over its H values at once (gate[g*H:(g+1)*H]).
				act := func(a rnnAct, v []float64) { a.into(v, buf, fast) }
				clipAll := func(v []float64) {
					for j := range v {
						v[j] = clip(v[j])
					}
				}
				switch k.kind {
				case rnnSimple:
					g := gate[:H]
					clipAll(g)
					act(acts[0], g)
					for j := range H {
						hb[j] = T(g[j])
					}
				case rnnGRU:
					z, rr, pre := gate[:H], gate[H:2*H], gate[2*H:3*H]
					clipAll(gate[:2*H])
					act(acts[0], gate[:2*H])
					for j := range H {
						if k.lbr {
							pre[j] = float64(x[2*H+j]) + wb[2*H+j] + rr[j]*(float64(hr[b*GH+2*H+j])+rb[2*H+j])
						} else {
							pre[j] = float64(x[2*H+j]) + wb[2*H+j] + rb[2*H+j] + float64(rhr[b*H+j])
						}
					}
					clipAll(pre)
					act(acts[1], pre)
					for j := range H {
						hb[j] = T((1-z[j])*pre[j] + z[j]*float64(hb[j]))
					}
				case rnnLSTM:
					gi, gout, gf, gc := gate[:H], gate[H:2*H], gate[2*H:3*H], gate[3*H:]
					if pi != nil {
						for j := range H {
							gi[j] += float64(pi[j]) * float64(cb[j])
							gf[j] += float64(pf[j]) * float64(cb[j])
						}
					}
					clipAll(gi)
					clipAll(gf)
					clipAll(gc)
					act(acts[0], gi)
					if k.inputForget {
						for j := range H {
							gf[j] = 1 - gi[j]
						}
					} else {
						act(acts[0], gf)
					}
					act(acts[1], gc)
					for j := range H {
						cb[j] = T(gf[j]*float64(cb[j]) + gi[j]*gc[j])
					}
					if po != nil {
						for j := range H {
							gout[j] += float64(po[j]) * float64(cb[j])
						}
					}
					clipAll(gout)
					act(acts[0], gout)
					for j := range H {
						gc[j] = float64(cb[j]) // the new cell, for h's activation
					}
					act(acts[2], gc)
					for j := range H {
						hb[j] = T(gout[j] * gc[j])
					}
				}
				if ys != nil {
					copy(ys[yAt(t, dir, b):yAt(t, dir, b)+H], hb)
				}
			}
		}
		for b := range B {
			if yh != nil {
				copy(yh[stateAt(dir, b):stateAt(dir, b)+H], h[b*H:(b+1)*H])
			}
			if yc != nil {
				copy(yc[stateAt(dir, b):stateAt(dir, b)+H], c[b*H:(b+1)*H])
			}
		}
	}
}
