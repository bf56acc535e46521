//go:build cuda

package raster

// The CUDA launches of the raster steps: the kernels of kernels.cu on one
// tile, in the CUDA executor. Each checks what its CPU function checks and,
// where the batch is invalid, returns the CPU function's error, so that both
// implementations fail alike. Inputs are uploaded from the shared memory the
// batch arrived in, outputs downloaded into the response's (gpu.Output):
// one DMA each way, no host copy.

import (
	"math"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/step"
)

func init() {
	step.RegisterLaunch(StepTOA, launchTOA)
	step.RegisterLaunch(StepTOANDVI, launchTOANDVI)
	step.RegisterLaunch(StepNDVI, launchNDVI)
	step.RegisterLaunch(StepComposite, launchComposite)
}

var (
	kernelTOA       = Module.Kernel("toa")
	kernelTOANDVI   = Module.Kernel("toa_ndvi")
	kernelNDVI      = Module.Kernel("ndvi")
	kernelComposite = Module.Kernel("composite")
)

// uploadPlanes copies planes to one device buffer, back to back (plane b at
// b*len(plane)), as the kernels over several bands read them.
func uploadPlanes[T gpu.Number](c gpu.Call, planes [][]T) (gpu.Ptr, error) {
	var total int64
	for _, p := range planes {
		total += int64(len(gpu.Bytes(p)))
	}
	d, err := c.Alloc(total)
	if err != nil {
		return 0, err
	}
	var off int64
	for _, p := range planes {
		b := gpu.Bytes(p)
		if err := c.Copy(d.Offset(off), b); err != nil {
			return 0, err
		}
		off += int64(len(b))
	}
	return d, nil
}

// outputPlanes returns n planes of area floats in one host output buffer and
// one device buffer, back to back.
func outputPlanes(c gpu.Call, n, area int) ([][]float32, []float32, gpu.Ptr, error) {
	host, err := gpu.Output[float32](c, n*area)
	if err != nil {
		return nil, nil, 0, err
	}
	dev, err := c.Alloc(4 * int64(n*area))
	if err != nil {
		return nil, nil, 0, err
	}
	planes := make([][]float32, n)
	for i := range planes {
		planes[i] = host[i*area : (i+1)*area : (i+1)*area]
	}
	return planes, host, dev, nil
}

func launchTOA(c gpu.Call, t DNTile) (Tile, error) {
	if err := checkTOA(t); err != nil || t.Area() == 0 {
		return TOA(t) // the CPU function's error, or an empty tile
	}
	sin := math.Sin(t.SunElevation * math.Pi / 180)
	n := t.Area()
	dn, err := uploadPlanes(c, t.DN)
	if err != nil {
		return Tile{}, err
	}
	planes, host, out, err := outputPlanes(c, len(t.DN), n)
	if err != nil {
		return Tile{}, err
	}
	res := Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect, Data: planes}
	for i, cal := range t.Cal {
		res.Names = append(res.Names, BandName(cal.Band))
		err := c.Launch(kernelTOA, gpu.Grid1D(c.Device(), int64(n)), gpu.BlockThreads,
			dn.Offset(2*int64(i*n)), out.Offset(4*int64(i*n)), int64(n), cal.Mult/sin, cal.Add/sin)
		if err != nil {
			return Tile{}, err
		}
	}
	return res, gpu.Download(c, host, out)
}

// launchTOANDVI runs the fused kernel: every band's reflectance and the NDVI
// of bands 4 and 5 in one pass.
func launchTOANDVI(c gpu.Call, t DNTile) (Tile, error) {
	red, nir := bandIndex(t.Cal, 4), bandIndex(t.Cal, 5)
	if red < 0 || nir < 0 || checkTOA(t) != nil || t.Area() == 0 {
		return TOANDVI(t) // the CPU function's error, or an empty tile
	}
	sin := math.Sin(t.SunElevation * math.Pi / 180)
	nb, n := len(t.DN), t.Area()
	coef := make([]float64, 0, 2*nb)
	res := Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect}
	for _, cal := range t.Cal {
		coef = append(coef, cal.Mult/sin, cal.Add/sin)
		res.Names = append(res.Names, BandName(cal.Band))
	}
	res.Names = append(res.Names, PlaneNDVI)
	dn, err := uploadPlanes(c, t.DN)
	if err != nil {
		return Tile{}, err
	}
	dCoef, err := gpu.Upload(c, coef)
	if err != nil {
		return Tile{}, err
	}
	// The reflectance planes and the NDVI, back to back: NDVI is plane nb.
	planes, host, out, err := outputPlanes(c, nb+1, n)
	if err != nil {
		return Tile{}, err
	}
	res.Data = planes
	err = c.Launch(kernelTOANDVI, gpu.Grid1D(c.Device(), int64(n)), gpu.BlockThreads,
		dn, dCoef, int64(nb), int64(n), int64(red), int64(nir), out, out.Offset(4*int64(nb*n)))
	if err != nil {
		return Tile{}, err
	}
	return res, gpu.Download(c, host, out)
}

func bandIndex(cal []Calibration, band int) int {
	for i, c := range cal {
		if c.Band == band {
			return i
		}
	}
	return -1
}

func launchNDVI(c gpu.Call, t Tile) (Tile, error) {
	red, err := t.Plane(BandName(4))
	if err != nil {
		return Tile{}, err
	}
	nir, err := t.Plane(BandName(5))
	if err != nil || checkPlanes(t.ID(), t.Rect, t.Data) != nil || t.Area() == 0 {
		return NDVITile(t)
	}
	n := int64(t.Area())
	dRed, err := gpu.Upload(c, red)
	if err != nil {
		return Tile{}, err
	}
	dNIR, err := gpu.Upload(c, nir)
	if err != nil {
		return Tile{}, err
	}
	planes, host, out, err := outputPlanes(c, 1, t.Area())
	if err != nil {
		return Tile{}, err
	}
	if err := c.Launch(kernelNDVI, gpu.Grid1D(c.Device(), n), gpu.BlockThreads, dRed, dNIR, out, n); err != nil {
		return Tile{}, err
	}
	return Tile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect,
		Names: []string{PlaneNDVI}, Data: planes}, gpu.Download(c, host, out)
}

func launchComposite(c gpu.Call, in CompositeInput) (RGBATile, error) {
	t, st := in.Tile, in.Stretch
	if checkPlanes(t.ID(), t.Rect, t.Data) != nil || len(st.Lo) != 3 || len(st.Hi) != 3 || !(st.Gamma > 0) || t.Area() == 0 {
		return CompositeTile(in) // the CPU function's error, or an empty tile
	}
	var ch [3]gpu.Ptr
	for i, b := range compositeBands {
		p, err := t.Plane(BandName(b))
		if err != nil {
			return RGBATile{}, err
		}
		if ch[i], err = gpu.Upload(c, p); err != nil {
			return RGBATile{}, err
		}
	}
	n := int64(t.Area())
	pix, err := gpu.Output[uint8](c, 4*t.Area())
	if err != nil {
		return RGBATile{}, err
	}
	out, err := c.Alloc(4 * n)
	if err != nil {
		return RGBATile{}, err
	}
	err = c.Launch(kernelComposite, gpu.Grid1D(c.Device(), n), gpu.BlockThreads, ch[0], ch[1], ch[2], n,
		float64(st.Lo[0]), float64(st.Lo[1]), float64(st.Lo[2]), float64(st.Hi[0]), float64(st.Hi[1]), float64(st.Hi[2]),
		1/st.Gamma, out)
	if err != nil {
		return RGBATile{}, err
	}
	return RGBATile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect, Pix: pix}, gpu.Download(c, pix, out)
}
