package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9): interpolation of
// an N-dimensional array, nearest (every nearest_mode), linear or cubic
// (cubic_coeff_a, exclude_outside), with every
// coordinate_transformation_mode (half_pixel, half_pixel_symmetric,
// pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn,
// tf_crop_and_resize with roi and extrapolation_value), to scales or to
// sizes, with antialias, axes and keep_aspect_ratio_policy (18).
//
// The interpolation is separable: the runtime resizes one axis at a time
// (an axis whose mapping is the identity not at all), the axes that shrink
// first so that no intermediate is larger than the input or the output.
// For each output coordinate of an axis, resizeAxis.taps gives the input
// coordinates and weights that ONNX's reference implementation
// (onnx/reference/ops/op_resize.py) gives it, and the device kernel
// (ops_resize.cu) computes the same from the same parameters. Where that
// reference and the specification's text differ, the specification and
// ONNX Runtime are followed: pytorch_half_pixel maps an output of length 1
// to 0, and an output size from scales is floor(in x scale) computed in
// float32 (without roi). Resize 10 and Upsample are asymmetric; their
// nearest rounds down when enlarging and up when shrinking, as ONNX
// Runtime does.
//
// Nearest moves elements of any type; linear and cubic take float32 and
// float64, sums in float64.

func init() {
	RegisterOp(OpDef{Name: "Resize", Versions: []int{10, 11, 13, 18, 19}, New: newResize})
	RegisterOp(OpDef{Name: "Upsample", Versions: []int{7, 9}, New: newUpsample})
}

// Interpolation modes, coordinate transformations and nearest modes, in the
// order of ops_resize.cu's enums.
const (
	rsNearest = iota
	rsLinear
	rsCubic
)

const (
	ctHalfPixel = iota
	ctHalfPixelSymmetric
	ctPytorchHalfPixel
	ctAlignCorners
	ctAsymmetric
	ctTFHalfPixelForNN
	ctTFCropAndResize
)

const (
	nmRoundPreferFloor = iota
	nmRoundPreferCeil
	nmFloor
	nmCeil
	nmSimple // Resize 10's and Upsample's: floor enlarging, ceil shrinking
)

var (
	resizeModes  = []string{"nearest", "linear", "cubic"}
	coordModes   = []string{"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"}
	nearestModes = []string{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}
)

type resize struct {
	op                  string
	mode, coord, near   int
	cubicA, extrapolate float64
	excludeOutside      bool
	antialias           bool
	axes                []int64 // nil: all
	policy              string  // keep_aspect_ratio_policy
	// scalesAttr is Upsample 7's scales; in the indices of the inputs.
	scalesAttr               []float32
	roiIn, scalesIn, sizesIn int // -1: the version has no such input
	upsample                 bool
}

func newResize(n *Node) (Kernel, error) {
	a := n.Attrs
	r := &resize{op: "Resize", cubicA: -0.75, near: nmSimple, coord: ctAsymmetric, roiIn: -1, scalesIn: 1, sizesIn: -1, policy: "stretch"}
	if n.Since == 10 {
		if err := n.CheckArity(2, 2, 1, 1); err != nil {
			return nil, err
		}
		r.mode = oneOfIndex(a, "mode", "nearest", resizeModes[:2])
		return r, a.Err()
	}
	min := 3
	if n.Since >= 13 {
		min = 1
	}
	if err := n.CheckArity(min, 4, 1, 1); err != nil {
		return nil, err
	}
	r.roiIn, r.scalesIn, r.sizesIn = 1, 2, 3
	r.mode = oneOfIndex(a, "mode", "nearest", resizeModes)
	// The modes of the version: half_pixel_symmetric from 19,
	// tf_half_pixel_for_nn before 13.
	coords := slices.Clone(coordModes)
	if n.Since < 19 {
		coords[ctHalfPixelSymmetric] = ""
	}
	if n.Since >= 13 {
		coords[ctTFHalfPixelForNN] = ""
	}
	r.coord = oneOfIndex(a, "coordinate_transformation_mode", "half_pixel", coords)
	r.near = oneOfIndex(a, "nearest_mode", "round_prefer_floor", nearestModes)
	r.cubicA = float64(a.Float("cubic_coeff_a", -0.75))
	r.excludeOutside = a.Flag("exclude_outside", false)
	r.extrapolate = float64(a.Float("extrapolation_value", 0))
	if n.Since >= 18 {
		r.antialias = a.Flag("antialias", false)
		if v, ok := a.Ints("axes"); ok {
			r.axes = v
		}
		r.policy = a.String("keep_aspect_ratio_policy", "stretch")
		a.OneOf("keep_aspect_ratio_policy", r.policy, "stretch", "not_larger", "not_smaller")
	}
	return r, a.Err()
}

func newUpsample(n *Node) (Kernel, error) {
	a := n.Attrs
	r := &resize{op: "Upsample", cubicA: -0.75, near: nmSimple, coord: ctAsymmetric, roiIn: -1, scalesIn: 1, sizesIn: -1, upsample: true, policy: "stretch"}
	if n.Since < 9 {
		if err := n.CheckArity(1, 1, 1, 1); err != nil {
			return nil, err
		}
		s, ok := a.Floats("scales")
		if !ok {
			a.Fail("attribute scales is required")
		}
		r.scalesAttr, r.scalesIn = s, -1
	} else if err := n.CheckArity(2, 2, 1, 1); err != nil {
		return nil, err
	}
	r.mode = oneOfIndex(a, "mode", "nearest", resizeModes[:2])
	return r, a.Err()
}

// oneOfIndex reads the string attribute name (def when not set) as its index
// in allowed ("" entries are not allowed).
func oneOfIndex(a *Attrs, name, def string, allowed []string) int {
	v := a.String(name, def)
	for i, s := range allowed {
		if s != "" && s == v {
			return i
		}
	}
	var ok []string
	for _, s := range allowed {
		if s != "" {
			ok = append(ok, s)
		}
	}
	a.Fail("attribute %s is %q, want one of %q", name, v, ok)
	return 0
}

// resizeAxis is one axis of a resize: its lengths, the scale its
// coordinates are mapped with, its roi.
type resizeAxis struct {
	in, out      int
	scale        float64
	roiLo, roiHi float64
}

// resizePlan is a resize of a shape: every axis, and those to resize in
// the order they are resized.
type resizePlan struct {
	axes  []resizeAxis
	order []int
}

// plan reads the scales, sizes and roi (known before the run) and gives the
// output's shape and the axes to resize.
func (r *resize) plan(in []Meta) (resizePlan, error) {
	x := in[0]
	rank := len(x.Shape)
	var p resizePlan
	p.axes = make([]resizeAxis, rank)
	for i, d := range x.Shape {
		p.axes[i] = resizeAxis{in: d, out: d, scale: 1, roiLo: 0, roiHi: 1}
	}
	axes := make([]int, rank)
	for i := range axes {
		axes[i] = i
	}
	if r.axes != nil {
		var err error
		if axes, err = NormAxes(r.axes, rank); err != nil {
			return p, fmt.Errorf("attribute axes: %w", err)
		}
	}
	// roi: starts then ends of the axes.
	if r.roiIn >= 0 && r.coord == ctTFCropAndResize && r.roiIn < len(in) && in[r.roiIn].Type != nd.Undefined && numel(in[r.roiIn].Shape) > 0 {
		roi := in[r.roiIn]
		if roi.Value == nil {
			return p, NeedValue(r.roiIn)
		}
		if !roi.Type.IsFloat() {
			return p, fmt.Errorf("input roi is %v, want float", roi.Type)
		}
		v := nd.Float64s(*roi.Value)
		if len(v) != 2*len(axes) {
			return p, fmt.Errorf("input roi has %d values, want %d (starts, then ends, of %d axes)", len(v), 2*len(axes), len(axes))
		}
		for j, a := range axes {
			p.axes[a].roiLo, p.axes[a].roiHi = v[j], v[len(axes)+j]
		}
	}
	var scales []float64
	var sizes []int64
	switch {
	case r.scalesAttr != nil:
		for _, s := range r.scalesAttr {
			scales = append(scales, float64(s))
		}
	default:
		if r.scalesIn < len(in) && in[r.scalesIn].Type != nd.Undefined && numel(in[r.scalesIn].Shape) > 0 {
			s := in[r.scalesIn]
			if s.Value == nil {
				return p, NeedValue(r.scalesIn)
			}
			if s.Type != nd.Float32 {
				return p, fmt.Errorf("input scales is %v, want float32", s.Type)
			}
			for _, v := range nd.MustAs[float32](*s.Value) {
				scales = append(scales, float64(v))
			}
		}
		if r.sizesIn >= 0 && r.sizesIn < len(in) && in[r.sizesIn].Type != nd.Undefined && numel(in[r.sizesIn].Shape) > 0 {
			var err error
			if sizes, err = KnownInts(in, r.sizesIn, "input sizes"); err != nil {
				return p, err
			}
		}
	}
	switch {
	case scales != nil && sizes != nil:
		return p, fmt.Errorf("both scales and sizes are given: want one")
	case scales == nil && sizes == nil:
		return p, fmt.Errorf("neither scales nor sizes is given: want one")
	case scales != nil:
		shown := make([]float32, len(scales)) // as the model holds them
		for i, v := range scales {
			shown[i] = float32(v)
		}
		if len(scales) != len(axes) {
			return p, fmt.Errorf("scales has %d values for %d axes (X %s)", len(scales), len(axes), nd.ShapeString(x.Shape))
		}
		for j, a := range axes {
			s := scales[j]
			if !(s > 0) || math.IsInf(s, 0) {
				return p, fmt.Errorf("scales %v: each must be positive and finite", shown)
			}
			if r.upsample && s < 1 {
				return p, fmt.Errorf("scales %v: Upsample's must be at least 1", shown)
			}
			// floor(in x scale), in float32 as ONNX Runtime computes it.
			o := math.Floor(float64(float32(p.axes[a].in) * float32(s)))
			if o > nd.MaxElements {
				return p, fmt.Errorf("scales %v: axis %d would have %g elements (X %s)", shown, a, o, nd.ShapeString(x.Shape))
			}
			p.axes[a].out, p.axes[a].scale = int(o), s
		}
	default:
		if len(sizes) != len(axes) {
			return p, fmt.Errorf("sizes has %d values for %d axes (X %s)", len(sizes), len(axes), nd.ShapeString(x.Shape))
		}
		for _, s := range sizes {
			if s < 0 || s > nd.MaxElements {
				return p, fmt.Errorf("sizes %v: each must be 0 or more and at most %d", sizes, int64(nd.MaxElements))
			}
		}
		if r.policy == "stretch" {
			for j, a := range axes {
				ax := &p.axes[a]
				ax.out = int(sizes[j])
				ax.scale = float64(ax.out) / float64(ax.in)
			}
			break
		}
		scale := math.Inf(1)
		if r.policy == "not_smaller" {
			scale = math.Inf(-1)
		}
		for j, a := range axes {
			s := float64(sizes[j]) / float64(p.axes[a].in)
			if r.policy == "not_larger" {
				scale = math.Min(scale, s)
			} else {
				scale = math.Max(scale, s)
			}
		}
		for _, a := range axes {
			ax := &p.axes[a]
			o := math.Floor(scale*float64(ax.in) + 0.5)
			if o > nd.MaxElements {
				return p, fmt.Errorf("sizes %v with keep_aspect_ratio_policy %s: axis %d would have %g elements", sizes, r.policy, a, o)
			}
			ax.out, ax.scale = int(o), scale
		}
	}
	if _, err := nd.Numel(p.outShape()); err != nil {
		return p, fmt.Errorf("the output would have shape %s: over %d elements", nd.ShapeString(p.outShape()), int64(nd.MaxElements))
	}
	for a := range p.axes {
		ax := p.axes[a]
		if ax.out > 0 && ax.in == 0 {
			return p, fmt.Errorf("axis %d of X is empty and cannot be resized to %d", a, ax.out)
		}
		if !r.identity(ax) {
			p.order = append(p.order, a)
		}
	}
	// The axes that shrink first: no intermediate is larger than X or Y.
	slices.SortStableFunc(p.order, func(i, j int) int {
		ri := float64(p.axes[i].out) / float64(p.axes[i].in)
		rj := float64(p.axes[j].out) / float64(p.axes[j].in)
		switch {
		case ri < rj:
			return -1
		case ri > rj:
			return 1
		}
		return 0
	})
	return p, nil
}

func (p resizePlan) outShape() []int {
	out := make([]int, len(p.axes))
	for i, a := range p.axes {
		out[i] = a.out
	}
	return out
}

// identity reports whether an axis maps each output coordinate to the
// input coordinate of the same index, with weight 1.
func (r *resize) identity(ax resizeAxis) bool {
	if ax.in != ax.out || ax.out == 0 {
		return ax.out == 0 && ax.in == 0
	}
	var w []float64
	for o := range ax.out {
		first, n, ww, outside := r.taps(ax, o, w)
		w = ww
		if outside || n != 1 && !(r.mode != rsNearest && singleTap(ww[:n], first, o)) || n == 1 && first != o {
			return false
		}
	}
	return true
}

// singleTap reports whether the taps from first are weight 1 at want and 0
// elsewhere.
func singleTap(w []float64, first, want int) bool {
	for j, v := range w {
		if (first+j == want && v != 1) || (first+j != want && v != 0) {
			return false
		}
	}
	return true
}

func (r *resize) Infer(in []Meta) ([]Meta, error) {
	x := in[0]
	if r.mode != rsNearest && !x.Type.IsFloat() {
		return nil, fmt.Errorf("input X is %v: %s %s takes float32 or float64", x.Type, r.op, resizeModes[r.mode])
	}
	if !isNumeric(x.Type) && x.Type != nd.Bool {
		return nil, fmt.Errorf("input X is %v: %s takes numbers or booleans", x.Type, r.op)
	}
	p, err := r.plan(in)
	if err != nil {
		return nil, err
	}
	return []Meta{{Type: x.Type, Shape: p.outShape()}}, nil
}

// original maps output coordinate o of an axis to the input's (ONNX's
// coordinate_transformation_mode; outF is the output's length before
// flooring, scale x in).
func (r *resize) original(ax resizeAxis, o int) float64 {
	x, s := float64(o), ax.scale
	inF := float64(ax.in)
	outF := s * inF
	switch r.coord {
	case ctHalfPixel:
		return (x+0.5)/s - 0.5
	case ctHalfPixelSymmetric:
		adj := float64(ax.out) / outF
		center := inF / 2
		off := center * (1 - adj)
		return off + (x+0.5)/s - 0.5
	case ctPytorchHalfPixel:
		if ax.out <= 1 {
			return 0
		}
		return (x+0.5)/s - 0.5
	case ctAlignCorners:
		if outF == 1 {
			return 0
		}
		return x * (inF - 1) / (outF - 1)
	case ctTFHalfPixelForNN:
		return (x + 0.5) / s
	case ctTFCropAndResize:
		var v float64
		if outF == 1 {
			v = (ax.roiHi - ax.roiLo) * (inF - 1) / 2
		} else {
			v = x * (ax.roiHi - ax.roiLo) * (inF - 1) / (outF - 1)
		}
		return v + ax.roiLo*(inF-1)
	default: // asymmetric
		return x / s
	}
}

// taps gives output coordinate o's input coordinates, first to first+n-1
// (clamped to the axis when read: ONNX pads with the edge), and their
// weights in w (grown as needed; nearest: none, one tap); outside when the
// coordinate is outside the input under tf_crop_and_resize (the output is
// extrapolation_value).
func (r *resize) taps(ax resizeAxis, o int, w []float64) (first, n int, _ []float64, outside bool) {
	x := r.original(ax, o)
	if r.coord == ctTFCropAndResize && (x < 0 || x > float64(ax.in-1)) {
		return 0, 0, w, true
	}
	x0 := math.Floor(x)
	ratio := x - x0
	if r.mode == rsNearest {
		i := int(x0)
		if ratio != 0 {
			switch r.near {
			case nmRoundPreferFloor:
				if ratio > 0.5 {
					i++
				}
			case nmRoundPreferCeil:
				if ratio >= 0.5 {
					i++
				}
			case nmCeil:
				i++
			case nmSimple:
				if ax.scale < 1 {
					i++
				}
			}
		}
		return i, 1, w, false
	}
	// As the reference: the taps are the n input coordinates nearest x (the
	// lower ones on a tie), weighted by the kernel at (tap - x) x scale.
	support := 1.0
	if r.mode == rsCubic {
		support = 2
	}
	s := 1.0
	if r.antialias && ax.scale < 1 {
		s = ax.scale
	}
	start := int(math.Floor(-support/s)) + 1
	n = 2 - 2*start
	first = int(x0) + start
	if ratio == 0 {
		first--
	}
	w = slices.Grow(w[:0], n)[:n]
	sum := 0.0
	for j := range w {
		d := (float64(first+j) - x) * s
		if r.mode == rsCubic {
			w[j] = cubicWeight(d, r.cubicA)
		} else {
			w[j] = max(0, 1-math.Abs(d))
		}
		sum += w[j]
	}
	if s != 1 {
		for j := range w {
			w[j] /= sum
		}
	}
	if r.excludeOutside {
		sum = 0
		for j := range w {
			if i := first + j; i < 0 || i >= ax.in {
				w[j] = 0
			}
			sum += w[j]
		}
		for j := range w {
			w[j] /= sum
		}
	}
	return first, n, w, false
}

// cubicWeight is the cubic convolution kernel of coefficient a at distance
// d (Keys).
func cubicWeight(d, a float64) float64 {
	d = math.Abs(d)
	d2 := d * d
	d3 := d * d2
	switch {
	case d <= 1:
		return (a+2)*d3 - (a+3)*d2 + 1
	case d < 2:
		return a*d3 - 5*a*d2 + 8*a*d - 4*a
	}
	return 0
}

// axisTable is an axis's taps for every output coordinate, n of them each:
// output o reads idx[o*n:(o+1)*n] (clamped) with weights w at the same
// places (nearest: n is 1 and w is nil); ext[o] marks an output that is
// extrapolation_value (tf_crop_and_resize outside the input).
type axisTable struct {
	n   int
	idx []int
	w   []float64
	ext []bool
}

func (r *resize) table(ax resizeAxis) axisTable {
	t := axisTable{ext: make([]bool, ax.out)}
	var w []float64
	for o := range ax.out {
		first, n, ww, outside := r.taps(ax, o, w)
		w = ww
		if outside {
			t.ext[o] = true
			continue
		}
		if t.n == 0 {
			t.n = n
			t.idx = make([]int, ax.out*n)
			if r.mode != rsNearest {
				t.w = make([]float64, ax.out*n)
			}
		}
		for j := range n {
			t.idx[o*n+j] = min(max(first+j, 0), ax.in-1)
			if t.w != nil {
				t.w[o*n+j] = ww[j]
			}
		}
	}
	if t.n == 0 { // every output extrapolated
		t.n = 1
		t.idx = make([]int, ax.out)
		if r.mode != rsNearest {
			t.w = make([]float64, ax.out)
		}
	}
	return t
}

func (r *resize) Run(in, out []nd.Array) error {
	p, err := r.plan(ValueMetas(in))
	if err != nil {
		return err
	}
	x, y := in[0], out[0]
	if numel(y.Shape) == 0 {
		return nil
	}
	if len(p.order) == 0 {
		copy(y.Data, x.Data)
		return nil
	}
	if r.mode == rsNearest {
		r.nearest(p, x, y)
		return nil
	}
	f, err := floating[resizeLoop](r.op, x.Type)
	if err != nil {
		return err
	}
	f.resize(r, p, x, y)
	return nil
}

// nearest resizes in one pass, any element type: each output row (the
// last axis) reads the input row its other coordinates map to, through the
// last axis's table.
func (r *resize) nearest(p resizePlan, x, y nd.Array) {
	size := x.Type.Size()
	fill := make([]byte, size)
	if r.coord == ctTFCropAndResize {
		if v, err := nd.Convert(nd.Of([]float64{r.extrapolate}), x.Type); err == nil {
			copy(fill, v.Data)
		}
	}
	switch size {
	case 1:
		resizeNearest(r, p, words[uint8](x.Data), words[uint8](y.Data), words[uint8](fill)[0])
	case 2:
		resizeNearest(r, p, words[uint16](x.Data), words[uint16](y.Data), words[uint16](fill)[0])
	case 4:
		resizeNearest(r, p, words[uint32](x.Data), words[uint32](y.Data), words[uint32](fill)[0])
	default:
		resizeNearest(r, p, words[uint64](x.Data), words[uint64](y.Data), words[uint64](fill)[0])
	}
}

func resizeNearest[E word](r *resize, p resizePlan, x, y []E, fill E) {
	rank := len(p.axes)
	tables := make([]axisTable, rank)
	for a, ax := range p.axes {
		tables[a] = r.table(ax)
	}
	inSt := Strides(p.outShapeIn())
	last := p.axes[rank-1]
	lt := tables[rank-1]
	anyExt := slices.Contains(lt.ext, true)
	rep := repeats(lt.idx, last.in, last.out)
	rows := numel(p.outShape()[:rank-1])
	parallel.For(rows, last.out, func(lo, hi int) {
		coord := make([]int, rank)
		prevOff, prevOutside := -1, false
		for row := lo; row < hi; row++ {
			dst := y[row*last.out : (row+1)*last.out]
			off, outside := 0, false
			for a, rem := rank-2, row; a >= 0; a-- {
				n := p.axes[a].out
				coord[a], rem = rem%n, rem/n
				if tables[a].ext[coord[a]] {
					outside = true
				}
				off += tables[a].idx[coord[a]] * inSt[a]
			}
			switch {
			case outside:
				fillWords(dst, fill)
			case off == prevOff && !prevOutside:
				// The row before read the same input row (an
				// enlarged axis): the same output.
				copy(dst, y[(row-1)*last.out:row*last.out])
			case anyExt:
				src := x[off : off+last.in]
				for o := range dst {
					if lt.ext[o] {
						dst[o] = fill
					} else {
						dst[o] = src[lt.idx[o]]
					}
				}
			case rep == 2: // Upsample's and an FPN's 2x: each input twice
				src := x[off : off+last.in]
				dst = dst[:2*len(src)]
				for i, v := range src {
					dst[2*i], dst[2*i+1] = v, v
				}
			case rep > 0:
				src := x[off : off+last.in]
				for i, v := range src {
					fillWords(dst[i*rep:(i+1)*rep], v)
				}
			default:
				src := x[off : off+last.in]
				idx := lt.idx[:len(dst)]
				for o, i := range idx {
					dst[o] = src[i]
				}
			}
			prevOff, prevOutside = off, outside
		}
	})
}

// repeats returns s where the last axis's table reads each of in inputs
// s times in turn (out = s in, idx[o] = o/s: nearest by an integer
// scale), else 0.
func repeats(idx []int, in, out int) int {
	if in == 0 || out%in != 0 || out < 2*in || len(idx) < out {
		return 0
	}
	s := out / in
	for o, i := range idx[:out] {
		if i != o/s {
			return 0
		}
	}
	return s
}

// outShapeIn is the input's shape.
func (p resizePlan) outShapeIn() []int {
	in := make([]int, len(p.axes))
	for i, a := range p.axes {
		in[i] = a.in
	}
	return in
}

// resizePasses runs pass once per axis to resize, from x to y through
// intermediates (scratch from get): pass(a, src, dst, shape) resizes axis
// a of src (shape) into dst.
func resizePasses[T any](p resizePlan, x, y []T, get func(n int) ([]T, func()), pass func(a int, src, dst []T, shape []int)) {
	cur := p.outShapeIn()
	src := x
	var release func()
	for k, a := range p.order {
		next := slices.Clone(cur)
		next[a] = p.axes[a].out
		dst, done := y, func() {}
		if k < len(p.order)-1 {
			dst, done = get(numel(next))
		}
		pass(a, src, dst, cur)
		if release != nil {
			release()
		}
		src, cur, release = dst, next, done
	}
}

// splitAt gives the elements before axis a, and after it, of shape.
func splitAt(shape []int, a int) (outer, inner int) {
	return numel(shape[:a]), numel(shape[a+1:])
}

type resizeLoop interface {
	resize(r *resize, p resizePlan, x, y nd.Array)
}

func (floats[T]) resize(r *resize, p resizePlan, x, y nd.Array) {
	resizeInterp(r, p, nd.MustAs[T](x), nd.MustAs[T](y))
}

// scratchOf returns n Ts of scratch (float32s from the package's pool) and
// the function that gives them back.
func scratchOf[T floatElem](n int) ([]T, func()) {
	var z T
	if _, ok := any(z).(float32); ok {
		b := getFloats(n)
		return any(*b).([]T), func() { putFloats(b) }
	}
	return make([]T, n), func() {}
}

// interpRows writes output row o of an axis that is not the last (rows
// of len(d) values; base: the input's rows of the same outer index) from
// t's taps: two of weights both non-zero as one loop, else a sum in
// float64 of the taps of non-zero weight (acc: its scratch).
func interpRows[T floatElem](d, base []T, t *axisTable, o int, e T, acc *[]float64) {
	inner, n := len(d), t.n
	if t.ext[o] {
		fillCopies(d, e)
		return
	}
	idx, w := t.idx[o*n:(o+1)*n], t.w[o*n:(o+1)*n]
	if n == 2 && w[0] != 0 && w[1] != 0 {
		r0, r1 := base[idx[0]*inner:][:inner], base[idx[1]*inner:][:inner]
		w0, w1 := w[0], w[1]
		for q := range d {
			d[q] = T(w0*float64(r0[q]) + w1*float64(r1[q]))
		}
		return
	}
	if *acc == nil {
		*acc = make([]float64, inner)
	}
	a := (*acc)[:inner]
	clear(a)
	for j, i := range idx {
		wj := w[j]
		if wj == 0 {
			continue
		}
		row := base[i*inner : (i+1)*inner]
		for q, v := range row {
			a[q] += wj * float64(v)
		}
	}
	for q := range d {
		d[q] = T(a[q])
	}
}

// taps2 is the last axis's table of two taps, split: outputs with both
// weights non-zero in i0, i1, w0 and w1, the others (extrapolated, or a
// tap of weight 0, which is not read) listed in special.
//
// For the vector kernel, the outputs in blocks of 8: where a block's taps
// lie within 8 consecutive inputs from base[block] (an enlarged axis),
// l0 and l1 are their lanes there (the special outputs' lane 0), and the
// kernel loads the 8 and permutes them; else base[block] is -1 and it
// gathers the taps.
type taps2 struct {
	t       axisTable
	i0, i1  []int32
	w0, w1  []float64
	special []int
	base    []int32
	l0, l1  []int32
}

func newTaps2(t axisTable, in, out int) taps2 {
	tp := taps2{t: t, i0: make([]int32, out), i1: make([]int32, out), w0: make([]float64, out), w1: make([]float64, out)}
	isSpecial := make([]bool, out)
	for o := range out {
		if t.ext[o] || t.w[2*o] == 0 || t.w[2*o+1] == 0 {
			tp.special = append(tp.special, o)
			isSpecial[o] = true
			continue
		}
		tp.i0[o], tp.i1[o], tp.w0[o], tp.w1[o] = int32(t.idx[2*o]), int32(t.idx[2*o+1]), t.w[2*o], t.w[2*o+1]
	}
	tp.base, tp.l0, tp.l1 = make([]int32, out/8), make([]int32, out), make([]int32, out)
	for k := range tp.base {
		lo, hi := int32(math.MaxInt32), int32(-1)
		for o := 8 * k; o < 8*k+8; o++ {
			if !isSpecial[o] {
				lo, hi = min(lo, tp.i0[o], tp.i1[o]), max(hi, tp.i0[o], tp.i1[o])
			}
		}
		if hi < 0 { // all special
			lo, hi = 0, 0
		}
		b := min(lo, int32(in)-8)
		if b < 0 || hi-b >= 8 {
			tp.base[k] = -1
			continue
		}
		tp.base[k] = b
		for o := 8 * k; o < 8*k+8; o++ {
			if !isSpecial[o] {
				tp.l0[o], tp.l1[o] = tp.i0[o]-b, tp.i1[o]-b
			}
		}
	}
	return tp
}

// taps2Row writes output row d of input row row: float32's in whole
// vectors by resizeTaps2Vec, the rest (and float64's) by resizeTaps2,
// then the special outputs.
func taps2Row[T floatElem](tp *taps2, d, row []T, e T) {
	done := 0
	if vec, ok := any(resizeTaps2Vec).(func(d, row []T, tp *taps2) int); ok {
		done = vec(d, row, tp)
	}
	resizeTaps2(d[done:], row, tp.i0[done:], tp.i1[done:], tp.w0[done:], tp.w1[done:])
	t := &tp.t
	for _, o := range tp.special {
		switch {
		case t.ext[o]:
			d[o] = e
		case t.w[2*o] != 0:
			d[o] = T(t.w[2*o] * float64(row[t.idx[2*o]]))
		case t.w[2*o+1] != 0:
			d[o] = T(t.w[2*o+1] * float64(row[t.idx[2*o+1]]))
		default:
			d[o] = 0
		}
	}
}

// resizeLastTwo is resizeInterp where the passes are the last two axes,
// the one before the last first and the last of two taps (a feature map's
// H and W, linear): each output row's intermediate row (the first pass's,
// in a buffer of one row) and then the row itself, as the two passes
// compute them, without the intermediate array. It reports whether p is
// such a resize.
func resizeLastTwo[T floatElem](r *resize, p resizePlan, x, y []T) bool {
	rank := len(p.axes)
	if len(p.order) != 2 || p.order[0] != rank-2 || p.order[1] != rank-1 {
		return false
	}
	ah, aw := p.axes[rank-2], p.axes[rank-1]
	tw := r.table(aw)
	if tw.n != 2 || aw.in > math.MaxInt32 {
		return false
	}
	th := r.table(ah)
	tp := newTaps2(tw, aw.in, aw.out)
	e := T(r.extrapolate)
	planes := numel(p.outShapeIn()[:rank-2])
	parallel.For(planes*ah.out, aw.in*th.n+aw.out*2, func(lo, hi int) {
		mid := make([]T, aw.in)
		var acc []float64
		for k := lo; k < hi; k++ {
			o, ob := k%ah.out, k/ah.out
			interpRows(mid, x[ob*ah.in*aw.in:], &th, o, e, &acc)
			taps2Row(&tp, y[k*aw.out:(k+1)*aw.out], mid, e)
		}
	})
	return true
}

// resizeTaps2 computes each output d[o] of two taps, row[i0[o]] and
// row[i1[o]] of weights w0[o] and w1[o], summed in float64.
func resizeTaps2[T floatElem](d, row []T, i0, i1 []int32, w0, w1 []float64) {
	i0, i1, w0, w1 = i0[:len(d)], i1[:len(d)], w0[:len(d)], w1[:len(d)]
	for o := range d {
		d[o] = T(w0[o]*float64(row[i0[o]]) + w1[o]*float64(row[i1[o]]))
	}
}

// resizeInterp resizes linearly or cubically, axis by axis, each output
// value a sum in float64 of its taps (a tap of weight 0 is not read): the
// last two axes of a feature map row by row (resizeLastTwo), else a pass
// per axis.
func resizeInterp[T floatElem](r *resize, p resizePlan, x, y []T) {
	if !resizeLastTwo(r, p, x, y) {
		resizeByPasses(r, p, x, y)
	}
}

// resizeByPasses is resizeInterp one pass per axis, through intermediate
// arrays.
func resizeByPasses[T floatElem](r *resize, p resizePlan, x, y []T) {
	e := T(r.extrapolate)
	resizePasses(p, x, y, scratchOf[T], func(a int, src, dst []T, shape []int) {
		outer, inner := splitAt(shape, a)
		ax := p.axes[a]
		t := r.table(ax)
		n := t.n
		if inner == 1 && n == 2 && ax.in <= math.MaxInt32 { // the last axis, two taps
			tp := newTaps2(t, ax.in, ax.out)
			parallel.For(outer, ax.out*n, func(lo, hi int) {
				for ob := lo; ob < hi; ob++ {
					taps2Row(&tp, dst[ob*ax.out:(ob+1)*ax.out], src[ob*ax.in:(ob+1)*ax.in], e)
				}
			})
			return
		}
		if inner == 1 { // the last axis: a row of outputs per task item
			parallel.For(outer, ax.out*n, func(lo, hi int) {
				for ob := lo; ob < hi; ob++ {
					row, d := src[ob*ax.in:(ob+1)*ax.in], dst[ob*ax.out:(ob+1)*ax.out]
					for o := range d {
						if t.ext[o] {
							d[o] = e
							continue
						}
						s := 0.0
						for j := o * n; j < (o+1)*n; j++ {
							if w := t.w[j]; w != 0 {
								s += w * float64(row[t.idx[j]])
							}
						}
						d[o] = T(s)
					}
				}
			})
			return
		}
		parallel.For(outer*ax.out, inner*n, func(lo, hi int) {
			var acc []float64
			for k := lo; k < hi; k++ {
				o, ob := k%ax.out, k/ax.out
				interpRows(dst[k*inner:(k+1)*inner], src[ob*ax.in*inner:], &t, o, e, &acc)
			}
		})
	})
}
