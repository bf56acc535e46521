package gpuemu_test

import (
	"math"
	"testing"
	"unsafe"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/runtime/executor/gpu/gpuemu"
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

.visible .entry overrun(
	.param .u64 overrun_param_0,
	.param .u64 overrun_param_1
)
{
	ret;
}
`

var module = &gpu.Module{Name: "emutest", PTX: []byte(ptx)}

func f32s(b []byte) []float32 { return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4) }

// newDevice is an emulator whose kernels are written in Go: scale (y = x *
// s over n floats, a grid-stride loop over the grid) and overrun (writes
// one float past the n it is given).
func newDevice() *gpuemu.Device {
	var d *gpuemu.Device
	d = gpuemu.New(map[*gpu.Module]gpuemu.KernelFunc{module: func(k gpu.Kernel, grid, block int, args []uint64) error {
		switch k.Name {
		case "scale":
			n := int64(args[2])
			x, err := d.Memory(gpu.Ptr(args[0]), 4*n)
			if err != nil {
				return err
			}
			y, err := d.Memory(gpu.Ptr(args[1]), 4*n)
			if err != nil {
				return err
			}
			s := float32(math.Float64frombits(args[3]))
			xs, ys := f32s(x), f32s(y)
			for i := range xs {
				ys[i] = xs[i] * s
			}
		case "overrun":
			n := int64(args[1])
			y, err := d.Memory(gpu.Ptr(args[0]), 4*n)
			if err != nil {
				return err
			}
			past := unsafe.Slice(&y[0], 4*n+4)
			past[4*n] = 1
		}
		return nil
	}})
	return d
}

func TestLaunchesRunAndAreChecked(t *testing.T) {
	d := newDevice()
	out := make([]float32, 3)
	err := d.Launch(func(c gpu.Call) error {
		x, err := gpu.Upload(c, []float32{1, 2, 3})
		require.NoError(t, err)
		y, err := c.Alloc(12)
		require.NoError(t, err)
		require.NoError(t, c.Launch(module.Kernel("scale"), 1, 256, x, y, int64(3), 2.0))
		assert.ErrorContains(t, c.Launch(module.Kernel("scal"), 1, 256, x, y, int64(3), 2.0), "not in the module's PTX (it has overrun, scale)")
		assert.ErrorContains(t, c.Launch(module.Kernel("scale"), 1, 256, x, y, int64(3)), "takes 4 parameters, the launch passes 3")
		assert.ErrorContains(t, c.Launch(module.Kernel("scale"), 1, 256, x, gpu.Ptr(16), int64(3), 2.0), "not in any buffer")
		assert.ErrorContains(t, c.Launch(module.Kernel("scale"), 1, 256, x, y, int32(3), 2.0), "argument 2 is a int32")
		assert.ErrorContains(t, c.Launch(module.Kernel("scale"), 0, 256, x, y, int64(3), 2.0), "grid 0")
		assert.ErrorContains(t, c.Launch(module.Kernel("overrun"), 1, 1, y, int64(3)), "kernel emutest.overrun wrote outside its buffers")
		return gpu.Download(c, out, y)
	})
	require.NoError(t, err)
	// The overrun's write landed in y's guard: y's own values are scale's.
	assert.Equal(t, []float32{2, 4, 6}, out)
	s := d.Stats()
	assert.Equal(t, 2, s.Launches, "scale and overrun ran; the others were refused")
	assert.Equal(t, map[string]int{"emutest.scale": 1, "emutest.overrun": 1}, s.Kernels)
	assert.Equal(t, 1, s.Uploads)
	assert.Equal(t, int64(12), s.DownloadBytes)
}

// Work is asynchronous: a download is in host memory only after Sync (or
// the call's end), and host memory given to Copy must not change before.
func TestAsynchronousCopies(t *testing.T) {
	d := newDevice()
	err := d.Launch(func(c gpu.Call) error {
		x, err := gpu.Upload(c, []float32{1, 2})
		require.NoError(t, err)
		out := []float32{7, 7}
		require.NoError(t, gpu.Download(c, out, x))
		assert.True(t, math.IsNaN(float64(out[0])), "a download is not in place before Sync")
		require.NoError(t, c.Sync())
		assert.Equal(t, []float32{1, 2}, out)

		host := []float32{3, 4}
		require.NoError(t, gpu.Download(c, host, x)) // lands at Sync; fine
		src := []float32{5, 6}
		p, err := c.Alloc(8)
		require.NoError(t, err)
		require.NoError(t, c.Copy(p, gpu.Bytes(src)))
		src[0] = 9
		assert.ErrorContains(t, c.Sync(), "changed before the copy was waited for")
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, d.Stats().Syncs)
}

// New memory reads as NaN; a call's buffers go when it ends, resident data
// stays, filled once.
func TestMemoryLifetimes(t *testing.T) {
	d := newDevice()
	var stale, res gpu.Ptr
	fills := 0
	for call := range 3 {
		err := d.Launch(func(c gpu.Call) error {
			p, err := c.Alloc(8)
			require.NoError(t, err)
			if call == 0 {
				got := make([]float32, 2)
				require.NoError(t, gpu.Download(c, got, p))
				require.NoError(t, c.Sync())
				assert.True(t, math.IsNaN(float64(got[0])) && math.IsNaN(float64(got[1])))
				stale = p
			} else {
				assert.Error(t, gpu.Download(c, make([]float32, 2), stale), "a buffer of an earlier call")
			}
			r, err := c.Resident("weights", 8, func(c gpu.Call, p gpu.Ptr) error {
				fills++
				return c.Copy(p, gpu.Bytes([]float32{1, 2}))
			})
			require.NoError(t, err)
			if call > 0 {
				assert.Equal(t, res, r)
			}
			res = r
			got := make([]float32, 2)
			require.NoError(t, gpu.Download(c, got, r))
			require.NoError(t, c.Sync())
			assert.Equal(t, []float32{1, 2}, got)
			return nil
		})
		require.NoError(t, err)
	}
	assert.Equal(t, 1, fills)
	assert.Equal(t, 1, d.Stats().ResidentFills)
}

// Products are computed in float64 over every product of a batch, operands
// checked as the Recorder checks them.
func TestProducts(t *testing.T) {
	d := newDevice()
	// Two products of A_i (2x3) and one shared B^T (B is 2x3: op(B) = B^T,
	// 3x2).
	a := []float32{1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0}
	b := []float32{1, 1, 1, 0, 1, 2}
	want := []float32{6, 8, 15, 17, 1, 0, 1, 1}
	err := d.Launch(func(c gpu.Call) error {
		pa, _ := gpu.Upload(c, a)
		pb, _ := gpu.Upload(c, b)
		pc, _ := c.Alloc(4 * 8)
		require.NoError(t, c.GemmStridedBatched(false, true, 2, 2, 3, pa, 3, 6, pb, 3, 0, pc, 2, 4, 2))
		got := make([]float32, 8)
		require.NoError(t, gpu.Download(c, got, pc))
		require.NoError(t, c.Sync())
		assert.Equal(t, want, got)
		require.NoError(t, c.Gemm(true, false, 3, 1, 2, pa, 3, pb, 1, pc, 1))
		got = make([]float32, 3)
		require.NoError(t, gpu.Download(c, got, pc))
		require.NoError(t, c.Sync())
		assert.Equal(t, []float32{1 + 4, 2 + 5, 3 + 6}, got, "A^T (3x2) x the column (1, 1)")
		assert.ErrorContains(t, c.GemmStridedBatched(false, true, 2, 2, 3, pa, 3, 6, pb, 3, 0, pc, 2, 4, 3), "batched gemm: A")
		assert.ErrorContains(t, c.Gemm(false, false, 2, 2, 3, pa, 3, pb, 2, pa, 2), "C overlaps A")
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, d.Stats().Products)
}
