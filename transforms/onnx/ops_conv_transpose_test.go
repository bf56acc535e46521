package onnx_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// convTransposeCase is one random ConvTranspose: X's shape, W's kernel and
// the attributes (2 spatial axes).
type convTransposeCase struct {
	n, c, m, group   int
	h, w, kh, kw     int
	stride, dil, adj [2]int
	pads             [4]int // begins, then ends
	bias             bool
	outputShape      []int
	autoPad          string
}

// refConvTranspose computes the case by definition, gathered: output
// position o of channel co sums X[ci, i] W[ci, co, k] over the inputs i and
// taps k with i*stride - pad + k*dil = o, on every axis.
func refConvTranspose(c convTransposeCase, x, w, b []float64, oh, ow int, pads [4]int) []float64 {
	cg, mg := c.c/c.group, c.m/c.group
	y := make([]float64, c.n*c.m*oh*ow)
	for img := range c.n {
		for m := range c.m {
			g, co := m/mg, m%mg
			for yh := range oh {
				for yw := range ow {
					s := 0.0
					if b != nil {
						s = b[m]
					}
					for ci := range cg {
						ch := g*cg + ci
						for a := range c.kh {
							th := yh + pads[0] - a*c.dil[0]
							if th < 0 || th%c.stride[0] != 0 || th/c.stride[0] >= c.h {
								continue
							}
							for e := range c.kw {
								tw := yw + pads[1] - e*c.dil[1]
								if tw < 0 || tw%c.stride[1] != 0 || tw/c.stride[1] >= c.w {
									continue
								}
								s += x[((img*c.c+ch)*c.h+th/c.stride[0])*c.w+tw/c.stride[1]] * w[((ch*mg+co)*c.kh+a)*c.kw+e]
							}
						}
					}
					y[((img*c.m+m)*oh+yh)*ow+yw] = s
				}
			}
		}
	}
	return y
}

// ConvTranspose on random shapes (odd channels, groups, stride 2 and 3,
// dilations, output_padding, pads wider than the kernel, batch 1,
// output_shape, auto_pad) equals the definition computed by plain loops:
// float32 and float64 on the CPU, float32 on the emulated device.
func TestConvTransposeRandom(t *testing.T) {
	dev := emulator(t)
	r := rand.New(rand.NewPCG(28, 3))
	cases := []convTransposeCase{
		{n: 1, c: 3, m: 5, group: 1, h: 5, w: 7, kh: 3, kw: 3, stride: [2]int{2, 2}, dil: [2]int{1, 1}, pads: [4]int{1, 1, 1, 1}, bias: true},
		{n: 2, c: 6, m: 9, group: 3, h: 4, w: 3, kh: 2, kw: 3, stride: [2]int{2, 3}, dil: [2]int{2, 1}, adj: [2]int{1, 2}, bias: true},
		{n: 1, c: 4, m: 4, group: 4, h: 6, w: 5, kh: 3, kw: 3, stride: [2]int{1, 2}, dil: [2]int{1, 1}, pads: [4]int{0, 1, 2, 0}},
		{n: 3, c: 5, m: 7, group: 1, h: 3, w: 4, kh: 2, kw: 2, stride: [2]int{2, 2}, dil: [2]int{3, 2}, adj: [2]int{2, 1}, pads: [4]int{4, 3, 5, 4}, bias: true}, // pads wider than the kernel
		{n: 1, c: 1, m: 1, group: 1, h: 1, w: 1, kh: 4, kw: 4, stride: [2]int{2, 2}, dil: [2]int{1, 1}},
		{n: 2, c: 7, m: 3, group: 1, h: 5, w: 5, kh: 3, kw: 1, stride: [2]int{3, 1}, dil: [2]int{1, 1}, outputShape: []int{16, 6}, bias: true},
		{n: 1, c: 2, m: 6, group: 2, h: 3, w: 4, kh: 3, kw: 2, stride: [2]int{2, 2}, dil: [2]int{1, 1}, autoPad: "SAME_UPPER"},
		{n: 1, c: 2, m: 3, group: 1, h: 3, w: 4, kh: 3, kw: 4, stride: [2]int{2, 3}, dil: [2]int{1, 2}, autoPad: "SAME_LOWER", bias: true},
		{n: 2, c: 3, m: 2, group: 1, h: 4, w: 4, kh: 4, kw: 4, stride: [2]int{2, 2}, dil: [2]int{1, 1}, autoPad: "VALID"},
	}
	for range 6 { // and random ones
		g := 1 + r.IntN(3)
		c := convTransposeCase{n: 1 + r.IntN(3), group: g, c: g * (1 + r.IntN(4)), m: g * (1 + r.IntN(4)), h: 1 + r.IntN(7), w: 1 + r.IntN(7),
			kh: 1 + r.IntN(4), kw: 1 + r.IntN(4), stride: [2]int{1 + r.IntN(3), 1 + r.IntN(3)}, dil: [2]int{1 + r.IntN(2), 1 + r.IntN(2)}, bias: r.IntN(2) == 0}
		for i := range 2 {
			c.adj[i] = r.IntN(max(c.stride[i], c.dil[i]))
		}
		for i := range c.pads {
			c.pads[i] = r.IntN(3)
		}
		cases = append(cases, c)
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
			// The output's size and padding, by the formulas of ONNX's
			// operator description.
			pads := c.pads
			var oh, ow int
			full := func(a int) int {
				in := []int{c.h, c.w}[a]
				k := []int{c.kh, c.kw}[a]
				return (in-1)*c.stride[a] + c.adj[a] + (k-1)*c.dil[a] + 1
			}
			switch {
			case c.outputShape != nil:
				oh, ow = c.outputShape[0], c.outputShape[1]
				for a, o := range []int{oh, ow} {
					tot := max(0, full(a)-o)
					pads[a], pads[2+a] = tot/2, tot-tot/2
				}
			case c.autoPad == "SAME_UPPER" || c.autoPad == "SAME_LOWER":
				oh, ow = c.h*c.stride[0], c.w*c.stride[1]
				for a, o := range []int{oh, ow} {
					tot := max(0, full(a)-o)
					pads[a], pads[2+a] = tot/2, tot-tot/2
					if c.autoPad == "SAME_LOWER" {
						pads[a], pads[2+a] = tot-tot/2, tot/2
					}
				}
			case c.autoPad == "VALID":
				pads = [4]int{}
				oh, ow = full(0), full(1)
			default:
				oh, ow = full(0)-pads[0]-pads[2], full(1)-pads[1]-pads[3]
			}
			if oh <= 0 || ow <= 0 {
				t.Skip("no output")
			}
			xs := make([]float64, c.n*c.c*c.h*c.w)
			ws := make([]float64, c.c*(c.m/c.group)*c.kh*c.kw)
			var bs []float64
			for i := range xs {
				xs[i] = r.NormFloat64()
			}
			for i := range ws {
				ws[i] = r.NormFloat64()
			}
			if c.bias {
				bs = make([]float64, c.m)
				for i := range bs {
					bs[i] = r.NormFloat64()
				}
			}
			want := refConvTranspose(c, xs, ws, bs, oh, ow, pads)
			attrs := []*onnxpb.AttributeProto{onnxtest.Int("group", int64(c.group)), onnxtest.Ints("strides", int64(c.stride[0]), int64(c.stride[1])),
				onnxtest.Ints("dilations", int64(c.dil[0]), int64(c.dil[1]))}
			if c.adj != [2]int{} {
				attrs = append(attrs, onnxtest.Ints("output_padding", int64(c.adj[0]), int64(c.adj[1])))
			}
			switch {
			case c.outputShape != nil:
				attrs = append(attrs, onnxtest.Ints("output_shape", int64(oh), int64(ow)))
			case c.autoPad != "":
				attrs = append(attrs, onnxtest.String("auto_pad", c.autoPad))
			default:
				attrs = append(attrs, onnxtest.Ints("pads", int64(c.pads[0]), int64(c.pads[1]), int64(c.pads[2]), int64(c.pads[3])))
			}
			for _, typ := range []nd.DType{nd.Float32, nd.Float64} {
				conv := func(v []float64, shape ...int) nd.Array {
					a, err := nd.Convert(nd.Of(v, shape...), typ)
					require.NoError(t, err)
					return a
				}
				in := []string{"x", "w"}
				inits := []onnxtest.Named{onnxtest.Init("w", conv(ws, c.c, c.m/c.group, c.kh, c.kw))}
				if c.bias {
					in = append(in, "b")
					inits = append(inits, onnxtest.Init("b", conv(bs, c.m)))
				}
				m, err := onnxtest.Load(onnxtest.Model(11, nodes{onnxtest.Node("ConvTranspose", in, []string{"y"}, attrs...)},
					values{onnxtest.Value("x", typ, c.n, c.c, c.h, c.w)}, values{onnxtest.Value("y", typ)}, inits...))
				require.NoError(t, err)
				x := conv(xs, c.n, c.c, c.h, c.w)
				out, err := m.Run([]nd.Array{x})
				require.NoError(t, err)
				require.Equal(t, []int{c.n, c.m, oh, ow}, out[0].Shape, "%v", typ)
				assertClose(t, want, nd.Float64s(out[0]), fmt.Sprintf("%v on the CPU", typ))
				if typ == nd.Float32 {
					got, onHost, err := runOnDevice(dev, m, []nd.Array{x})
					require.NoError(t, err)
					assert.Empty(t, onHost)
					assertClose(t, want, nd.Float64s(got[0]), "on the device")
				}
			}
		})
	}
}

// assertClose holds got to want within 1e-5 of want's largest magnitude.
func assertClose(t *testing.T, want, got []float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	scale := 1.0
	for _, v := range want {
		scale = max(scale, math.Abs(v))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-5*scale {
			t.Errorf("%s: element %d is %v, want %v", what, i, got[i], want[i])
			return
		}
	}
}
