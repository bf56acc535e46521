package onnx

import (
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/nd"
)

// InstanceNormalization (opsets 1, 6) and GroupNormalization (18, 21).
//
// InstanceNormalization normalises each (image, channel) plane of X (N x C
// x D1 ...) by its own mean and (biased) variance, then scales and shifts
// it by the channel's scale and B ([C] each): Y = (X - mean) / sqrt(var +
// epsilon) * scale + B. Opset 1's consumed_inputs is ignored.
//
// GroupNormalization splits the C channels into num_groups groups and
// normalises each (image, group) by the mean and variance of all its
// channels' values. Opset 18 takes scale and bias per group ([num_groups]:
// a group's channels share them); 21 takes them per channel ([C]) and has
// stash_type (1, float32 or better: the statistics here are computed in
// float64 whatever it says).
//
// The sums run in float64 and the result is rounded to X's type (float32
// X is read and written as it is, float32s); on the
// device groupnorm_f32 (ops_instnorm.cu) computes both, one thread per
// image and group, also in double.

func init() {
	RegisterOp(OpDef{Name: "InstanceNormalization", Versions: []int{1, 6}, New: newInstanceNorm})
	RegisterOp(OpDef{Name: "GroupNormalization", Versions: []int{18, 21}, New: newGroupNorm})
}

// groupNorm is both operators: InstanceNormalization is groups == C with a
// scale per channel.
type groupNorm struct {
	name       string
	epsilon    float64
	groups     int  // 0: one per channel (InstanceNormalization)
	perChannel bool // scale and B per channel (else per group)
}

func newInstanceNorm(n *Node) (Kernel, error) {
	if n.Since == 1 {
		n.Attrs.Ignore("consumed_inputs")
	}
	k := &groupNorm{name: n.Op, epsilon: float64(n.Attrs.Float("epsilon", 1e-5)), perChannel: true}
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	return k, n.Attrs.Err()
}

func newGroupNorm(n *Node) (Kernel, error) {
	a := n.Attrs
	k := &groupNorm{name: n.Op, epsilon: float64(a.Float("epsilon", 1e-5)), perChannel: n.Since >= 21}
	g := a.Int("num_groups", 0)
	if n.Since >= 21 {
		if st := a.Int("stash_type", 1); st != 1 {
			return nil, fmt.Errorf("stash_type %d: only 1 (float32 or better) is supported", st)
		}
	}
	if err := n.CheckArity(3, 3, 1, 1); err != nil {
		return nil, err
	}
	if err := a.Err(); err != nil {
		return nil, err
	}
	if g <= 0 {
		return nil, fmt.Errorf("attribute num_groups is %d: want a positive number of groups", g)
	}
	k.groups = int(g)
	return k, nil
}

// shape checks the inputs' shapes; it returns N, C, the groups and the
// values per channel plane.
func (k *groupNorm) shape(x, scale, b []int) (n, c, groups, inner int, err error) {
	if len(x) < 2 {
		return 0, 0, 0, 0, fmt.Errorf("input X has shape %s: want N x C [x D1 ...]", nd.ShapeString(x))
	}
	n, c, inner = x[0], x[1], numel(x[2:])
	groups = k.groups
	if groups == 0 {
		groups = c
	}
	if c%groups != 0 {
		return 0, 0, 0, 0, fmt.Errorf("input X has %d channels, not a multiple of num_groups %d", c, groups)
	}
	want := c
	if !k.perChannel {
		want = groups
	}
	for i, s := range [][]int{scale, b} {
		if len(s) != 1 || s[0] != want {
			return 0, 0, 0, 0, fmt.Errorf("input %s has shape %s, want [%d]", []string{"scale", "B"}[i], nd.ShapeString(s), want)
		}
	}
	return n, c, groups, inner, nil
}

func (k *groupNorm) Infer(in []Meta) ([]Meta, error) {
	x := in[0]
	if x.Type != nd.Float32 && x.Type != nd.Float64 {
		return nil, fmt.Errorf("input X is %v: %s takes float32 or float64", x.Type, k.name)
	}
	if in[1].Type != x.Type || in[2].Type != x.Type {
		return nil, sameTypeErr([]string{"X", "scale", "B"}, in[0], in[1], in[2])
	}
	if _, _, _, _, err := k.shape(x.Shape, in[1].Shape, in[2].Shape); err != nil {
		return nil, err
	}
	return []Meta{{Type: x.Type, Shape: x.Shape}}, nil
}

func (k *groupNorm) Run(in, out []nd.Array) error {
	x := in[0]
	n, c, groups, inner, err := k.shape(x.Shape, in[1].Shape, in[2].Shape)
	if err != nil {
		return err
	}
	if x.Type == nd.Float32 {
		k.float32s(nd.MustAs[float32](x), nd.Float64s(in[1]), nd.Float64s(in[2]), nd.MustAs[float32](out[0]), n, c, groups, inner)
		return nil
	}
	xs, scale, bias := nd.Float64s(x), nd.Float64s(in[1]), nd.Float64s(in[2])
	ys := make([]float64, len(xs))
	per := c / groups // channels per group
	size := per * inner
	parallel.For(n*groups, 3*size, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			g := t % groups
			v := xs[t*size : (t+1)*size]
			var sum float64
			for _, e := range v {
				sum += e
			}
			mean := sum / float64(len(v))
			var sq float64
			for _, e := range v {
				d := e - mean
				sq += d * d
			}
			inv := 1 / math.Sqrt(sq/float64(len(v))+k.epsilon)
			y := ys[t*size : (t+1)*size]
			for j := range per {
				p := g
				if k.perChannel {
					p = g*per + j
				}
				a, b := scale[p]*inv, bias[p]
				for i := j * inner; i < (j+1)*inner; i++ {
					y[i] = (v[i]-mean)*a + b
				}
			}
		}
	})
	nd.ConvertInto(out[0], nd.Of(ys, x.Shape...))
	return nil
}

// float32s is Run for float32 X, reading and writing float32 in place of
// converting all of X to float64 and back: the same float64 arithmetic per
// element (on vector kernels where there are some), the sums in running
// float64 partial sums.
func (k *groupNorm) float32s(xs []float32, scale, bias []float64, ys []float32, n, c, groups, inner int) {
	per := c / groups // channels per group
	size := per * inner
	parallel.For(n*groups, 3*size, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			g := t % groups
			v := xs[t*size : (t+1)*size]
			mean := sum4(v) / float64(len(v))
			inv := 1 / math.Sqrt(sqDev4(v, mean)/float64(len(v))+k.epsilon)
			y := ys[t*size : (t+1)*size]
			for j := range per {
				p := g
				if k.perChannel {
					p = g*per + j
				}
				a, b := scale[p]*inv, bias[p]
				vj, yj := v[j*inner:(j+1)*inner], y[j*inner:(j+1)*inner]
				for i := affineVec(yj, vj, mean, a, b); i < len(vj); i++ {
					yj[i] = float32((float64(vj[i])-mean)*a + b)
				}
			}
		}
	})
}

// sum4 is Σ v in float64: the whole vectors on sumVec's kernel (eight
// partial sums), the rest (all of v without a kernel) in four partial
// sums.
func sum4(v []float32) float64 {
	s0, i := sumVec(v)
	var s1, s2, s3 float64
	for ; i+4 <= len(v); i += 4 {
		s0 += float64(v[i])
		s1 += float64(v[i+1])
		s2 += float64(v[i+2])
		s3 += float64(v[i+3])
	}
	for ; i < len(v); i++ {
		s0 += float64(v[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sqDev4 is Σ (v - mean)² in float64: the whole vectors on sqDevVec's
// kernel, the rest in four partial sums, as sum4.
func sqDev4(v []float32, mean float64) float64 {
	s0, i := sqDevVec(v, mean)
	var s1, s2, s3 float64
	for ; i+4 <= len(v); i += 4 {
		d0, d1, d2, d3 := float64(v[i])-mean, float64(v[i+1])-mean, float64(v[i+2])-mean, float64(v[i+3])-mean
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(v); i++ {
		d := float64(v[i]) - mean
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}
