package onnx

import (
	"math"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

// The launch of Clip (ops_activation.go): clip_f32, in ops_activation.cu.

var kClip = Module.Kernel("clip_f32")

func (k *clipKernel) Launch(d *Device, in, out []DevArray) error {
	if !allFloat32(in...) {
		return ErrOnHost
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	var lop, hip gpu.Ptr
	if k.inputs {
		lop, hip = ptrOr0(arrayOf(in, 1)), ptrOr0(arrayOf(in, 2))
	} else {
		if k.hasLo {
			lo = float64(float32(k.lo))
		}
		if k.hasHi {
			hi = float64(float32(k.hi))
		}
	}
	n := in[0].Len()
	return d.launch(kClip, n, in[0].Ptr, out[0].Ptr, i64(n), lo, hi, lop, hip)
}
