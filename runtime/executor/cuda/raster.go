//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"
)

// TOA returns one band's top-of-atmosphere reflectance, float32(float64(dn)*scale +
// offset) computed in double, NaN where dn is 0: toaPlane of transforms/raster. The
// caller computes scale = Mult/sin(elevation) and offset = Add/sin(elevation) in
// float64, as raster.TOA does.
func (d *Device) TOA(dn []uint16, scale, offset float64) ([]float32, error) {
	n := int64(len(dn))
	out := make([]float32, n)
	if n == 0 {
		return out, nil
	}
	err := d.run("toa", []seg{one(asBytes(dn))}, []seg{one(asBytes(out))}, 0,
		func(l *lane, in, o []cu.DevicePtr, _ cu.DevicePtr) error {
			return d.launch(l, d.k.toa, d.grid1D(n), blockThreads, in[0], o[0], n, scale, offset)
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TOANDVI converts the DN planes of several bands of one tile to TOA reflectance and
// computes the NDVI of planes red and nir, in one pass over the pixels (kernel
// toa_ndvi): the TOA step followed by the NDVI step, with one upload of the DNs and
// one download of the results. scale[b] and offset[b] are band b's coefficients (see
// TOA). red and nir are plane indices; with either negative no NDVI is computed and
// ndvi is nil. Every plane has the same number of pixels.
func (d *Device) TOANDVI(dn [][]uint16, scale, offset []float64, red, nir int) (refl [][]float32, ndvi []float32, err error) {
	nb := len(dn)
	if nb == 0 {
		return nil, nil, fmt.Errorf("cuda: toa_ndvi: no planes")
	}
	if len(scale) != nb || len(offset) != nb {
		return nil, nil, fmt.Errorf("cuda: toa_ndvi: %d planes, %d scales, %d offsets", nb, len(scale), len(offset))
	}
	n := int64(len(dn[0]))
	for b, p := range dn {
		if int64(len(p)) != n {
			return nil, nil, fmt.Errorf("cuda: toa_ndvi: plane %d has %d pixels, plane 0 %d", b, len(p), n)
		}
	}
	withNDVI := red >= 0 && nir >= 0
	if red >= nb || nir >= nb {
		return nil, nil, fmt.Errorf("cuda: toa_ndvi: red plane %d, NIR plane %d: there are %d planes", red, nir, nb)
	}
	refl = make([][]float32, nb)
	for b := range refl {
		refl[b] = make([]float32, n)
	}
	if withNDVI {
		ndvi = make([]float32, n)
	}
	if n == 0 {
		return refl, ndvi, nil
	}
	coef := make([]float64, 0, 2*nb)
	for b := range nb {
		coef = append(coef, scale[b], offset[b])
	}
	// Inputs: the DN planes back to back (plane b at b*n), the coefficients.
	// Outputs: the reflectance planes back to back, the NDVI.
	var dnSeg, reflSeg seg
	for b := range nb {
		dnSeg = append(dnSeg, asBytes(dn[b]))
		reflSeg = append(reflSeg, asBytes(refl[b]))
	}
	out := []seg{reflSeg}
	if withNDVI {
		out = append(out, one(asBytes(ndvi)))
	}
	err = d.run("toa_ndvi", []seg{dnSeg, one(asBytes(coef))}, out, 0,
		func(l *lane, in, o []cu.DevicePtr, _ cu.DevicePtr) error {
			ndviPtr := cu.DevicePtr(0)
			if withNDVI {
				ndviPtr = o[1]
			}
			r, v := int64(red), int64(nir)
			if !withNDVI {
				r, v = -1, -1
			}
			return d.launch(l, d.k.toaNDVI, d.grid1D(n), blockThreads, in[0], in[1], int64(nb), n, r, v, o[0], ndviPtr)
		})
	if err != nil {
		return nil, nil, err
	}
	return refl, ndvi, nil
}

// NDVI returns (nir - red) / (nir + red) per pixel in float32, NaN where the sum is
// 0 or an input is NaN: ndviPlane of transforms/raster.
func (d *Device) NDVI(red, nir []float32) ([]float32, error) {
	if len(red) != len(nir) {
		return nil, fmt.Errorf("cuda: ndvi: %d red and %d NIR pixels", len(red), len(nir))
	}
	n := int64(len(red))
	out := make([]float32, n)
	if n == 0 {
		return out, nil
	}
	err := d.run("ndvi", []seg{one(asBytes(red)), one(asBytes(nir))}, []seg{one(asBytes(out))}, 0,
		func(l *lane, in, o []cu.DevicePtr, _ cu.DevicePtr) error {
			return d.launch(l, d.k.ndvi, d.grid1D(n), blockThreads, in[0], in[1], o[0], n)
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Composite returns the RGBA8 pixels (4 bytes per pixel) of the true-colour picture
// of reflectance planes r, g, b (bands 4, 3, 2): per channel c the value stretched
// from [lo[c], hi[c]] to [0, 1], clamped, raised to 1/gamma and scaled to 0..255
// (stretchValue of transforms/raster), alpha 255; a pixel where any channel is NaN is
// 0, 0, 0, 0. A level may differ from the CPU's by one where 255*x^(1/gamma) is within
// an ulp of a half (CUDA's pow and Go's math.Pow round differently).
func (d *Device) Composite(r, g, b []float32, lo, hi [3]float32, gamma float64) ([]uint8, error) {
	if len(g) != len(r) || len(b) != len(r) {
		return nil, fmt.Errorf("cuda: composite: planes of %d, %d and %d pixels", len(r), len(g), len(b))
	}
	if !(gamma > 0) { // as CompositeTile
		return nil, fmt.Errorf("cuda: composite: gamma %g: want a positive number", gamma)
	}
	n := int64(len(r))
	out := make([]uint8, 4*n)
	if n == 0 {
		return out, nil
	}
	inv := 1 / gamma
	err := d.run("composite", []seg{one(asBytes(r)), one(asBytes(g)), one(asBytes(b))}, []seg{one(out)}, 0,
		func(l *lane, in, o []cu.DevicePtr, _ cu.DevicePtr) error {
			return d.launch(l, d.k.composite, d.grid1D(n), blockThreads, in[0], in[1], in[2], n,
				float64(lo[0]), float64(lo[1]), float64(lo[2]), float64(hi[0]), float64(hi[1]), float64(hi[2]),
				inv, o[0])
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}
