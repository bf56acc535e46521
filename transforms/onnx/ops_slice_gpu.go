package onnx

import "github.com/beamgpu/beamgpu/transforms/nd"

// The launches of Slice, Expand and Pad (ops_slice.go): strided copies, and
// pad_map (ops_slice.cu) for Pad's reflect and edge modes.

var kPadMap = Module.Kernel("pad_map")

func (k *slice) Launch(d *Device, in, out []DevArray) error {
	c, err := k.copyPlan(devMetas(in))
	if err != nil {
		return err
	}
	return d.copyStrided(out[0].Ptr, in[0].Ptr, in[0].Type.Size(), c)
}

func (expand) Launch(d *Device, in, out []DevArray) error {
	o := out[0].Shape
	return d.copyStrided(out[0].Ptr, in[0].Ptr, in[0].Type.Size(),
		strided{shape: o, dstSt: Strides(o), srcSt: BroadcastStrides(in[0].Shape, o)})
}

func (k *pad) Launch(d *Device, in, out []DevArray) error {
	before, _, err := k.amounts(devMetas(in))
	if err != nil {
		return err
	}
	src, dst := in[0], out[0]
	size := src.Type.Size()
	if k.mode != "constant" {
		mode := int64(0)
		if k.mode == "edge" {
			mode = 1
		}
		if src.Len() == 0 {
			return ErrOnHost // the CPU's error, or nothing to read
		}
		n := dst.Len()
		args, ok := dims6([]any{dst.Ptr, src.Ptr, i64(n), i64(size), i64(len(dst.Shape)), mode}, dst.Shape, src.Shape, before)
		if !ok {
			return ErrOnHost
		}
		return d.launch(kPadMap, n, args...)
	}
	fill := nd.Scalar(k.value)
	if k.inputs && len(in) > 2 && in[2].Defined() {
		if in[2].Host == nil {
			return ErrOnHost
		}
		fill = *in[2].Host
	}
	v, err := nd.Convert(fill, src.Type)
	if err != nil {
		return err
	}
	if err := d.fill(dst.Ptr, dst.Len(), v.Data[:size]); err != nil {
		return err
	}
	c := strided{shape: make([]int, len(before)), dstSt: Strides(dst.Shape), srcSt: Strides(src.Shape)}
	for i := range before {
		lo := max(0, -before[i])
		hi := min(src.Shape[i], dst.Shape[i]-before[i])
		c.shape[i] = max(0, hi-lo)
		c.srcOff += lo * c.srcSt[i]
		c.dstOff += (lo + before[i]) * c.dstSt[i]
	}
	return d.copyStrided(dst.Ptr, src.Ptr, size, c)
}
