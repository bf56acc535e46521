package onnx

import "github.com/beamgpu/beamgpu/transforms/nd"

// The launch of GatherElements and ScatterElements (ops_gather_elements.go):
// elements_gs (ops_gather_nd.cu), which flags an index out of range for the
// run to report (ErrIndexRange). ScatterElements with a reduction, and a
// rank past six, run on the host.

var kElementsGS = Module.Kernel("elements_gs")

func (k *elementsKernel) Launch(d *Device, in, out []DevArray) error {
	data, idx, y := in[0], in[1], out[0]
	if k.scatter && k.red != scatterNone {
		return ErrOnHost
	}
	ax, err := NormAxis(k.axis, len(data.Shape))
	if err != nil {
		return err
	}
	flag, err := d.errorFlag()
	if err != nil {
		return err
	}
	src := data.Ptr
	if k.scatter {
		if n := y.Bytes(); n > 0 {
			if err := d.Call.CopyDevice(y.Ptr, data.Ptr, n); err != nil {
				return err
			}
		}
		src = in[2].Ptr
	}
	args, ok := dims6([]any{y.Ptr, src, idx.Ptr, i64(data.Type.Size()), i64(idx.Len()), i64(len(idx.Shape)), i64(ax),
		i64(data.Shape[ax]), int64(boolInt(idx.Type == nd.Int64)), int64(boolInt(k.scatter)), flag}, idx.Shape, Strides(data.Shape))
	if !ok {
		return ErrOnHost
	}
	return d.launch(kElementsGS, idx.Len(), args...)
}
