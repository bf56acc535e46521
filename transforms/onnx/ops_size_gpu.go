package onnx

import "github.com/beamgpu/beamgpu/transforms/nd"

// The launch of Size (ops_size.go): its value is its input's element
// count, computed on the host from the shape alone and copied up.

func (k sizeOp) Launch(d *Device, in, out []DevArray) error {
	return runOnHost(d, k, []nd.Array{{Type: in[0].Type, Shape: in[0].Shape}}, out)
}
