package onnx

// The launch of RoiAlign (ops_roialign.go): roialign_f32 (ops_roialign.cu),
// which flags a batch index out of range for the run to report
// (ErrIndexRange); float64 on the host.

var kRoiAlign = Module.Kernel("roialign_f32")

func (k *roiAlignKernel) Launch(d *Device, in, out []DevArray) error {
	x, rois, bi, y := in[0], in[1], in[2], out[0]
	if !allFloat32(x, rois) {
		return ErrOnHost
	}
	flag, err := d.errorFlag()
	if err != nil {
		return err
	}
	return d.launch(kRoiAlign, y.Len(), x.Ptr, rois.Ptr, bi.Ptr, y.Ptr, i64(x.Shape[0]), i64(rois.Shape[0]), i64(x.Shape[1]),
		i64(x.Shape[2]), i64(x.Shape[3]), i64(k.oh), i64(k.ow), i64(k.sampling), k.scale, int64(boolInt(k.halfPixel)),
		int64(boolInt(k.max)), flag)
}
