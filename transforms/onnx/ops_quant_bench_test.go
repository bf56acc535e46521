package onnx

import (
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
)

// randQuantArray returns an array of t (int8 or uint8) of shape, uniform
// over the type.
func randQuantArray(r *rand.Rand, t nd.DType, shape ...int) nd.Array {
	a := nd.Zeros(t, shape...)
	for i := range a.Data {
		a.Data[i] = byte(r.IntN(256))
	}
	return a
}

// BenchmarkQuant times the quantized products beside the float ones of the
// same shapes, in the same run (their ratio is the speed of the integer
// products against the float kernels): QLinearConv and Conv of ResNet's
// 3x3 layer (64 channels, 56x56, batch 8, pads 1, bias), QLinearMatMul and
// MatMul of a transformer's dense layer ([64, 128, 256] x [256, 256]), the
// weights constants. uint8 activations, int8 weights per output channel
// (per column for the MatMul), as ONNX Runtime's quantizer writes them.
func BenchmarkQuant(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	pads := intsAttr("pads", 1, 1, 1, 1)
	convFlops := 2.0 * 8 * 64 * 56 * 56 * 64 * 9
	b.Run("conv3x3_64x56x56_b8/Conv", func(b *testing.B) {
		in := []nd.Array{randArray(r, 8, 64, 56, 56), randArray(r, 64, 64, 3, 3), randArray(r, 64)}
		benchKernel(b, "Conv", []*onnxpb.AttributeProto{pads}, in, []bool{false, true, true}, convFlops, 64, 8*56*56, 64*9)
	})
	b.Run("conv3x3_64x56x56_b8/QLinearConv", func(b *testing.B) {
		ws := make([]float32, 64)
		bias := make([]int32, 64)
		for i := range ws {
			ws[i], bias[i] = 0.001*float32(i+1), int32(r.IntN(2000)-1000)
		}
		in := []nd.Array{randQuantArray(r, nd.Uint8, 8, 64, 56, 56), nd.Scalar[float32](0.02), nd.Scalar[uint8](128),
			randQuantArray(r, nd.Int8, 64, 64, 3, 3), nd.Of(ws, 64), nd.Zeros(nd.Int8, 64),
			nd.Scalar[float32](0.5), nd.Scalar[uint8](100), nd.Of(bias, 64)}
		known := []bool{false, true, true, true, true, true, true, true, true}
		benchKernel(b, "QLinearConv", []*onnxpb.AttributeProto{pads}, in, known, convFlops, 64, 8*56*56, 64*9)
	})
	mmFlops := 2.0 * 64 * 128 * 256 * 256
	b.Run("matmul_64x128x256_256/MatMul", func(b *testing.B) {
		in := []nd.Array{randArray(r, 64, 128, 256), randArray(r, 256, 256)}
		benchKernel(b, "MatMul", nil, in, []bool{false, true}, mmFlops, 64*128, 256, 256)
	})
	b.Run("matmul_64x128x256_256/QLinearMatMul", func(b *testing.B) {
		bs := make([]float32, 256)
		for i := range bs {
			bs[i] = 0.001 * float32(i+1)
		}
		in := []nd.Array{randQuantArray(r, nd.Uint8, 64, 128, 256), nd.Scalar[float32](0.02), nd.Scalar[uint8](128),
			randQuantArray(r, nd.Int8, 256, 256), nd.Of(bs, 256), nd.Zeros(nd.Int8, 256),
			nd.Scalar[float32](0.5), nd.Scalar[uint8](100)}
		benchKernel(b, "QLinearMatMul", nil, in, []bool{false, true, true, true, true, true, true, true}, mmFlops, 64*128, 256, 256)
	})
}
