package onnx

import (
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// The launches of the quantized operators (ops_quant.go,
// ops_quant_conv.go, ops_quant_matmul.go) and of a fused QDQ group
// (plan_fuse_quant.go): the kernels of ops_quant.cu, which sum in int32
// (one thread per output value: the device's products are direct loops,
// not cuBLAS's) and flag a scale that is not positive and finite for the
// run to leave to the CPU. DynamicQuantizeLinear (a reduction over the
// whole input first) runs on the host.

var (
	kQuantize   = Module.Kernel("quantize_linear")
	kDequantize = Module.Kernel("dequantize_linear")
	kQConv      = Module.Kernel("qconv")
	kQMatMul    = Module.Kernel("qmatmul")
)

func (k *quantLinear) Launch(d *Device, in, out []DevArray) error {
	x, scale, zp := in[0], in[1], arrayOf(in, 2)
	axis, _, err := k.geometry(Meta{Type: x.Type, Shape: x.Shape}, Meta{Type: scale.Type, Shape: scale.Shape}, Meta{Type: zp.Type, Shape: zp.Shape})
	if err != nil {
		return err
	}
	if err := k.checkConsts(devMetas(in)); err != nil {
		return err
	}
	n, inner := 1, 1
	if scale.Len() > 1 {
		_, n, inner = axisSplit(x.Shape, axis)
	}
	flag, err := d.errorFlag()
	if err != nil {
		return err
	}
	if k.dequant {
		return d.launch(kDequantize, x.Len(), x.Ptr, int64(x.Type), scale.Ptr, ptrOr0(zp), int64(zp.Type), out[0].Ptr,
			i64(x.Len()), i64(n), i64(inner), flag)
	}
	return d.launch(kQuantize, x.Len(), x.Ptr, int64(x.Type), scale.Ptr, ptrOr0(zp), int64(zp.Type), out[0].Ptr,
		int64(out[0].Type), i64(x.Len()), i64(n), i64(inner), flag)
}

func (k *qconv) Launch(d *Device, in, out []DevArray) error {
	geo, _, err := k.geometry(devMetas(in))
	if err != nil {
		return err
	}
	if err := k.checkConsts(devMetas(in)); err != nil {
		return err
	}
	flag, err := d.errorFlag()
	if err != nil {
		return err
	}
	ix, iw, ixz, iwz, ib := k.inputs()
	x, w, y := in[ix], in[iw], out[0]
	xz, wz := arrayOf(in, ixz), arrayOf(in, iwz)
	var bias, accOut, xs, ws, ys, yz, yp gpu.Ptr
	var wsn, yt int64
	if k.linear {
		bias, xs, ws, ys, yz, yp = ptrOr0(arrayOf(in, ib)), in[1].Ptr, in[4].Ptr, in[6].Ptr, in[7].Ptr, y.Ptr
		wsn, yt = i64(in[4].Len()), int64(y.Type)
	} else {
		accOut = y.Ptr
	}
	args := geo3([]any{x.Ptr, int64(x.Type), w.Ptr, int64(w.Type), ptrOr0(xz), ptrOr0(wz), i64(wz.Len()), bias, accOut,
		xs, ws, wsn, ys, yz, yt, yp, flag, i64(x.Shape[0]), i64(x.Shape[1]), i64(w.Shape[0]), i64(k.c.group)}, geo)
	return d.launch(kQConv, y.Len(), args...)
}

func (k *qmatmul) Launch(d *Device, in, out []DevArray) error {
	s, _, err := k.geometry(devMetas(in))
	if err != nil {
		return err
	}
	if err := k.checkConsts(devMetas(in)); err != nil {
		return err
	}
	if out[0].Len() == 0 {
		return nil
	}
	flag, err := d.errorFlag()
	if err != nil {
		return err
	}
	ia, ib, iaz, ibz := k.operands()
	a, b, y := in[ia], in[ib], out[0]
	az, bz := arrayOf(in, iaz), arrayOf(in, ibz)
	// Each product's offsets of A and B (broadcast batches), on the device.
	aoff, boff := s.batchOffsets()
	offs := make([]int64, 0, 2*len(aoff))
	for _, o := range aoff {
		offs = append(offs, int64(o))
	}
	for _, o := range boff {
		offs = append(offs, int64(o))
	}
	op, err := gpu.Upload(d.Call, offs)
	if err != nil {
		return err
	}
	var accOut, as, bs, ys, yz, yp gpu.Ptr
	var bsn, yt int64
	if k.linear {
		as, bs, ys, yz, yp = in[1].Ptr, in[4].Ptr, in[6].Ptr, in[7].Ptr, y.Ptr
		bsn, yt = i64(in[4].Len()), int64(y.Type)
	} else {
		accOut = y.Ptr
	}
	return d.launch(kQMatMul, y.Len(), a.Ptr, int64(a.Type), b.Ptr, int64(b.Type), ptrOr0(az), i64(az.Len()), ptrOr0(bz),
		i64(bz.Len()), op, at(op, len(aoff), 8), accOut, as, bs, bsn, ys, yz, yt, yp, flag, i64(len(aoff)), i64(s.m), i64(s.k), i64(s.n))
}

// Launch runs the fused group as its QLinear kernel, the weights' quantized
// constants copied up.
func (f *qdqStep) Launch(d *Device, in, out []DevArray) error {
	l, ok := f.k.(Launcher)
	if !ok {
		return ErrOnHost
	}
	up := func(a *nd.Array) (DevArray, error) {
		if a.Type == nd.Undefined {
			return DevArray{}, nil
		}
		p, err := d.Call.Upload(a.Data)
		return DevArray{Type: a.Type, Shape: a.Shape, Ptr: p, Host: a}, err
	}
	var consts [4]DevArray
	for i, a := range []*nd.Array{&f.w, &f.wScale, &f.wZero, &f.bias} {
		var err error
		if consts[i], err = up(a); err != nil {
			return err
		}
	}
	return l.Launch(d, qdqInputs(in, consts[0], consts[1], consts[2], consts[3], f.hasBias), out)
}
