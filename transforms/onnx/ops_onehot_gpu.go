package onnx

import "github.com/beamgpu/beamgpu/transforms/nd"

// The launch of OneHot (ops_onehot.go): onehot (ops_onehot.cu), for int64
// indices and values of any element type; other indices on the host.

var kOneHot = Module.Kernel("onehot")

func (k *oneHotKernel) Launch(d *Device, in, out []DevArray) error {
	if in[0].Type != nd.Int64 {
		return ErrOnHost
	}
	_, depth, outer, inner, err := k.plan(devMetas(in))
	if err != nil {
		return err
	}
	return d.launch(kOneHot, outer*depth*inner, in[0].Ptr, in[2].Ptr, out[0].Ptr, i64(outer), i64(depth), i64(inner),
		i64(in[2].Type.Size()))
}
