package onnx

// The launches of the pools (ops_pool.go): pool_f32 (ops_pool.cu) for
// MaxPool and AveragePool, GlobalAveragePool as a mean reduction
// (reduce_f32).

var kPool = Module.Kernel("pool_f32")

func (globalAvgPool) Launch(d *Device, in, out []DevArray) error {
	x := in[0]
	if !allFloat32(x) {
		return ErrOnHost
	}
	planes := x.Shape[0] * x.Shape[1]
	return d.launch(kReduce, planes, int64(redMean), x.Ptr, out[0].Ptr, i64(planes), i64(numel(x.Shape[2:])), int64(1))
}

func (p *pool) Launch(d *Device, in, out []DevArray) error {
	x := in[0]
	if !allFloat32(x) || arrayOf(out, 1).Defined() { // MaxPool's Indices: the CPU's
		return ErrOnHost
	}
	g, err := p.geometry(x.Shape)
	if err != nil {
		return err
	}
	mode := int64(0)
	if !p.max {
		mode = 1
		if p.inclPad {
			mode = 2
		}
	}
	planes := x.Shape[0] * x.Shape[1]
	args := geo3([]any{mode, x.Ptr, out[0].Ptr, i64(planes)}, g)
	args = append(args, i64(g.padHi[0]), i64(g.padHi[1]), i64(g.padHi[2]))
	return d.launch(kPool, planes*g.outSize(), args...)
}
