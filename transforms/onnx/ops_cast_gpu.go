package onnx

import "github.com/beamgpu/beamgpu/transforms/nd"

// The launch of Cast (ops_cast.go): the cast kernel (ops_cast.cu), between
// the types it converts; Float16 and BFloat16 rounding run on the host.

var kCast = Module.Kernel("cast")

// castTypes are the types the cast kernel converts between.
var castTypes = map[nd.DType]bool{nd.Float32: true, nd.Float64: true, nd.Uint8: true, nd.Int8: true,
	nd.Int16: true, nd.Int32: true, nd.Int64: true, nd.Bool: true}

func (k *castKernel) Launch(d *Device, in, out []DevArray) error {
	from, to := in[0].Type, k.to
	if from == to {
		return d.Call.CopyDevice(out[0].Ptr, in[0].Ptr, out[0].Bytes())
	}
	if !castTypes[from] || !castTypes[to] {
		return ErrOnHost // Float16 and BFloat16 rounding, unsigned wide types
	}
	n := in[0].Len()
	return d.launch(kCast, n, in[0].Ptr, out[0].Ptr, i64(n), int64(from), int64(to))
}
