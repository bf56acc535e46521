package onnx

import (
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// A QDQ model (ONNX Runtime's quantizer's format, and PyTorch's
// quantization-aware training export) keeps its layers float and puts the
// quantization around them: DequantizeLinear(x) and DequantizeLinear(W) ->
// Conv or MatMul -> QuantizeLinear. Run as written, each such layer is a
// float product of dequantized values, then rounded. ONNX Runtime's QDQ
// transformer turns each group into QLinearConv or QLinearMatMul, integer
// products requantized; fuseQDQ does the same when the plan is made, so a
// QDQ model runs its products in integers (ops_quant_conv.go,
// ops_quant_matmul.go) and gives ONNX Runtime's values to the bit.
//
// A group is fused when: the weights (and a Conv's bias) are constants
// dequantized at load (the loader keeps their quantized form, quantized);
// x's DequantizeLinear and the QuantizeLinear are per tensor and have zero
// points; W is int8 or uint8, per tensor or per output channel (a Conv's
// axis 0, a 2-D MatMul B's axis 1); a Conv's bias is int32 with zero point
// 0 and scale x_scale x w_scale (as the quantizer writes it: the sums'
// scale, so that adding it to the integer sums is adding it to the float
// ones); and the product's float output is read by the QuantizeLinear
// only. The fused step reads x's quantized values, its scale and zero
// point and the output's; the DequantizeLinear of x goes too where nothing
// else reads it.

// quantized is a constant's quantized form: q (int8, uint8 or int32), and
// the scale and zero point (the zero Array when none) it was dequantized
// with, per tensor or along axis.
type quantized struct {
	q, scale, zp nd.Array
	axis         int
}

// quantizedOf returns the quantized form of the output of n, a
// DequantizeLinear whose inputs are all known (in, with values), and nil
// for any other node.
func quantizedOf(n *node, in []Meta) *quantized {
	k, ok := n.kernel.(*quantLinear)
	if !ok || !k.dequant {
		return nil
	}
	axis, _, err := k.geometry(in[0], in[1], metaAt(in, 2))
	if err != nil {
		return nil
	}
	q := &quantized{q: *in[0].Value, scale: *in[1].Value, axis: axis}
	if z := metaAt(in, 2); z.Value != nil {
		q.zp = *z.Value
	}
	return q
}

// zeroPoint returns q's zero point, zeros of q's type where it has none.
func (q *quantized) zeroPoint() nd.Array {
	if q.zp.Type != nd.Undefined {
		return q.zp
	}
	return nd.Zeros(q.q.Type, q.scale.Shape...)
}

// qdqStep is a fused QDQ group: a QLinearConv's or QLinearMatMul's kernel
// with the weights' quantized constants. Its inputs are x (quantized),
// x_scale, x_zero_point, y_scale, y_zero_point.
type qdqStep struct {
	k                Kernel // *qconv or *qmatmul
	w, wScale, wZero nd.Array
	bias             nd.Array // a Conv's int32 bias, or the zero Array
	hasBias          bool
}

// qdqInputs returns the inputs of the QLinear kernel: in's with the constants
// between them.
func qdqInputs[T any](in []T, w, ws, wz, b T, hasBias bool) []T {
	out := []T{in[0], in[1], in[2], w, ws, wz, in[3], in[4]}
	if hasBias {
		out = append(out, b)
	}
	return out
}

func (f *qdqStep) metas(in []Meta) []Meta {
	m := func(a *nd.Array) Meta { return Meta{Type: a.Type, Shape: a.Shape, Value: a} }
	return qdqInputs(in, m(&f.w), m(&f.wScale), m(&f.wZero), m(&f.bias), f.hasBias)
}

func (f *qdqStep) Infer(in []Meta) ([]Meta, error) { return f.k.Infer(f.metas(in)) }

func (f *qdqStep) Run(in, out []nd.Array) error {
	return f.k.Run(qdqInputs(in, f.w, f.wScale, f.wZero, f.bias, f.hasBias), out)
}

// fuseQDQ fuses the QDQ groups of the plan's steps (above).
func (p *Plan) fuseQDQ() {
	readers, readBy := p.reads()
	maker := make([]int, len(p.vals))
	for i := range maker {
		maker[i] = -1
	}
	for si, s := range p.steps {
		for _, id := range s.out {
			if id >= 0 {
				maker[id] = si
			}
		}
	}
	perTensor := func(id int) bool { return id >= 0 && numel(p.vals[id].meta.Shape) == 1 }
	gone := make([]bool, len(p.steps))
	fused := 0
	for si, s := range p.steps {
		var matmul bool
		switch s.n.kernel.(type) {
		case *conv:
		case *matMul:
			matmul = true
		default:
			continue
		}
		if len(s.out) != 1 || s.out[0] < 0 || len(s.in) < 2 || readers[s.out[0]] != 1 {
			continue
		}
		// The QuantizeLinear of the product.
		qi := readBy[s.out[0]]
		qs := p.steps[qi]
		if qk, ok := qs.n.kernel.(*quantLinear); !ok || qk.dequant || gone[qi] || len(qs.in) < 3 || qs.in[0] != s.out[0] || !perTensor(qs.in[1]) || qs.in[2] < 0 {
			continue
		}
		// The DequantizeLinear of x.
		x := s.in[0]
		dx := maker[x]
		if dx < 0 || gone[dx] {
			continue
		}
		ds := p.steps[dx]
		if dk, ok := ds.n.kernel.(*quantLinear); !ok || !dk.dequant || len(ds.in) < 3 || !perTensor(ds.in[1]) || ds.in[2] < 0 || !isQuantType(p.vals[ds.in[0]].meta.Type) {
			continue
		}
		// The weights, and a Conv's bias.
		w := p.m.g.values[s.in[1]].quant
		if w == nil || !isQuantType(w.q.Type) {
			continue
		}
		if w.scale.Len() > 1 && ((!matmul && w.axis != 0) || (matmul && (w.q.Rank() != 2 || w.axis != 1))) {
			continue
		}
		f := &qdqStep{w: w.q, wScale: w.scale, wZero: w.zeroPoint()}
		if !matmul && len(s.in) > 2 && s.in[2] >= 0 {
			b, ok := p.biasQuantized(s.in[2], ds.in[1], w)
			if !ok {
				continue
			}
			f.bias, f.hasBias = b, true
		}
		if matmul {
			k := &qmatmul{linear: true}
			k.b.constant.Store(true)
			f.k = k
		} else {
			k := &qconv{c: s.n.kernel.(*conv), linear: true}
			k.w.constant.Store(true)
			f.k = k
		}
		in := []int{ds.in[0], ds.in[1], ds.in[2], qs.in[1], qs.in[2]}
		if _, err := f.Infer(p.metasOf(in)); err != nil {
			continue // not a group the integer kernels take: left as it is
		}
		n := &node{Node: qs.n.Node, kernel: f}
		n.Op = fmt.Sprintf("%s+%s+%s", ds.n.Op, s.n.Op, qs.n.Op)
		n.Outputs = qs.n.Outputs
		gone[si] = true
		if readers[x] == 1 {
			gone[dx] = true
		}
		p.steps[qi] = pstep{n: n, in: in, out: qs.out}
		fused++
	}
	if fused == 0 {
		return
	}
	kept := p.steps[:0]
	for i, s := range p.steps {
		if !gone[i] {
			kept = append(kept, s)
		}
	}
	p.steps = kept
}

// metasOf returns the planned Metas of values ids.
func (p *Plan) metasOf(ids []int) []Meta {
	m := make([]Meta, len(ids))
	for i, id := range ids {
		if id >= 0 {
			m[i] = p.vals[id].meta
		}
	}
	return m
}

// biasQuantized returns a Conv's bias (value b) as the int32 sums' bias,
// when it is a constant dequantized from int32 with zero point 0 and
// scale x_scale x w_scale[m] for each output channel m (x_scale the
// value xs, known before the run).
func (p *Plan) biasQuantized(b, xs int, w *quantized) (nd.Array, bool) {
	bq := p.m.g.values[b].quant
	sx := p.vals[xs].meta.Value
	if bq == nil || bq.q.Type != nd.Int32 || sx == nil || sx.Type != nd.Float32 {
		return nd.Array{}, false
	}
	if bq.zp.Type != nd.Undefined {
		if z, err := nd.Int64s(bq.zp); err != nil || anyNonZero(z) {
			return nd.Array{}, false
		}
	}
	x := nd.MustAs[float32](*sx)[0]
	ws, bs := nd.MustAs[float32](w.scale), nd.MustAs[float32](bq.scale)
	n := bq.q.Len()
	for m := range n {
		want := x * ws[min(m, len(ws)-1)]
		if bs[min(m, len(bs)-1)] != want {
			return nd.Array{}, false
		}
	}
	return bq.q, true
}

func anyNonZero(v []int64) bool {
	for _, x := range v {
		if x != 0 {
			return true
		}
	}
	return false
}
