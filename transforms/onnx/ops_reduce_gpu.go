package onnx

// The launch of the reductions (ops_reduce.go): reduce_f32 (ops_reduce.cu),
// the reduced axes moved last first when they are not contiguous.
// GlobalAveragePool launches it too (ops_pool_gpu.go).

var kReduce = Module.Kernel("reduce_f32")

func (k *reduceKernel) Launch(d *Device, in, out []DevArray) error {
	x, y := in[0], out[0]
	if !allFloat32(x) {
		return ErrOnHost
	}
	axes, err := k.axesOf(devMetas(in))
	if err != nil {
		return err
	}
	red, err := k.reduced(axes, len(x.Shape))
	if err != nil {
		return err
	}
	// The reduced axes of more than one element, and the others.
	lo, hi, contiguous := -1, -1, true
	for a, r := range red {
		if !r || x.Shape[a] == 1 {
			continue
		}
		if hi >= 0 && hi != a-1 {
			for b := hi + 1; b < a; b++ {
				if x.Shape[b] != 1 {
					contiguous = false
				}
			}
		}
		if lo < 0 {
			lo = a
		}
		hi = a
	}
	if lo < 0 && !anyReduced(red) {
		return d.Call.CopyDevice(y.Ptr, x.Ptr, y.Bytes())
	}
	src := x.Ptr
	var outer, n, inner int
	switch {
	case lo < 0: // only axes of size 1: one element each
		outer, n, inner = x.Len(), 1, 1
	case contiguous:
		outer, n, inner = numel(x.Shape[:lo]), numel(x.Shape[lo:hi+1]), numel(x.Shape[hi+1:])
	default: // move the reduced axes last
		var shape, st []int
		xst := Strides(x.Shape)
		for pass := range 2 {
			for a, r := range red {
				if r == (pass == 1) {
					shape, st = append(shape, x.Shape[a]), append(st, xst[a])
				}
			}
		}
		if src, err = d.scratch(x.Bytes()); err != nil {
			return err
		}
		if err := d.copyStrided(src, x.Ptr, 4, strided{shape: shape, dstSt: Strides(shape), srcSt: st}); err != nil {
			return err
		}
		n = 1
		for a, r := range red {
			if r {
				n *= x.Shape[a]
			}
		}
		outer, inner = x.Len()/max(n, 1), 1
	}
	if n == 0 && k.op != redSum && k.op != redMean && k.op != redSumSquare && k.op != redL1 && k.op != redL2 {
		return ErrOnHost // the empty reductions' identities are the CPU's
	}
	return d.launch(kReduce, outer*inner, int64(k.op), src, y.Ptr, i64(outer), i64(n), i64(inner))
}

func anyReduced(red []bool) bool {
	for _, r := range red {
		if r {
			return true
		}
	}
	return false
}
