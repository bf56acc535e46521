package onnx

import (
	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The recurrent operators as exporters write them (PyTorch's nn.LSTM and
// nn.GRU): float32, the default activations, no clip, and for LSTM no
// peepholes and no input_forget, for GRU linear_before_reset. These run in
// float32 throughout, as ONNX Runtime does:
//
//   - the input projections of every step and both biases (summed where
//     the gate adds them) are one gemm product over all steps, into rows
//     that start as the biases;
//   - each step is one product of the hidden states of the batch by R, all
//     gates at once, on the calling goroutine (R packed once);
//   - the gates' activations are the vector sigmoid of numeric.go, over all
//     the batch's gates of a step at once for LSTM, tanh taken as
//     2σ(2x) - 1 (within 2^-23 of tanh, absolutely).
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

// recurFast32 runs a fastRecurrent node on float32 inputs; ok is false,
// and nothing is written, for a node with peepholes (input 7).
func recurFast32(k *recurrent, d rnnDims, lens []int, in, out []nd.Array) bool {
	if arrayAt(in, 7).Type != nd.Undefined {
		return false
	}
	S, B, I, H, G := d.seq, d.batch, d.input, d.hidden, k.kind.gates()
	GH := G * H
	xs := nd.MustAs[float32](in[0])
	w, r := nd.MustAs[float32](in[1]), nd.MustAs[float32](in[2])
	bias, h0, c0 := asOr[float32](arrayAt(in, 3)), asOr[float32](arrayAt(in, 5)), asOr[float32](arrayAt(in, 6))
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
	xp := make([]float32, S*B*GH) // the input projections and biases, every step
	hr := make([]float32, B*GH)   // the hidden states times R
	h, c := make([]float32, B*H), make([]float32, B*H)
	tmp := make([]float32, B*H)
	for dir := range k.dirs {
		wd, rd := w[dir*GH*I:(dir+1)*GH*I], r[dir*GH*H:(dir+1)*GH*H]
		// The rows' biases: W's and R's summed, but for GRU's h gate,
		// whose R bias is added to the product before r scales it (rbh).
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
		for row := range S * B {
			copy(xp[row*GH:(row+1)*GH], bx)
		}
		gemm.Sgemm(false, true, S*B, GH, I, 1, xs, I, wd, I, 1, xp, GH)
		byR := stepProduct(GH, H, rd)
		for b := range B {
			if h0 != nil {
				copy(h[b*H:(b+1)*H], h0[(dir*B+b)*H:])
			} else {
				clear(h[b*H : (b+1)*H])
			}
			if c0 != nil {
				copy(c[b*H:(b+1)*H], c0[(dir*B+b)*H:])
			} else {
				clear(c[b*H : (b+1)*H])
			}
		}
		rev := k.reverse || dir == 1
		// at is the step of batch row b at step s (-1: past its length).
		at := func(s, b int) int {
			switch {
			case s >= lens[b]:
				return -1
			case rev:
				return lens[b] - 1 - s
			}
			return s
		}
		for s := range S {
			byR(B, h, hr)
			if k.kind == rnnLSTM {
				// Gates i, o, f, c: the sums, then one sigmoid over the
				// batch's gates, c's taken at twice its sum (tanh(x) is
				// 2σ(2x) - 1).
				for b := range B {
					if t := at(s, b); t >= 0 {
						x, g := xp[(t*B+b)*GH:(t*B+b+1)*GH], hr[b*GH:(b+1)*GH]
						for j := range 3 * H {
							g[j] += x[j]
						}
						for j := 3 * H; j < GH; j++ {
							g[j] = 2 * (g[j] + x[j])
						}
					}
				}
				sigmoidInto(hr, hr)
				for b := range B {
					if at(s, b) >= 0 {
						g, cb, tb := hr[b*GH:(b+1)*GH], c[b*H:(b+1)*H], tmp[b*H:(b+1)*H]
						gi, gf, gc := g[:H], g[2*H:3*H], g[3*H:]
						for j := range H {
							cb[j] = gf[j]*cb[j] + gi[j]*(2*gc[j]-1)
							tb[j] = 2 * cb[j]
						}
					}
				}
				sigmoidInto(tmp, tmp) // h = o tanh(c)
				for b := range B {
					if at(s, b) >= 0 {
						gout, hb, tb := hr[b*GH+H:b*GH+2*H], h[b*H:(b+1)*H], tmp[b*H:(b+1)*H]
						for j := range H {
							hb[j] = gout[j] * (2*tb[j] - 1)
						}
					}
				}
			} else {
				// GRU, linear_before_reset: gates z, r, h; z and r's
				// sums, then h's once r is known, its tanh as 2σ(2x) - 1.
				for b := range B {
					if t := at(s, b); t >= 0 {
						x, g := xp[(t*B+b)*GH:(t*B+b+1)*GH], hr[b*GH:(b+1)*GH]
						for j := range 2 * H {
							g[j] += x[j]
						}
						sigmoidInto(g[:2*H], g[:2*H])
						rr, n := g[H:2*H], g[2*H:]
						for j := range H {
							n[j] = 2 * (x[2*H+j] + rr[j]*(n[j]+rbh[j]))
						}
						sigmoidInto(n, n)
						z, hb := g[:H], h[b*H:(b+1)*H]
						for j := range H {
							hb[j] = (1-z[j])*(2*n[j]-1) + z[j]*hb[j]
						}
					}
				}
			}
			if ys != nil {
				for b := range B {
					if t := at(s, b); t >= 0 {
						o := ((t*k.dirs+dir)*B + b) * H
						copy(ys[o:o+H], h[b*H:(b+1)*H])
					}
				}
			}
		}
		if yh != nil {
			copy(yh[dir*B*H:(dir+1)*B*H], h)
		}
		if yc != nil {
			copy(yc[dir*B*H:(dir+1)*B*H], c)
		}
	}
	return true
}
