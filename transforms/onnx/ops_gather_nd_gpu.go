package onnx

// The launch of GatherND and ScatterND (ops_gather_nd.go): nd_gs
// (ops_gather_nd.cu), which flags an index out of range for the run to
// report (ErrIndexRange). ScatterND with a reduction, and tuples of more
// than six indices, run on the host.

var kNDGS = Module.Kernel("nd_gs")

func (k *ndKernel) Launch(d *Device, in, out []DevArray) error {
	data, idx, y := in[0], in[1], out[0]
	if k.scatter && k.red != scatterNone {
		return ErrOnHost
	}
	p, err := k.plan(devMetas(in))
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
	args, ok := dims6([]any{y.Ptr, src, idx.Ptr, i64(data.Type.Size()), i64(p.batches), i64(p.tuples), i64(p.m), i64(p.inner),
		i64(numel(p.dims) * p.inner), int64(boolInt(k.scatter)), flag}, p.dims)
	if !ok {
		return ErrOnHost
	}
	return d.launch(kNDGS, p.batches*p.tuples*p.inner, args...)
}
