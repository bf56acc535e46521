package onnx

import (
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The launches of the binary and variadic elementwise operators
// (ops_elementwise.go) and of the comparisons, whose kernel they share
// (ops_compare.go): binary_f32, binary_i64, binary_i32 and equal_u8, each
// reading its operands at their broadcast strides (ops_elementwise.cu).

var (
	kBinaryF32 = Module.Kernel("binary_f32")
	kBinaryI64 = Module.Kernel("binary_i64")
	kBinaryI32 = Module.Kernel("binary_i32")
	kEqualBool = Module.Kernel("equal_u8")
)

// binary enqueues c = a op b, a and b read with shapes aShape and bShape
// broadcast to c's.
func (d *Device) binary(op ewOp, a, b, c DevArray, aShape, bShape []int) error {
	var k gpu.Kernel
	switch {
	case a.Type == nd.Float32 && b.Type == nd.Float32:
		k = kBinaryF32
	case op == ewPow || op == ewDiv || a.Type != b.Type:
		return ErrOnHost
	case a.Type == nd.Int64:
		k = kBinaryI64
	case a.Type == nd.Int32:
		k = kBinaryI32
	case a.Type == nd.Bool && op == ewEqual:
		k = kEqualBool
	default:
		return ErrOnHost
	}
	l := newEWLoop(c.Shape, aShape, bShape)
	var args []any
	if k != kEqualBool {
		args = append(args, int64(op))
	}
	args = append(args, a.Ptr, b.Ptr, c.Ptr, i64(l.n), i64(len(l.dims)))
	args, ok := dims6(args, l.dims, l.st[0], l.st[1])
	if !ok {
		return ErrOnHost
	}
	return d.launch(k, l.n, args...)
}

func (k *ewBinary) Launch(d *Device, in, out []DevArray) error {
	bShape, _, err := k.shapes(in[0].Shape, in[1].Shape)
	if err != nil {
		return err
	}
	return d.binary(k.op, in[0], in[1], out[0], in[0].Shape, bShape)
}

func (k *ewVariadic) Launch(d *Device, in, out []DevArray) error {
	c := out[0]
	if !allFloat32(in...) {
		return ErrOnHost
	}
	if len(in) == 1 {
		return d.Call.CopyDevice(c.Ptr, in[0].Ptr, c.Bytes())
	}
	if err := d.binary(k.op, in[0], in[1], c, in[0].Shape, in[1].Shape); err != nil {
		return err
	}
	for _, b := range in[2:] {
		if err := d.binary(k.op, c, b, c, c.Shape, b.Shape); err != nil {
			return err
		}
	}
	if k.mean {
		n := c.Len()
		return d.launch(kGemmEpilogue, n, c.Ptr, gpu.Ptr(0), int64(1), i64(n), 1/float64(len(in)), 0.0, int64(0), int64(0))
	}
	return nil
}
