package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/transforms/gemm"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
)

// The benchmarks run a kernel as a plan does: made from its node, its
// weights known while planning (so packed once, in the warm-up), its
// output in memory reused from run to run (a plan's workspace).

// randArray returns an array of shape with values uniform in [-1, 1).
func randArray(r *rand.Rand, shape ...int) nd.Array {
	n := 1
	for _, d := range shape {
		n *= d
	}
	s := make([]float32, n)
	for i := range s {
		s[i] = 2*r.Float32() - 1
	}
	return nd.Of(s, shape...)
}

func intsAttr(name string, v ...int64) *onnxpb.AttributeProto {
	t := onnxpb.AttributeProto_INTS
	return &onnxpb.AttributeProto{Name: &name, Type: &t, Ints: v}
}

func intAttr(name string, v int64) *onnxpb.AttributeProto {
	t := onnxpb.AttributeProto_INT
	return &onnxpb.AttributeProto{Name: &name, Type: &t, I: &v}
}

// benchKernel makes op's kernel (opset 17) with attrs, infers its output
// from in (those with known set are constants) and times its runs. It
// reports GFLOP/s for flops a run, and ratio_to_gemm: the fastest of a few
// plain gemm.Sgemm calls of m x k times k x n (the same FLOPs, measured in
// the same run, before and after) over the kernel's fastest run: 1 is as
// fast as that product.
func benchKernel(b *testing.B, op string, attrs []*onnxpb.AttributeProto, in []nd.Array, known []bool, flops float64, gm, gn, gk int) {
	d, ok := lookupOp(op)
	if !ok {
		b.Fatalf("no %s", op)
	}
	names := make([]string, len(in))
	k, err := d.New(&Node{Op: op, Opset: 17, Since: 17, Inputs: names, Outputs: []string{"y"}, Attrs: NewAttrs(attrs...)})
	if err != nil {
		b.Fatal(err)
	}
	metas := make([]Meta, len(in))
	for i, a := range in {
		metas[i] = Meta{Type: a.Type, Shape: a.Shape}
		if known[i] {
			metas[i].Value = &in[i]
		}
	}
	outMeta, err := k.Infer(metas)
	if err != nil {
		b.Fatal(err)
	}
	out := []nd.Array{nd.Zeros(outMeta[0].Type, outMeta[0].Shape...)}
	if err := k.Run(in, out); err != nil { // warm-up: packs the weights
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	ga, gb, gc := randArray(r, gm*gk), randArray(r, gk*gn), make([]float32, gm*gn)
	ceiling := func() time.Duration {
		best := time.Duration(math.MaxInt64)
		for range 3 {
			start := time.Now()
			gemm.Sgemm(false, false, gm, gn, gk, 1, nd.MustAs[float32](ga), gk, nd.MustAs[float32](gb), gn, 0, gc, gn)
			best = min(best, time.Since(start))
		}
		return best
	}
	g0 := ceiling()
	best := time.Duration(math.MaxInt64)
	for b.Loop() {
		start := time.Now()
		if err := k.Run(in, out); err != nil {
			b.Fatal(err)
		}
		best = min(best, time.Since(start))
	}
	b.StopTimer()
	g := min(g0, ceiling())
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	b.ReportMetric(flops/best.Seconds()/1e9, "best-GFLOP/s")
	b.ReportMetric(g.Seconds()/best.Seconds(), "ratio_to_gemm")
}

// BenchmarkConv: a ResNet 3x3 convolution (64 -> 64 channels, 56x56, batch
// 8, pads 1, bias) against the plain product of its im2col shape (64 x 576
// times 576 x 8*3136), and a MobileNetV2 depthwise 3x3 (96 channels,
// 56x56, batch 8, pads 1, bias) against a plain product of as many FLOPs
// (a cube: the depthwise has no product of its own).
func BenchmarkConv(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	pads := intsAttr("pads", 1, 1, 1, 1)
	b.Run("resnet3x3_64x56x56_b8", func(b *testing.B) {
		in := []nd.Array{randArray(r, 8, 64, 56, 56), randArray(r, 64, 64, 3, 3), randArray(r, 64)}
		flops := 2.0 * 8 * 64 * 56 * 56 * 64 * 9
		benchKernel(b, "Conv", []*onnxpb.AttributeProto{pads}, in, []bool{false, true, true}, flops, 64, 8*56*56, 64*9)
	})
	b.Run("depthwise3x3_96x56x56_b8", func(b *testing.B) {
		in := []nd.Array{randArray(r, 8, 96, 56, 56), randArray(r, 96, 1, 3, 3), randArray(r, 96)}
		flops := 2.0 * 8 * 96 * 56 * 56 * 9
		side := int(math.Round(math.Cbrt(flops / 2)))
		benchKernel(b, "Conv", []*onnxpb.AttributeProto{pads, intAttr("group", 96)}, in, []bool{false, true, true}, flops, side, side, side)
	})
}

// BenchmarkMatMul: a batch through a transformer's dense layer, [64, 128,
// 256] x [256, 256] (B a constant), against the plain product 8192 x 256
// times 256 x 256.
func BenchmarkMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	in := []nd.Array{randArray(r, 64, 128, 256), randArray(r, 256, 256)}
	benchKernel(b, "MatMul", nil, in, []bool{false, true}, 2.0*64*128*256*256, 64*128, 256, 256)
}

// BenchmarkConvLayers: the convolutions of MobileNetV2 (stem, 1x1
// expansions and projections, depthwise) and ResNet (stem, 3x3 at each
// width, a strided 3x3) at batch 8, each against the plain product of its
// im2col shape (Cout x K times K x positions): where the time goes when
// tuning convByRows and the chunk sizes.
func BenchmarkConvLayers(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	type layer struct{ c, m, h, k, s, g int } // channels in, out, size, kernel, stride, group
	for _, l := range []layer{
		{3, 32, 224, 3, 2, 1}, // MobileNetV2
		{32, 32, 112, 3, 1, 32},
		{32, 16, 112, 1, 1, 1},
		{16, 96, 112, 1, 1, 1},
		{144, 144, 56, 3, 2, 144},
		{24, 144, 56, 1, 1, 1},
		{144, 24, 56, 1, 1, 1},
		{192, 32, 28, 1, 1, 1},
		{384, 64, 14, 1, 1, 1},
		{960, 160, 7, 1, 1, 1},
		{320, 1280, 7, 1, 1, 1},
		{3, 64, 224, 7, 2, 1}, // ResNet
		{64, 64, 56, 3, 1, 1},
		{64, 128, 56, 3, 2, 1},
		{128, 128, 28, 3, 1, 1},
		{256, 256, 14, 3, 1, 1},
		{512, 512, 7, 3, 1, 1},
	} {
		const n = 8
		oh := (l.h+2*(l.k/2)-l.k)/l.s + 1
		flops := 2.0 * float64(n*l.m*oh*oh*(l.c/l.g)*l.k*l.k)
		b.Run(fmt.Sprintf("c%d_m%d_h%d_k%d_s%d_g%d", l.c, l.m, l.h, l.k, l.s, l.g), func(b *testing.B) {
			in := []nd.Array{randArray(r, n, l.c, l.h, l.h), randArray(r, l.m, l.c/l.g, l.k, l.k), randArray(r, l.m)}
			p := int64(l.k / 2)
			attrs := []*onnxpb.AttributeProto{intsAttr("pads", p, p, p, p), intsAttr("strides", int64(l.s), int64(l.s)), intAttr("group", int64(l.g))}
			benchKernel(b, "Conv", attrs, in, []bool{false, true, true}, flops, l.m, n*oh*oh, l.c/l.g*l.k*l.k)
		})
	}
}

// BenchmarkLSTM: a bidirectional LSTM (sequence 32, batch 8, input 64,
// hidden 128, biases), against a plain product of its FLOPs (the input
// projections and the recurrence as one product of every step).
func BenchmarkLSTM(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	const seq, batch, input, hidden = 32, 8, 64, 128
	in := []nd.Array{randArray(r, seq, batch, input), randArray(r, 2, 4*hidden, input), randArray(r, 2, 4*hidden, hidden), randArray(r, 2, 8*hidden)}
	t := onnxpb.AttributeProto_STRING
	name := "direction"
	dir := &onnxpb.AttributeProto{Name: &name, Type: &t, S: []byte("bidirectional")}
	flops := 2.0 * 2 * seq * batch * 4 * hidden * (input + hidden)
	benchKernel(b, "LSTM", []*onnxpb.AttributeProto{dir, intAttr("hidden_size", hidden)}, in, []bool{false, true, true, true}, flops, 2*seq*batch, 4*hidden, input+hidden)
}
