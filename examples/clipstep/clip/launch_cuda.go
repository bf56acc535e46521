//go:build cuda

package clip

import (
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
)

func init() { step.RegisterLaunch(Step, launch) }

var kernelClip = Module.Kernel("clip")

// launch clips every plane on the device: each plane uploaded from the
// batch's shared memory, clipped by one kernel, and downloaded into the
// response's shared memory. An invalid batch gets the CPU function's error.
func launch(c gpu.Call, in Input) (raster.Tile, error) {
	t := in.Tile
	n := int64(t.Area())
	if !(in.Lo <= in.Hi) || n == 0 {
		return Clip(in)
	}
	out := t
	out.Data = make([][]float32, len(t.Data))
	for i, p := range t.Data {
		if int64(len(p)) != n {
			return Clip(in)
		}
		x, err := gpu.Upload(c, p)
		if err != nil {
			return raster.Tile{}, err
		}
		y, err := c.Alloc(4 * n)
		if err != nil {
			return raster.Tile{}, err
		}
		err = c.Launch(kernelClip, gpu.Grid1D(c.Device(), n), gpu.BlockThreads, x, y, n, float64(in.Lo), float64(in.Hi))
		if err != nil {
			return raster.Tile{}, err
		}
		if out.Data[i], err = gpu.Output[float32](c, int(n)); err != nil {
			return raster.Tile{}, err
		}
		if err := gpu.Download(c, out.Data[i], y); err != nil {
			return raster.Tile{}, err
		}
	}
	return out, nil
}
