package onnx

// The launch of InstanceNormalization and GroupNormalization
// (ops_instnorm.go): groupnorm_f32, in ops_instnorm.cu.

var kGroupNorm = Module.Kernel("groupnorm_f32")

func (k *groupNorm) Launch(d *Device, in, out []DevArray) error {
	x := in[0]
	if !allFloat32(in...) {
		return ErrOnHost
	}
	n, c, groups, inner, err := k.shape(x.Shape, in[1].Shape, in[2].Shape)
	if err != nil {
		return err
	}
	return d.launch(kGroupNorm, n*groups, x.Ptr, in[1].Ptr, in[2].Ptr, out[0].Ptr,
		i64(n*groups), i64(groups), i64(c/groups), i64(inner), int64(boolInt(k.perChannel)), k.epsilon)
}
