package onnx

import "github.com/beamgpu/beamgpu/transforms/nd"

// The device's form of the plan's blocked layout (plan_layout.go): every
// value on the device is NCHW, so a blocked convolution launches the Conv
// it replaces and a reorder is a copy.

func (k *nchwcConv) Launch(d *Device, in, out []DevArray) error {
	var z DevArray
	if k.ep != nil && k.ep.residual {
		z = in[3]
		if !allFloat32(z) {
			return ErrOnHost
		}
		if z.Ptr == out[0].Ptr && z.Bytes() > 0 { // Y over Z (Overwrites): the product writes Y before the epilogue reads Z
			var err error
			if z.Ptr, err = d.aside(z, true); err != nil {
				return err
			}
		}
	}
	if k.layout.pool != nil { // the convolution NCHW into memory aside, then the pooling from there
		x, w := in[0].Shape, in[1].Shape
		geo, err := k.conv.shapes(x, w, arrayOf(in, 2).Shape, arrayOf(in, 2).Defined())
		if err != nil {
			return err
		}
		y := DevArray{Type: out[0].Type, Shape: geo.outShape(x[0], w[0])}
		if y.Ptr, err = d.aside(y, false); err != nil {
			return err
		}
		if err := k.conv.launch(d, in[:min(3, len(in))], []DevArray{y}, k.ep, z); err != nil {
			return err
		}
		return k.layout.pool.Launch(d, []DevArray{y}, out)
	}
	if k.layout.nhwc { // the convolution NCHW into memory aside, then to channels last
		y := out[0]
		s := y.Shape
		y.Shape = []int{s[0], s[3], s[1], s[2]}
		var err error
		if y.Ptr, err = d.aside(DevArray{Type: y.Type, Shape: y.Shape}, false); err != nil {
			return err
		}
		if err := k.conv.launch(d, in[:min(3, len(in))], []DevArray{y}, k.ep, z); err != nil {
			return err
		}
		c, err := (&transpose{perm: []int{0, 2, 3, 1}}).copyPlan(y.Shape, s)
		if err != nil {
			return err
		}
		return d.copyStrided(out[0].Ptr, y.Ptr, y.Type.Size(), c)
	}
	return k.conv.launch(d, in[:min(3, len(in))], out, k.ep, z)
}

// nchw is the step's kernel in NCHW, what the device runs on the host
// where it does not launch: X and Z NCHW, Y NCHW or, nhwc, channels last
// (the blocked kernel's Run), or the convolution then its MaxPool.
func (k *nchwcConv) nchw() Kernel {
	if k.layout.pool != nil {
		return pooledConv{conv: (&nchwcConv{conv: k.conv, ep: k.ep}).nchw(), pool: k.layout.pool}
	}
	if k.layout.nhwc {
		return &nchwcConv{conv: k.conv, ep: k.ep, layout: convLayout{nhwc: true}}
	}
	if k.ep != nil {
		return &fusedConv{conv: k.conv, ep: k.ep}
	}
	return k.conv
}

func (nchwcReorder) Launch(d *Device, in, out []DevArray) error {
	if n := out[0].Bytes(); n > 0 {
		return d.Call.CopyDevice(out[0].Ptr, in[0].Ptr, n)
	}
	return nil
}

// The device's GlobalAveragePool, Mul and MaxPool of NCHW values.

func (nchwcMean) Launch(d *Device, in, out []DevArray) error {
	return globalAvgPool{}.Launch(d, in, out)
}

func (nchwcMean) nchw() Kernel { return globalAvgPool{} }

func (k *nchwcScale) Launch(d *Device, in, out []DevArray) error { return k.mul.Launch(d, in, out) }

func (k *nchwcScale) nchw() Kernel { return k.mul }

func (k nchwcMaxPool) Launch(d *Device, in, out []DevArray) error { return k.pool.Launch(d, in, out) }

func (k nchwcMaxPool) nchw() Kernel { return k.pool }

// pooledConv is a convolution's step that took in the MaxPool of its
// output (convLayout.pool) on NCHW values, as the device's host runs it:
// the convolution into an array of its own, then the pooling.
type pooledConv struct {
	conv Kernel
	pool *pool
}

func (k pooledConv) Infer(in []Meta) ([]Meta, error) {
	y, err := k.conv.Infer(in)
	if err != nil {
		return nil, err
	}
	return k.pool.Infer(y)
}

func (k pooledConv) Run(in, out []nd.Array) error {
	metas := make([]Meta, len(in))
	for i, a := range in {
		metas[i] = Meta{Type: a.Type, Shape: a.Shape}
	}
	m, err := k.conv.Infer(metas)
	if err != nil {
		return err
	}
	y, err := nd.New(m[0].Type, m[0].Shape...)
	if err != nil {
		return err
	}
	if err := k.conv.Run(in, []nd.Array{y}); err != nil {
		return err
	}
	return k.pool.Run([]nd.Array{y}, out)
}
