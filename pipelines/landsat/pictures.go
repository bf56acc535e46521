package main

import (
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"

	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/pipelines/internal/pngstream"
	"github.com/beamgpu/beamgpu/transforms/raster"
)

// The pictures are built from the written array files, a strip of rows at
// a time, never from a whole plane in memory: image/png asks a stripImage
// for its pixels row by row, and the stripImage fills a strip of rows when
// the encoder reaches it.

// maxPreviewSide is the longest side of truecolor_preview.png.
const maxPreviewSide = 2048

// stripRows is the number of rows per strip of a w pixels wide picture:
// about a 512 x 512 tile's pixels.
func stripRows(w int) int { return max(1, 512*512/w) }

// stripImage is an image.Image whose rows are produced in order, a strip at
// a time, by fill (8-bit non-premultiplied RGBA, as image.NRGBA's Pix).
// Opaque is declared, not computed, so that the encoder does not read the
// picture twice.
type stripImage struct {
	w, h, rows int
	opaque     bool
	fill       func(y0, n int, pix []uint8) error

	y0, n int
	pix   []uint8
	err   error
}

func (m *stripImage) ColorModel() color.Model { return color.NRGBAModel }
func (m *stripImage) Bounds() image.Rectangle { return image.Rect(0, 0, m.w, m.h) }
func (m *stripImage) Opaque() bool            { return m.opaque }

func (m *stripImage) At(x, y int) color.Color {
	if y < m.y0 || y >= m.y0+m.n {
		if m.err == nil && y != m.y0+m.n {
			m.err = fmt.Errorf("picture rows asked out of order (row %d after %d)", y, m.y0+m.n-1)
		}
		if m.err == nil {
			m.y0, m.n = y, min(m.rows, m.h-y)
			if cap(m.pix) < 4*m.w*m.n {
				m.pix = make([]uint8, 4*m.w*m.n)
			}
			m.pix = m.pix[:4*m.w*m.n]
			m.err = m.fill(m.y0, m.n, m.pix)
		}
	}
	if m.err != nil {
		return color.NRGBA{}
	}
	i := 4 * ((y-m.y0)*m.w + x)
	return color.NRGBA{m.pix[i], m.pix[i+1], m.pix[i+2], m.pix[i+3]}
}

// bigPicture is the size in pixels above which pictures are written by
// package pngstream: strips compressed on all cores at zlib's fastest level.
// image/png, on one core and asking for each pixel through At, took about
// 7 s for a full-size scene's picture at that level (17 s at the default).
// Smaller pictures keep image/png at the default level (and the bytes it
// writes for an in-memory picture).
const bigPicture = 4096 * 4096

// writePNG encodes m into path; an error of m's fill fails it.
func writePNG(ctx context.Context, run, path string, m *stripImage) error {
	return jobfiles.WriteFile(ctx, run, path, func(w io.Writer) error {
		if m.w*m.h > bigPicture {
			return pngstream.Encode(w, m.w, m.h, m.rows, m.opaque, flate.BestSpeed, m.fill)
		}
		if err := png.Encode(w, m); err != nil {
			return err
		}
		return m.err
	})
}

// ndviImage is ndvi.png of a scene: NDVIColor of each pixel of ndvi.npy.
func ndviImage(p *planeRows, w, h int, opaque bool) *stripImage {
	vals := make([]float32, w*stripRows(w))
	return &stripImage{w: w, h: h, rows: stripRows(w), opaque: opaque, fill: func(y0, n int, pix []uint8) error {
		v := vals[:w*n]
		if err := p.next(v); err != nil {
			return fmt.Errorf("reading NDVI rows %d to %d: %w", y0, y0+n-1, err)
		}
		for i, x := range v {
			c := raster.NDVIColor(x)
			pix[4*i], pix[4*i+1], pix[4*i+2], pix[4*i+3] = c.R, c.G, c.B, c.A
		}
		return nil
	}}
}

// writeTrueColor writes truecolor.png of a scene: composite (the composite
// step) of strips of its B4, B3 and B2 planes with the scene's stretch.
// Composite runs on the calling goroutine (it updates Beam metrics), the
// PNG encoder on another, a strip behind; each strip also goes into prev.
func writeTrueColor(ctx context.Context, run, path, scene string, planes map[string]*planeRows, w, h int, opaque bool,
	st raster.Stretch, composite func(raster.CompositeInput) (raster.RGBATile, error), prev *preview) error {
	rows := stripRows(w)
	strips := make(chan []uint8, 2)
	encoded := make(chan error, 1)
	go func() {
		encoded <- writePNG(ctx, run, path, &stripImage{w: w, h: h, rows: rows, opaque: opaque, fill: func(y0, n int, pix []uint8) error {
			got, ok := <-strips
			if !ok || len(got) != len(pix) {
				return fmt.Errorf("true-colour rows %d to %d were not made", y0, y0+n-1)
			}
			copy(pix, got)
			return nil
		}})
	}()
	names := []string{"B2", "B3", "B4"}
	bufs := make([][]float32, len(names))
	var err error
	for y0 := 0; y0 < h && err == nil; y0 += rows {
		n := min(rows, h-y0)
		t := raster.Tile{Scene: scene, SceneW: w, SceneH: h, Rect: raster.Rect{X: 0, Y: y0, W: w, H: n}, Names: names}
		for i, name := range names {
			bufs[i] = make([]float32, w*n) // the composite's input may be kept by an executor client
			if err = planes[name].next(bufs[i]); err != nil {
				err = fmt.Errorf("reading %s rows %d to %d: %w", name, y0, y0+n-1, err)
				break
			}
			t.Data = append(t.Data, bufs[i])
		}
		var out raster.RGBATile
		if err == nil {
			out, err = composite(raster.CompositeInput{Tile: t, Stretch: st})
		}
		if err == nil && len(out.Pix) != 4*w*n {
			err = fmt.Errorf("composite of rows %d to %d gave %d bytes, want %d", y0, y0+n-1, len(out.Pix), 4*w*n)
		}
		if err != nil {
			break
		}
		prev.add(y0, n, out.Pix)
		select {
		case strips <- out.Pix:
		case err = <-encoded: // the encoder stopped early
			encoded <- err
			if err == nil {
				err = fmt.Errorf("%s: the encoder stopped at row %d", path, y0)
			}
		}
	}
	close(strips)
	return errors.Join(err, <-encoded)
}

// preview is truecolor_preview.png: the true-colour picture reduced by a
// whole factor to at most maxPreviewSide pixels a side, each pixel the mean
// of the valid pixels of its block (transparent where it has none).
type preview struct {
	f, w, h int
	img     *image.NRGBA
	sum     []uint32 // r, g, b per preview column of the current row
	count   []uint32
}

func newPreview(w, h int) *preview {
	f := max(1, (max(w, h)+maxPreviewSide-1)/maxPreviewSide)
	pw, ph := (w+f-1)/f, (h+f-1)/f
	return &preview{f: f, w: w, h: h, img: image.NewNRGBA(image.Rect(0, 0, pw, ph)),
		sum: make([]uint32, 3*pw), count: make([]uint32, pw)}
}

// add accumulates rows y0..y0+n-1 (NRGBA) of the full picture.
func (p *preview) add(y0, n int, pix []uint8) {
	for r := 0; r < n; r++ {
		row := pix[4*r*p.w : 4*(r+1)*p.w]
		for x := 0; x < p.w; x++ {
			if row[4*x+3] == 0 {
				continue
			}
			c := x / p.f
			p.sum[3*c] += uint32(row[4*x])
			p.sum[3*c+1] += uint32(row[4*x+1])
			p.sum[3*c+2] += uint32(row[4*x+2])
			p.count[c]++
		}
		if y := y0 + r; (y+1)%p.f == 0 || y == p.h-1 {
			p.flush(y / p.f)
		}
	}
}

func (p *preview) flush(py int) {
	for c, n := range p.count {
		if n > 0 {
			px := p.img.Pix[p.img.PixOffset(c, py):]
			px[0] = uint8((p.sum[3*c] + n/2) / n)
			px[1] = uint8((p.sum[3*c+1] + n/2) / n)
			px[2] = uint8((p.sum[3*c+2] + n/2) / n)
			px[3] = 255
		}
		p.sum[3*c], p.sum[3*c+1], p.sum[3*c+2], p.count[c] = 0, 0, 0, 0
	}
}

// writeImagePNG writes an in-memory picture.
func writeImagePNG(ctx context.Context, run, path string, img image.Image) error {
	return jobfiles.WriteFile(ctx, run, path, func(w io.Writer) error { return png.Encode(w, img) })
}
