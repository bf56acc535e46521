package inference

import (
	"fmt"
	"sort"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
)

// PadRows lets rows whose inputs differ in size along the model's dynamic
// axes (token sequences of different lengths) share a model call: each
// input is padded, at the end of each such axis, to the largest size in
// the call, with values[input] (0 for an input not named: the padding id
// and attention mask of a BERT-style model), and each output is cut back
// to each row's own size on the axes that come from the padded ones. An
// output axis comes from a padded input axis when the model gives both the
// same symbolic name ("sequence"); the rule and what happens when an output
// axis cannot be so decided are in the package documentation (Padding).
//
// Padding is right for a model that ignores what is at padded positions,
// as one taking an attention mask does; a model that reads them would give
// a padded row other outputs than the row alone.
func PadRows(values map[string]float64) ONNXOption {
	return func(h *ONNXHandler) {
		h.PadRows = true
		h.PadValues = values
	}
}

// padPlan is how a model's calls are padded and its outputs cut back.
type padPlan struct {
	// axes are each input's dynamic row axes (after the batch axis).
	axes [][]int
	// cut, per output and row axis, is the input and its row axis whose
	// size the output's axis takes ({-1, -1}: not cut).
	cut [][][2]int
	// undecided says why the outputs cannot be cut back ("" when they can):
	// rows of different sizes then share no call.
	undecided string
	// tokens is the input whose dynamic row axes count tokens (-1: none).
	tokens int
	// pad are the pad values, per input, in the input's type.
	pad []nd.Array
	// names are the symbolic names of each input's dynamic row axes ("":
	// none), parallel to axes.
	names  [][]string
	inputs []string
}

// checkRow refuses a row whose inputs differ in size on dynamic axes of
// one name (input_ids and attention_mask of different lengths), which
// padding would otherwise hide.
func (p *padPlan) checkRow(row []nd.Array) error {
	type seen struct{ in, size int }
	sizes := map[string]seen{}
	for i, a := range row {
		if i >= len(p.axes) {
			break
		}
		for k, ax := range p.axes[i] {
			name := p.names[i][k]
			if name == "" || ax >= len(a.Shape) {
				continue
			}
			if s, ok := sizes[name]; ok && s.size != a.Shape[ax] {
				return fmt.Errorf("input %q is %d long on axis %d (%s) where input %q is %d: a row's inputs agree on the sizes of a name", p.inputs[i], a.Shape[ax], ax+1, name, p.inputs[s.in], s.size)
			} else if !ok {
				sizes[name] = seen{i, a.Shape[ax]}
			}
		}
	}
	return nil
}

// newPadPlan makes the padding plan of m with the pad values (by input
// name; unknown names are an error listing the inputs).
func newPadPlan(m *onnx.Model, values map[string]float64) (*padPlan, error) {
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		found := false
		for _, v := range m.Inputs {
			found = found || v.Name == n
		}
		if !found {
			return nil, fmt.Errorf("pad value for %q: the model %s has no such input (its inputs: %s)", n, m.Name, inputList(m))
		}
	}
	p := &padPlan{tokens: -1}
	type axis struct{ in, ax int }
	named := map[string]axis{}
	for i, v := range m.Inputs {
		var axes []int
		var axisNames []string
		for a, d := range rowDims(m, v.Shape) {
			if d.Size < 0 {
				axes = append(axes, a)
				axisNames = append(axisNames, d.Param)
				if _, dup := named[d.Param]; d.Param != "" && !dup {
					named[d.Param] = axis{i, a}
				}
			}
		}
		p.axes = append(p.axes, axes)
		p.names = append(p.names, axisNames)
		p.inputs = append(p.inputs, v.Name)
		if p.tokens < 0 && len(axes) > 0 {
			p.tokens = i
		}
		t := v.Type
		if t == nd.Float16 || t == nd.BFloat16 {
			t = nd.Float32
		}
		pv, err := nd.Convert(nd.Of([]float64{values[v.Name]}), t)
		if err != nil {
			return nil, fmt.Errorf("pad value %v for input %q (%v): %w", values[v.Name], v.Name, v.Type, err)
		}
		p.pad = append(p.pad, pv)
	}
	for _, o := range m.Outputs {
		if o.Shape == nil {
			p.undecided = fmt.Sprintf("the output %q has no declared shape", o.Name)
			p.cut = append(p.cut, nil)
			continue
		}
		dims := rowDims(m, o.Shape)
		cut := make([][2]int, len(dims))
		for d, dim := range dims {
			cut[d] = [2]int{-1, -1}
			if dim.Size >= 0 {
				continue
			}
			if a, ok := named[dim.Param]; ok && dim.Param != "" {
				cut[d] = [2]int{a.in, a.ax}
			} else if p.undecided == "" {
				p.undecided = fmt.Sprintf("the output %s's axis %d (%s) is dynamic and shares its name with no dynamic axis of an input", o, d+1, dim)
			}
		}
		p.cut = append(p.cut, cut)
	}
	return p, nil
}

// rowDims are the dims of a row: without the batch axis where the model
// has one.
func rowDims(m *onnx.Model, shape []onnx.Dim) []onnx.Dim {
	if m.Batched() && len(shape) > 0 {
		return shape[1:]
	}
	return shape
}

// paddedShapes returns, per input, the largest row shape of rows, and
// whether any row differs from it.
func paddedShapes(rows [][]nd.Array) ([][]int, bool) {
	out := make([][]int, len(rows[0]))
	ragged := false
	for i := range out {
		s := append([]int(nil), rows[0][i].Shape...)
		for _, r := range rows[1:] {
			if len(r[i].Shape) != len(s) {
				return nil, true // a rank mismatch: Check refuses such rows
			}
			for a, d := range r[i].Shape {
				if d != s[a] {
					ragged = true
					s[a] = max(s[a], d)
				}
			}
		}
		out[i] = s
	}
	return out, ragged
}

// stackPadded stacks the rows of each input into [n, padded...], each row
// at the start of its slot, the rest the input's pad value.
func (p *padPlan) stackPadded(rows [][]nd.Array, shapes [][]int) ([]nd.Array, error) {
	out := make([]nd.Array, len(shapes))
	for i, shape := range shapes {
		t := rows[0][i].Type
		pad := p.pad[i]
		if pad.Type != t {
			var err error
			if pad, err = nd.Convert(pad, t); err != nil {
				return nil, err
			}
		}
		full, err := nd.New(t, append([]int{len(rows)}, shape...)...)
		if err != nil {
			return nil, err
		}
		for k := 0; k+len(pad.Data) <= len(full.Data); k += len(pad.Data) {
			copy(full.Data[k:], pad.Data)
		}
		rowBytes := len(full.Data) / max(1, len(rows))
		for r, row := range rows {
			a := row[i]
			if a.Type != t {
				return nil, fmt.Errorf("input %d: rows of types %v and %v cannot share a batch", i, t, a.Type)
			}
			copyBlock(full.Data[r*rowBytes:(r+1)*rowBytes], shape, a.Data, a.Shape, t.Size(), true)
		}
		out[i] = full
	}
	return out, nil
}

// cutRow cuts a row of output j (its padded shape) back to the sizes of
// the row's inputs on the axes that come from padded ones.
func (p *padPlan) cutRow(j int, a nd.Array, inputs []nd.Array) nd.Array {
	if j >= len(p.cut) || len(p.cut[j]) != len(a.Shape) {
		return a
	}
	shape := append([]int(nil), a.Shape...)
	changed := false
	for d, c := range p.cut[j] {
		if c[0] >= 0 && c[0] < len(inputs) && c[1] < len(inputs[c[0]].Shape) {
			if n := inputs[c[0]].Shape[c[1]]; n < shape[d] {
				shape[d], changed = n, true
			}
		}
	}
	if !changed {
		return a
	}
	n, _ := nd.Numel(shape)
	out := nd.Array{Type: a.Type, Shape: shape, Data: make([]byte, n*a.Type.Size())}
	copyBlock(a.Data, a.Shape, out.Data, shape, a.Type.Size(), false)
	return out
}

// copyBlock copies between a big array (shape big, data bd) and a block
// of it at its origin (shape small, data sd, no larger on any axis): into
// the big array when in, out of it otherwise. Both are C-ordered of
// elements of size elem bytes.
func copyBlock(bd []byte, big []int, sd []byte, small []int, elem int, in bool) {
	rank := len(big)
	if rank == 0 {
		if in {
			copy(bd, sd[:elem])
		} else {
			copy(sd, bd[:elem])
		}
		return
	}
	run := small[rank-1] * elem
	if run == 0 {
		return
	}
	// strides of the big array in bytes
	stride := make([]int, rank)
	stride[rank-1] = elem
	for a := rank - 2; a >= 0; a-- {
		stride[a] = stride[a+1] * big[a+1]
	}
	idx := make([]int, rank-1)
	for so := 0; so < len(sd); so += run {
		bo := 0
		for a, x := range idx {
			bo += x * stride[a]
		}
		if in {
			copy(bd[bo:bo+run], sd[so:so+run])
		} else {
			copy(sd[so:so+run], bd[bo:bo+run])
		}
		for a := rank - 2; a >= 0; a-- {
			idx[a]++
			if idx[a] < small[a] {
				break
			}
			idx[a] = 0
		}
	}
}

// tokens is the size of a row's token input along its dynamic axes (the
// row's tokens), or with shape given, that of the padded shape.
func (p *padPlan) tokenCount(shape []int) int64 {
	if p.tokens < 0 {
		return 0
	}
	n := int64(1)
	for _, a := range p.axes[p.tokens] {
		if a < len(shape) {
			n *= int64(shape[a])
		}
	}
	return n
}

// shapeKey identifies the shapes of a row's inputs.
func shapeKey(row []nd.Array) string {
	var b strings.Builder
	for _, a := range row {
		b.WriteString(nd.ShapeString(a.Shape))
		b.WriteByte(';')
	}
	return b.String()
}
