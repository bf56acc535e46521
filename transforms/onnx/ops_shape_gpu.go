package onnx

import "github.com/beamgpu/beamgpu/transforms/nd"

// The launches of Shape, Range, ConstantOfShape and Dropout (ops_shape.go):
// values computed on the host from what is known before the run, a fill, and
// Dropout's inference-mode mask.

// hostValues computes a node whose inputs are all known before the run on
// the host and copies its outputs up (shape arithmetic the plan did not
// fold: too large, or a value a kernel does not compute).
func hostValues(d *Device, k Kernel, in, out []DevArray) error {
	hin := make([]nd.Array, len(in))
	for i, a := range in {
		if a.Defined() {
			if a.Host == nil {
				return ErrOnHost
			}
			hin[i] = *a.Host
		}
	}
	return runOnHost(d, k, hin, out)
}

func (k *shapeOp) Launch(d *Device, in, out []DevArray) error {
	// Shape reads only its input's shape.
	h := nd.Zeros(in[0].Type, in[0].Shape...)
	in = []DevArray{{Type: in[0].Type, Shape: in[0].Shape, Host: &h}}
	return hostValues(d, k, in, out)
}

func (k rangeOp) Launch(d *Device, in, out []DevArray) error { return hostValues(d, k, in, out) }

func (k *constantOfShape) Launch(d *Device, _, out []DevArray) error {
	return d.fill(out[0].Ptr, out[0].Len(), k.value.Data)
}

func (k *dropout) Launch(d *Device, in, out []DevArray) error {
	if k.trainFrom >= 0 && k.trainFrom < len(in) && in[k.trainFrom].Defined() {
		t := in[k.trainFrom]
		if t.Host == nil {
			return ErrOnHost
		}
		if v, _ := nd.Int64s(*t.Host); len(v) > 0 && v[0] != 0 {
			return ErrOnHost // training: the CPU's random mask
		}
	}
	if m := arrayOf(out, 1); m.Defined() {
		one, err := nd.Convert(nd.Scalar(true), m.Type)
		if err != nil {
			return err
		}
		return d.fill(m.Ptr, m.Len(), one.Data)
	}
	return nil
}
