package onnx

// The launch of Resize and Upsample (ops_resize.go): one resize_axis_f32
// (ops_resize.cu) per axis to resize, through two halves of the scratch
// memory, in the order the CPU resizes them.

import "github.com/beamgpu/beamgpu/runtime/executor/gpu"

var kResizeAxis = Module.Kernel("resize_axis_f32")

func (r *resize) Launch(d *Device, in, out []DevArray) error {
	x, y := in[0], out[0]
	if !allFloat32(x) || len(x.Shape) == 0 {
		return ErrOnHost
	}
	p, err := r.plan(devMetas(in))
	if err != nil {
		return err
	}
	if y.Len() == 0 {
		return nil
	}
	order := p.order
	if len(order) == 0 {
		order = []int{0} // a copy: axis 0 maps to itself
	}
	cur := make([]int, len(p.axes))
	for i, a := range p.axes {
		cur[i] = a.in
	}
	// The intermediates: at most the larger of X and Y (the shrinking axes
	// go first).
	var half int
	var tmp gpu.Ptr
	if len(order) > 1 {
		half = max(x.Len(), y.Len())
		if tmp, err = d.scratch(int64(8 * half)); err != nil {
			return err
		}
	}
	src := x.Ptr
	for k, a := range order {
		ax := p.axes[a]
		dst := y.Ptr
		if k < len(order)-1 {
			dst = at(tmp, k%2*half, 4)
		}
		outer, inner := splitAt(cur, a)
		args := []any{src, dst, i64(outer), i64(ax.in), i64(ax.out), i64(inner), i64(r.mode), i64(r.coord), i64(r.near),
			ax.scale, ax.roiLo, ax.roiHi, r.cubicA, int64(boolInt(r.excludeOutside)), int64(boolInt(r.antialias)), r.extrapolate}
		if err := d.launch(kResizeAxis, outer*ax.out*inner, args...); err != nil {
			return err
		}
		cur[a] = ax.out
		src = dst
	}
	return nil
}
