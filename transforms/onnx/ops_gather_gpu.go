package onnx

import "github.com/beamgpu/beamgpu/transforms/nd"

// The launch of Gather (ops_gather.go): the gather kernel (ops_gather.cu),
// which flags an index out of range for the run to report (ErrIndexRange).

var kGather = Module.Kernel("gather")

func (k *gather) Launch(d *Device, in, out []DevArray) error {
	data, idx := in[0], in[1]
	if idx.Type != nd.Int64 && idx.Type != nd.Int32 {
		return ErrOnHost
	}
	axis, _ := NormAxis(int(k.axis), len(data.Shape))
	flag, err := d.errorFlag()
	if err != nil {
		return err
	}
	n := out[0].Len()
	return d.launch(kGather, n, out[0].Ptr, data.Ptr, idx.Ptr, i64(data.Type.Size()), i64(numel(data.Shape[:axis])),
		i64(data.Shape[axis]), i64(numel(data.Shape[axis+1:])), i64(idx.Len()), int64(boolInt(idx.Type == nd.Int64)), flag)
}
