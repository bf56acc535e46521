package onnx

// attentionScratchBytes bounds the device's score buffer of a fused
// attention step: batches (along the first axis) go in chunks whose scores
// fit, one at least. A variable for the tests.
var attentionScratchBytes = 256 << 20

// Launch runs a fused attention step (ops_attention_fused.go) with the
// launches of the operators it replaces, over a score buffer of as many
// batches of the first axis as attentionScratchBytes holds (all of them
// where Q, Kᵀ or V broadcast along it; a mask that does is read whole): MatMul's product,
// Div's or Mul's kernel, Add's, Softmax's, MatMul's product.
func (k *fusedAttention) Launch(d *Device, in, out []DevArray) error {
	q, kt, c, mask, v, y := in[0], in[1], arrayOf(in, 2), arrayOf(in, 3), in[4], out[0]
	if !allFloat32(q, kt, c, mask, v) {
		return ErrOnHost
	}
	qk, pv, err := k.shapes(q.Shape, kt.Shape, v.Shape)
	if err != nil {
		return err
	}
	if y.Len() == 0 {
		return nil
	}
	shape := qk.out
	n0 := shape[0]
	per := 4 * numel(shape[1:])
	// The operands the CPU reads through a Transpose are copied by its
	// kernel, before, into buffers after the scores; the output is
	// written to one and transposed into y after.
	var extra int
	for i, a := range []DevArray{q, kt, v} {
		if k.through[i] != nil {
			extra += 4 * a.Len()
		}
	}
	if k.through[3] != nil {
		extra += 4 * numel(pv.out)
	}
	// Chunks along the first axis where every operand has it whole (a
	// rank of the scores' and their first dimension).
	whole := func(a DevArray) bool { return len(a.Shape) == len(shape) && a.Shape[0] == n0 }
	chunk := n0
	if per*n0 > attentionScratchBytes && whole(q) && whole(kt) && whole(v) {
		chunk = max(1, attentionScratchBytes/max(per, 1))
	}
	buf, err := d.scratch(int64(per*chunk + extra))
	if err != nil {
		return err
	}
	next := at(buf, per*chunk/4, 4)
	for i, a := range []*DevArray{&q, &kt, &v} {
		t := k.through[i]
		if t == nil {
			continue
		}
		ls, _, err := k.logical(i, a.Shape)
		if err != nil {
			return err
		}
		b := DevArray{Type: a.Type, Shape: ls, Ptr: next}
		if err := t.Launch(d, []DevArray{*a}, []DevArray{b}); err != nil {
			return err
		}
		*a, next = b, at(next, b.Len(), 4)
	}
	final := y
	if k.through[3] != nil {
		y = DevArray{Type: y.Type, Shape: pv.out, Ptr: next}
	}
	for b0 := 0; b0 < n0; b0 += chunk {
		nb := min(chunk, n0-b0)
		sub := func(a DevArray) DevArray {
			if nb == n0 || !whole(a) {
				return a
			}
			s := append([]int{nb}, a.Shape[1:]...)
			return DevArray{Type: a.Type, Shape: s, Ptr: at(a.Ptr, b0*numel(a.Shape[1:]), 4)}
		}
		s := DevArray{Type: y.Type, Shape: append([]int{nb}, shape[1:]...), Ptr: buf}
		if err := k.qk.Launch(d, []DevArray{sub(q), sub(kt)}, []DevArray{s}); err != nil {
			return err
		}
		if k.scale != nil {
			ops := []DevArray{s, c}
			if k.scaleFirst {
				ops = []DevArray{c, s}
			}
			if err := k.scale.Launch(d, ops, []DevArray{s}); err != nil {
				return err
			}
		}
		if k.mask != nil {
			ops := []DevArray{s, sub(mask)}
			if k.maskFirst {
				ops = []DevArray{sub(mask), s}
			}
			if err := k.mask.Launch(d, ops, []DevArray{s}); err != nil {
				return err
			}
		}
		if err := k.softmax.Launch(d, []DevArray{s}, []DevArray{s}); err != nil {
			return err
		}
		if err := k.pv.Launch(d, []DevArray{s, sub(v)}, []DevArray{sub(y)}); err != nil {
			return err
		}
	}
	if t := k.through[3]; t != nil {
		return t.Launch(d, []DevArray{y}, []DevArray{final})
	}
	return nil
}
