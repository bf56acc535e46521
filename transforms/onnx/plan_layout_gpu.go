package onnx

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
			if z.Ptr, err = d.aside(z); err != nil {
				return err
			}
		}
	}
	return k.conv.launch(d, in[:min(3, len(in))], out, k.ep, z)
}

// nchw is the step's kernel in NCHW, what the device runs on the host
// where it does not launch.
func (k *nchwcConv) nchw() Kernel {
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
