package onnx

import "github.com/beamgpu/beamgpu/transforms/nd"

// The launches of Size and Shrink (ops_size.go): Size's value is its
// input's element count, computed on the host from the shape alone and
// copied up; Shrink is shrink_f32, in ops_size.cu.

var kShrink = Module.Kernel("shrink_f32")

func (k sizeOp) Launch(d *Device, in, out []DevArray) error {
	return runOnHost(d, k, []nd.Array{{Type: in[0].Type, Shape: in[0].Shape}}, out)
}

func (k *shrink) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in[0]) {
		return ErrOnHost
	}
	return d.launch(kShrink, in[0].Len(), in[0].Ptr, out[0].Ptr, i64(in[0].Len()), k.lambd, k.bias)
}
