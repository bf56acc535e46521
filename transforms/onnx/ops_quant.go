package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The linear quantization of ONNX (the operators ONNX Runtime's quantizer
// and PyTorch's quantization-aware training export): QuantizeLinear and
// DequantizeLinear (opsets 10, 13, 19), DynamicQuantizeLinear (11) here;
// the integer products MatMulInteger and QLinearMatMul (10) in
// ops_quant_matmul.go, ConvInteger and QLinearConv (10) in
// ops_quant_conv.go.
//
// A quantized tensor is int8 or uint8 q for the real value
// (q - zero_point) x scale. QuantizeLinear computes
// saturate(round(x / scale) + zero_point): x / scale in float32, as ONNX
// Runtime does, rounded half to even, then clamped to the type's range
// (NaN becomes the zero point). DequantizeLinear computes
// float32(x - zero_point) x scale, and takes int32 too (a bias quantized
// with scale x_scale x w_scale), whose zero point is 0. Their scale and
// zero point are one value (per tensor: a scalar or one element) or, since
// opset 13, one per index of the input's axis (per axis: 1-D, axis's
// length); opset 19's saturate is read and has no effect on the integer
// types; opset 21's blocked quantization (a block_size other than 0), its
// output_dtype and its 4-bit and 16-bit types are refused. The output's
// type is the zero point's, uint8 without one.
//
// A scale must be a positive finite float; a zero point is the type of the
// values it shifts, of the scale's shape. These are checked when the node
// is loaded where they are initializers or constants (checkConsts), else
// when it runs; a zero point outside its type's range in a tensor's
// int32_data is refused when the tensor is read (ArrayOf).

func init() {
	RegisterOp(OpDef{Name: "QuantizeLinear", Versions: []int{10, 13, 19}, New: newQuantizeLinear})
	RegisterOp(OpDef{Name: "DequantizeLinear", Versions: []int{10, 13, 19}, New: newDequantizeLinear})
	RegisterOp(OpDef{Name: "DynamicQuantizeLinear", Versions: []int{11}, New: newDynamicQuantizeLinear})
}

// qParams are a quantized tensor's scale and zero point: one of each (per
// tensor) or one per index of an axis.
type qParams struct {
	scale []float32
	zp    []int32 // nil: 0
}

// perTensor reports whether q is one scale for the whole tensor.
func (q qParams) perTensor() bool { return len(q.scale) == 1 }

// zero returns the zero point for index i (0 for a per-tensor q).
func (q qParams) zero(i int) int32 {
	if q.zp == nil {
		return 0
	}
	if len(q.zp) == 1 {
		return q.zp[0]
	}
	return q.zp[i]
}

func (q qParams) scaleAt(i int) float32 {
	if len(q.scale) == 1 {
		return q.scale[0]
	}
	return q.scale[i]
}

// qRange is the range of an integer type that quantized values take.
func qRange(t nd.DType) (lo, hi int32, ok bool) {
	switch t {
	case nd.Uint8:
		return 0, math.MaxUint8, true
	case nd.Int8:
		return math.MinInt8, math.MaxInt8, true
	case nd.Int32:
		return math.MinInt32, math.MaxInt32, true
	}
	return 0, 0, false
}

// checkQShape checks the types and shapes of a scale (named sName;
// Undefined type: an operator without scales, MatMulInteger's and
// ConvInteger's zero points alone) and a zero point (zName; Undefined
// type: left out) for n indices of an axis (n < 0: per tensor only), the
// zero point of type want (Undefined: int8 or uint8).
func checkQShape(sName, zName string, scale, zp Meta, n int, want nd.DType) error {
	noScale := scale.Type == nd.Undefined
	if noScale {
		scale.Shape = []int{}
	} else if scale.Type != nd.Float32 {
		return fmt.Errorf("input %s is %v: scales are float32 (or float16, computed as float32)", sName, scale.Type)
	}
	count := func(m Meta, name string) (int, error) {
		switch {
		case len(m.Shape) == 0:
			return 1, nil
		case len(m.Shape) == 1 && (m.Shape[0] == 1 || (n >= 0 && m.Shape[0] == n)):
			return m.Shape[0], nil
		case n < 0:
			return 0, fmt.Errorf("input %s has shape %s: want a scalar or 1 element (per tensor)", name, nd.ShapeString(m.Shape))
		}
		return 0, fmt.Errorf("input %s has shape %s: want a scalar or 1 element (per tensor), or %d (per axis: the axis's length)", name, nd.ShapeString(m.Shape), n)
	}
	ns, err := count(scale, sName)
	if err != nil {
		return err
	}
	if zp.Type == nd.Undefined {
		return nil
	}
	switch {
	case want != nd.Undefined && zp.Type != want:
		return fmt.Errorf("input %s is %v, want %v", zName, zp.Type, want)
	case want == nd.Undefined && zp.Type != nd.Int8 && zp.Type != nd.Uint8:
		return fmt.Errorf("input %s is %v: zero points are int8 or uint8", zName, zp.Type)
	}
	nz, err := count(zp, zName)
	if err != nil {
		return err
	}
	if nz != ns && !noScale {
		return fmt.Errorf("input %s has shape %s, %s %s: want one zero point per scale", zName, nd.ShapeString(zp.Shape), sName, nd.ShapeString(scale.Shape))
	}
	return nil
}

// readQParams reads a scale and zero point whose types and shapes
// checkQShape passed (zp the zero Array when left out) and checks their
// values.
func readQParams(sName, zName string, scale, zp nd.Array) (qParams, error) {
	q := qParams{scale: nd.MustAs[float32](scale)}
	for i, s := range q.scale {
		if !(s > 0) || math.IsInf(float64(s), 0) {
			return q, fmt.Errorf("input %s: element %d is %v: a scale must be positive and finite", sName, i, s)
		}
	}
	if zp.Type != nd.Undefined {
		v, err := nd.Int64s(zp)
		if err != nil {
			return q, fmt.Errorf("input %s: %w", zName, err)
		}
		q.zp = make([]int32, len(v))
		for i, z := range v {
			q.zp[i] = int32(z)
		}
	}
	return q, nil
}

// checkQValues checks the values of a scale and zero point known before the
// run (Value set); unknown ones are checked when the node runs.
func checkQValues(sName, zName string, scale, zp Meta) error {
	if scale.Value == nil {
		return nil
	}
	if scale.Type != nd.Float32 {
		return fmt.Errorf("input %s is %v: scales are float32 (or float16, computed as float32)", sName, scale.Type)
	}
	z := nd.Array{}
	if zp.Value != nil {
		z = *zp.Value
	}
	_, err := readQParams(sName, zName, *scale.Value, z)
	return err
}

// axisSplit returns the sizes around axis of shape: outer, the axis's, and
// inner.
func axisSplit(shape []int, axis int) (outer, n, inner int) {
	return numel(shape[:axis]), shape[axis], numel(shape[axis+1:])
}

// quantizeOne is saturate(round(v / scale) + zp) in [lo, hi]: the division
// in float32, rounded half to even; NaN gives zp.
func quantizeOne(v, scale float32, zp, lo, hi int32) int32 {
	r := math.RoundToEven(float64(v/scale)) + float64(zp)
	switch {
	case r != r:
		return zp
	case r <= float64(lo):
		return lo
	case r >= float64(hi):
		return hi
	}
	return int32(r)
}

// quantLinear is QuantizeLinear and DequantizeLinear.
type quantLinear struct {
	dequant bool
	axis    int  // the per-axis axis, not yet normalised
	perAxis bool // the opset has per-axis quantization (13 on)
}

func newQuantizeLinear(n *Node) (Kernel, error) { return newQuantLinear(n, false) }

func newDequantizeLinear(n *Node) (Kernel, error) { return newQuantLinear(n, true) }

func newQuantLinear(n *Node, dequant bool) (Kernel, error) {
	if err := n.CheckArity(2, 3, 1, 1); err != nil {
		return nil, err
	}
	a := n.Attrs
	k := &quantLinear{dequant: dequant, axis: 1, perAxis: n.Since >= 13}
	if k.perAxis {
		k.axis = int(a.Int("axis", 1))
	}
	if b := a.Int("block_size", 0); b != 0 {
		a.Fail("attribute block_size is %d: opset 21's blocked quantization is not supported (per tensor and per axis are)", b)
	}
	if n.Since >= 19 && !dequant {
		a.Flag("saturate", true) // float8 outputs only: no effect on int8 and uint8
	}
	return k, a.Err()
}

func (k *quantLinear) names() (x, s, z string) {
	if k.dequant {
		return "x", "x_scale", "x_zero_point"
	}
	return "x", "y_scale", "y_zero_point"
}

// geometry checks the inputs' types and shapes and returns the axis
// (normalised; 0 for a per-tensor quantization) and the output's type.
func (k *quantLinear) geometry(x, scale, zp Meta) (axis int, out nd.DType, err error) {
	_, sName, zName := k.names()
	n := -1
	if k.perAxis && len(scale.Shape) == 1 && scale.Shape[0] != 1 {
		if axis, err = NormAxis(k.axis, len(x.Shape)); err != nil {
			return 0, 0, fmt.Errorf("attribute axis: %w (per-axis %s of %d values)", err, sName, scale.Shape[0])
		}
		n = x.Shape[axis]
	}
	if k.dequant {
		switch x.Type {
		case nd.Int8, nd.Uint8:
			err = checkQShape(sName, zName, scale, zp, n, x.Type)
		case nd.Int32:
			err = checkQShape(sName, zName, scale, zp, n, nd.Int32)
		default:
			err = fmt.Errorf("input x is %v: DequantizeLinear takes int8, uint8 or int32", x.Type)
		}
		return axis, nd.Float32, err
	}
	if x.Type != nd.Float32 && x.Type != nd.Int32 {
		return 0, 0, fmt.Errorf("input x is %v: QuantizeLinear takes float32 (float16 computes as float32) or int32", x.Type)
	}
	out = nd.Uint8
	if zp.Type != nd.Undefined {
		out = zp.Type
	}
	return axis, out, checkQShape(sName, zName, scale, zp, n, nd.Undefined)
}

func (k *quantLinear) Infer(in []Meta) ([]Meta, error) {
	_, out, err := k.geometry(in[0], in[1], metaAt(in, 2))
	if err != nil {
		return nil, err
	}
	if err := k.checkConsts(in); err != nil {
		return nil, err
	}
	return []Meta{{Type: out, Shape: in[0].Shape}}, nil
}

// checkConsts checks the scale's and zero point's values where they are
// known: at load, for initializers.
func (k *quantLinear) checkConsts(in []Meta) error {
	_, sName, zName := k.names()
	zp := metaAt(in, 2)
	if k.dequant && in[0].Type == nd.Int32 && zp.Value != nil {
		if v, err := nd.Int64s(*zp.Value); err == nil {
			for i, z := range v {
				if z != 0 {
					return fmt.Errorf("input %s: element %d is %d: int32 x (a quantized bias) takes a zero point of 0", zName, i, z)
				}
			}
		}
	}
	return checkQValues(sName, zName, in[1], zp)
}

func (k *quantLinear) Run(in, out []nd.Array) error {
	x, zp := in[0], arrayAt(in, 2)
	axis, _, err := k.geometry(Meta{Type: x.Type, Shape: x.Shape}, Meta{Type: in[1].Type, Shape: in[1].Shape}, Meta{Type: zp.Type, Shape: zp.Shape})
	if err != nil {
		return err
	}
	if err := k.checkConsts(ValueMetas(in)); err != nil {
		return err
	}
	_, sName, zName := k.names()
	q, err := readQParams(sName, zName, in[1], zp)
	if err != nil {
		return err
	}
	outer, n, inner := 1, 1, x.Len()
	if !q.perTensor() {
		outer, n, inner = axisSplit(x.Shape, axis)
	}
	y := out[0]
	if k.dequant {
		ys := nd.MustAs[float32](y)
		switch x.Type {
		case nd.Int8:
			dequantize(nd.MustAs[int8](x), ys, q, outer, n, inner)
		case nd.Uint8:
			dequantize(nd.MustAs[uint8](x), ys, q, outer, n, inner)
		default:
			dequantize(nd.MustAs[int32](x), ys, q, outer, n, inner)
		}
		return nil
	}
	switch y.Type {
	case nd.Int8:
		return quantizeInto(x, nd.MustAs[int8](y), q, outer, n, inner)
	default:
		return quantizeInto(x, nd.MustAs[uint8](y), q, outer, n, inner)
	}
}

func quantizeInto[Q int8 | uint8](x nd.Array, y []Q, q qParams, outer, n, inner int) error {
	if x.Type == nd.Int32 {
		quantize(nd.MustAs[int32](x), y, q, outer, n, inner)
	} else {
		quantize(nd.MustAs[float32](x), y, q, outer, n, inner)
	}
	return nil
}

// quantize quantizes x (outer x n x inner values, q's scale and zero point
// per index of the middle axis or one in all) into y: float32 runs of 32
// values at a time in the vector kernel (quantizeVec), the rest value by
// value (quantizeOne), to the same bits.
func quantize[X float32 | int32, Q int8 | uint8](x []X, y []Q, q qParams, outer, n, inner int) {
	lo, hi, _ := qRange(nd.TypeOf[Q]())
	xf, _ := any(x).([]float32)
	i := 0
	for range outer {
		for c := range n {
			s, z := q.scaleAt(c), q.zero(c)
			j := 0
			if xf != nil {
				j = quantizeVec(y[i:i+inner], xf[i:i+inner], s, z, lo, hi)
			}
			for ; j < inner; j++ {
				y[i+j] = Q(quantizeOne(float32(x[i+j]), s, z, lo, hi))
			}
			i += inner
		}
	}
}

// dequantize writes float32(int32(x) - zero point) * scale to y, a run of
// inner values per scale; runs of bytes on dequantVec's kernel.
func dequantize[X int8 | uint8 | int32](x []X, y []float32, q qParams, outer, n, inner int) {
	i := 0
	for range outer {
		for c := range n {
			s, z := q.scaleAt(c), q.zero(c)
			j := 0
			switch xs := any(x[i : i+inner]).(type) {
			case []uint8:
				j = dequantVec(y[i:i+inner], xs, z, s)
			case []int8:
				j = dequantVec(y[i:i+inner], xs, z, s)
			}
			for ; j < inner; j++ {
				y[i+j] = float32(int32(x[i+j])-z) * s
			}
			i += inner
		}
	}
}

// dynQuant is DynamicQuantizeLinear: x (float32) to uint8 y, its scale and
// its zero point, from x's range widened to hold 0:
//
//	scale = (max(0, max x) - min(0, min x)) / 255 (1 when x is all 0)
//	zero_point = saturate(round(0 - min(0, min x) / scale))
//	y = saturate(round(x / scale) + zero_point)
//
// in float32, rounding half to even, as ONNX specifies (and ONNX
// Runtime's scale of 1 for a range of 0, where ONNX's formula divides by
// 0). A NaN in x is refused: it has no range.
type dynQuant struct{}

func newDynamicQuantizeLinear(n *Node) (Kernel, error) {
	return dynQuant{}, n.CheckArity(1, 1, 3, 3)
}

func (dynQuant) Infer(in []Meta) ([]Meta, error) {
	if in[0].Type != nd.Float32 {
		return nil, fmt.Errorf("input x is %v: DynamicQuantizeLinear takes float32", in[0].Type)
	}
	return []Meta{{Type: nd.Uint8, Shape: in[0].Shape}, {Type: nd.Float32, Shape: []int{}}, {Type: nd.Uint8, Shape: []int{}}}, nil
}

func (dynQuant) Run(in, out []nd.Array) error {
	x := nd.MustAs[float32](in[0])
	var lo, hi float32
	vlo, vhi, nv, nan := minMaxVec(x)
	if nv > 0 && !nan {
		lo, hi = min(lo, vlo), max(hi, vhi)
	}
	if nan {
		nv = 0 // find it
	}
	for i := nv; i < len(x); i++ {
		v := x[i]
		if v != v {
			return fmt.Errorf("input x: element %d is NaN: its range, and so its scale, is not defined", i)
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	scale := float32(1)
	if hi != lo {
		scale = (hi - lo) / 255
	}
	if math.IsInf(float64(scale), 0) {
		return fmt.Errorf("input x spans [%v, %v]: its scale is not finite", lo, hi)
	}
	zp := float64(0 - lo/scale)
	zp = math.RoundToEven(min(255, max(0, zp)))
	if out[1].Type != nd.Undefined {
		nd.MustAs[float32](out[1])[0] = scale
	}
	if out[2].Type != nd.Undefined {
		nd.MustAs[uint8](out[2])[0] = uint8(zp)
	}
	if out[0].Type != nd.Undefined {
		quantize(x, nd.MustAs[uint8](out[0]), qParams{scale: []float32{scale}, zp: []int32{int32(zp)}}, 1, 1, len(x))
	}
	return nil
}
