package gpu_test

import (
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ptx = `
.version 7.8
.target sm_70
.address_size 64

.visible .entry scale(
	.param .u64 scale_param_0,
	.param .u64 scale_param_1,
	.param .u64 scale_param_2,
	.param .f64 scale_param_3
)
{
	ret;
}

.visible .entry narrow(
	.param .u32 narrow_param_0
)
{
	ret;
}
`

var module = &gpu.Module{Name: "test", PTX: []byte(ptx)}

func TestEntries(t *testing.T) {
	e, err := gpu.Entries([]byte(ptx))
	require.NoError(t, err)
	assert.Equal(t, map[string][]int{"scale": {8, 8, 8, 8}, "narrow": {4}}, e)
	_, err = gpu.Entries([]byte("// no kernels"))
	assert.Error(t, err)
}

// The recorder checks a launch as a GPU would: the kernel exists, takes as
// many 8-byte parameters as passed, and the pointers lie in the call's
// buffers; products stay inside their operands.
func TestRecorderChecksLaunches(t *testing.T) {
	r := gpu.NewRecorder()
	x, err := gpu.Upload(r, []float32{1, 2, 3})
	require.NoError(t, err)
	y, err := r.Alloc(12)
	require.NoError(t, err)
	require.NoError(t, r.Launch(module.Kernel("scale"), 1, 256, x, y, int64(3), 2.0))
	require.Len(t, r.Launches, 1)

	assert.ErrorContains(t, r.Launch(module.Kernel("scal"), 1, 256, x, y, int64(3), 2.0), "kernel test.scal is not in the module's PTX (it has narrow, scale)")
	assert.ErrorContains(t, r.Launch(module.Kernel("scale"), 1, 256, x, y, int64(3)), "takes 4 parameters, the launch passes 3")
	assert.ErrorContains(t, r.Launch(module.Kernel("scale"), 1, 256, x, y, int32(3), 2.0), "argument 2 is a int32")
	assert.ErrorContains(t, r.Launch(module.Kernel("scale"), 1, 256, x, gpu.Ptr(12345), int64(3), 2.0), "not in any buffer")
	assert.ErrorContains(t, r.Launch(module.Kernel("narrow"), 1, 256, int64(1)), "parameter 0 is 4 bytes")
	assert.ErrorContains(t, r.Launch(module.Kernel("scale"), 0, 256, x, y, int64(3), 2.0), "grid 0")

	a, _ := r.Alloc(4 * 6) // 2x3
	b, _ := r.Alloc(4 * 6) // 3x2
	c, _ := r.Alloc(4 * 4) // 2x2
	require.NoError(t, r.Gemm(false, false, 2, 2, 3, a, 3, b, 2, c, 2))
	require.NoError(t, r.Gemm(true, true, 2, 2, 3, b, 2, a, 3, c, 2))
	assert.ErrorContains(t, r.Gemm(false, false, 3, 2, 3, a, 3, b, 2, c, 2), "gemm: A")
	assert.ErrorContains(t, r.Gemm(false, false, 2, 2, 3, a, 3, b, 2, c, 1), "gpu: C is 2x2 with row stride 1 (gemm)")

	out := make([]float32, 3)
	require.NoError(t, gpu.Download(r, out, x))
	assert.Equal(t, []float32{1, 2, 3}, out, "device memory holds what was uploaded")
	assert.Error(t, gpu.Download(r, make([]float32, 4), x), "past the end of the buffer")
	host, err := gpu.Output[float32](r, 5)
	require.NoError(t, err)
	assert.Len(t, host, 5)
}

// A batched product's operands are checked over every product: the last
// one must still lie inside the buffer, and the results must not overlap.
func TestRecorderChecksBatchedProducts(t *testing.T) {
	r := gpu.NewRecorder()
	a, _ := r.Alloc(4 * 3 * 6) // 3 matrices 2x3
	w, _ := r.Alloc(4 * 6)     // one 3x2, shared
	c, _ := r.Alloc(4 * 3 * 4) // 3 results 2x2
	require.NoError(t, r.GemmStridedBatched(false, false, 2, 2, 3, a, 3, 6, w, 2, 0, c, 2, 4, 3))
	require.NoError(t, r.GemmStridedBatched(true, false, 2, 2, 3, a, 2, 6, w, 2, 0, c, 2, 4, 3))
	assert.ErrorContains(t, r.GemmStridedBatched(false, false, 2, 2, 3, a, 3, 6, w, 2, 0, c, 2, 4, 4), "batched gemm: A")
	assert.ErrorContains(t, r.GemmStridedBatched(false, false, 2, 2, 3, a, 3, 6, w, 2, 1, c, 2, 4, 3), "batched gemm: B")
	assert.ErrorContains(t, r.GemmStridedBatched(false, false, 2, 2, 3, a, 3, 6, w, 2, 0, c, 2, 3, 3), "they overlap")
	assert.ErrorContains(t, r.GemmStridedBatched(false, false, 2, 2, 3, a, 3, -6, w, 2, 0, c, 2, 4, 1), "must not be negative")
	assert.ErrorContains(t, r.GemmStridedBatched(false, false, 2, 2, 3, a, 3, 6, w, 2, 0, c, 2, 4, 0), "0 products")
	// One product: C's stride does not matter.
	require.NoError(t, r.GemmStridedBatched(false, false, 2, 2, 3, a, 3, 0, w, 2, 0, c, 2, 0, 1))
}
