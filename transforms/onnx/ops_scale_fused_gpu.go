package onnx

// The launch of a fused Transpose + Mul + Add (ops_scale_fused.go): the
// Transpose's strided copy into memory aside, the Mul there in place, then
// the Add into the output, each the operator's own launch.

func (k *fusedScaleAdd) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in...) {
		return ErrOnHost
	}
	u, x := in[0], in[2]
	t := DevArray{Type: x.Type, Shape: x.Shape}
	var err error
	if t.Ptr, err = d.aside(t, false); err != nil {
		return err
	}
	c, err := (&transpose{perm: []int{0, 3, 1, 2}}).copyPlan(u.Shape, t.Shape)
	if err != nil {
		return err
	}
	if err := d.copyStrided(t.Ptr, u.Ptr, u.Type.Size(), c); err != nil {
		return err
	}
	mulIn := []DevArray{t, in[1]}
	if k.mulT == 1 {
		mulIn[0], mulIn[1] = in[1], t
	}
	if err := k.mul.Launch(d, mulIn, []DevArray{t}); err != nil {
		return err
	}
	addIn := []DevArray{t, x}
	if k.addM == 1 {
		addIn[0], addIn[1] = x, t
	}
	return k.add.Launch(d, addIn, out)
}
