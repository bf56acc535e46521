package raster

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"github.com/beamgpu/beamgpu/transforms/step/files"
)

// joinPath joins a directory (a local path or a URL such as gs://b/x) and a
// plain file name.
func joinPath(dir, name string) string {
	return strings.TrimSuffix(dir, "/") + "/" + name
}

// SceneScan is what the scan step learns of a scene from its metadata and
// its bands' headers, before any pixel is decoded: the product, its size,
// and the windows to decode.
type SceneScan struct {
	// Dir is the scene directory.
	Dir string
	// Scene is the product ID (LANDSAT_PRODUCT_ID).
	Scene          string
	SceneW, SceneH int
	TileSize       int
	// RowStrips is SceneRef.RowStrips.
	RowStrips bool
	// Tiles is the number of tiles the windows split into.
	Tiles   int
	Windows []Window
}

// ID implements step.Identifier: the directory.
func (s SceneScan) ID() string { return s.Dir }

// Key implements step.Keyed: the product.
func (s SceneScan) Key() string { return s.Scene }

// Window is one element of a scene to decode: a rectangle, the calibration
// of its bands, and for each band the strips or tiles that cover it. It is
// small (no pixels); the read step decodes it into the DNTiles it covers.
type Window struct {
	Scene          string
	SceneW, SceneH int
	Rect           Rect
	// TileSize is the side of the tiles the window splits into; with
	// RowStrips the window is one tile.
	TileSize     int
	RowStrips    bool
	SunElevation float64
	Cal          []Calibration
	Bands        []BandWindow
}

// BandWindow is one band's part of a Window.
type BandWindow struct {
	Header BandHeader
	Blocks []Block
}

// ID implements step.Identifier.
func (w Window) ID() string { return w.Scene + w.Rect.String() }

// Key implements step.Keyed: the scene.
func (w Window) Key() string { return w.Scene }

// Items implements step.Sized: pixels in the window.
func (w Window) Items() int { return w.Rect.Area() }

// Bytes implements step.Sized: the DNs it decodes to.
func (w Window) Bytes() int { return 2 * w.Rect.Area() * len(w.Bands) }

// TileRects returns the tiles window w splits into, in row-major order.
func (w Window) TileRects() ([]Rect, error) {
	if w.RowStrips {
		return []Rect{w.Rect}, nil
	}
	rects, err := Split(w.Rect.W, w.Rect.H, w.TileSize)
	for i := range rects {
		rects[i].X += w.Rect.X
		rects[i].Y += w.Rect.Y
	}
	return rects, err
}

// check verifies that a window is consistent: inside its scene, one
// calibration and one header of the scene's size per band.
func (w Window) check() error {
	r := w.Rect
	switch {
	case w.SceneW <= 0 || w.SceneH <= 0 || w.SceneW > MaxBandSide || w.SceneH > MaxBandSide:
		return fmt.Errorf("%s: scene size %dx%d out of range", w.ID(), w.SceneW, w.SceneH)
	case r.X < 0 || r.Y < 0 || r.W <= 0 || r.H <= 0 || r.X+r.W > w.SceneW || r.Y+r.H > w.SceneH:
		return fmt.Errorf("%s: window outside the %dx%d scene", w.ID(), w.SceneW, w.SceneH)
	case w.TileSize <= 0 && !w.RowStrips:
		return fmt.Errorf("%s: tile size %d must be positive", w.ID(), w.TileSize)
	case len(w.Bands) == 0 || len(w.Bands) != len(w.Cal):
		return fmt.Errorf("%s: %d bands and %d calibrations", w.ID(), len(w.Bands), len(w.Cal))
	}
	for _, b := range w.Bands {
		if b.Header.Width != w.SceneW || b.Header.Height != w.SceneH {
			return fmt.Errorf("%s: band is %dx%d, the scene %dx%d", b.Header.Name, b.Header.Width, b.Header.Height, w.SceneW, w.SceneH)
		}
	}
	return nil
}

// ScanScene is the CPU implementation of the scan step. It reads the
// scene's _MTL.txt and the headers of the requested bands (never their
// pixels), checks them (plain product and file names inside the scene
// directory, calibrations within bounds, bands of one size within the
// reader's limits) and plans the windows the read step decodes.
func ScanScene(ref SceneRef) (SceneScan, error) {
	ctx := context.Background()
	if len(ref.Bands) == 0 {
		return SceneScan{}, fmt.Errorf("%s: no bands requested", ref.Dir)
	}
	if ref.TileSize <= 0 {
		return SceneScan{}, fmt.Errorf("%s: tile size %d must be positive", ref.Dir, ref.TileSize)
	}
	m, err := readMTL(ctx, ref.Dir)
	if err != nil {
		return SceneScan{}, err
	}
	cal := make([]Calibration, len(ref.Bands))
	layouts := make([]Layout, len(ref.Bands))
	for i, b := range ref.Bands {
		if cal[i], err = m.Calibration(b); err != nil {
			return SceneScan{}, err
		}
		name, err := m.BandFile(b)
		if err != nil {
			return SceneScan{}, err
		}
		if layouts[i], err = readLayoutFile(ctx, joinPath(ref.Dir, name)); err != nil {
			return SceneScan{}, err
		}
		l, first := layouts[i], layouts[0]
		if l.Width != first.Width || l.Height != first.Height {
			return SceneScan{}, fmt.Errorf("%s: band %d is %dx%d but %s is %dx%d: bands of a scene must have one size",
				l.Name, b, l.Width, l.Height, first.Name, first.Width, first.Height)
		}
		if err := checkReflectanceRange(m, cal[i]); err != nil {
			return SceneScan{}, err
		}
	}
	w, h := layouts[0].Width, layouts[0].Height
	rects, err := planWindows(w, h, ref.TileSize, ref.RowStrips, layouts)
	if err != nil {
		return SceneScan{}, fmt.Errorf("%s: %w", ref.Dir, err)
	}
	sc := SceneScan{Dir: ref.Dir, Scene: m.ProductID, SceneW: w, SceneH: h, TileSize: ref.TileSize, RowStrips: ref.RowStrips}
	for _, r := range rects {
		win := Window{Scene: m.ProductID, SceneW: w, SceneH: h, Rect: r, TileSize: ref.TileSize, RowStrips: ref.RowStrips,
			SunElevation: m.SunElevation, Cal: cal}
		for _, l := range layouts {
			win.Bands = append(win.Bands, BandWindow{Header: l.BandHeader, Blocks: l.Covering(r)})
		}
		tiles, err := win.TileRects()
		if err != nil {
			return SceneScan{}, err
		}
		sc.Tiles += len(tiles)
		sc.Windows = append(sc.Windows, win)
	}
	return sc, nil
}

// MaxReflectance bounds the reflectance a scene's calibration may give any
// DN: (MULT * 65535 + |ADD|) / sin(SUN_ELEVATION). Real scenes stay below
// about 3; a larger bound is absurd metadata, and float32 cannot hold what
// unbounded coefficients would give.
const MaxReflectance = 1e4

func checkReflectanceRange(m MTL, c Calibration) error {
	sin := math.Sin(m.SunElevation * math.Pi / 180)
	most := (c.Mult*65535 + math.Abs(c.Add)) / sin
	if !(most <= MaxReflectance) {
		return fmt.Errorf("%s: band %d with SUN_ELEVATION = %g gives reflectances up to %.3g: more than %g, absurd metadata",
			m.Name, c.Band, m.SunElevation, most, float64(MaxReflectance))
	}
	return nil
}

// planWindows chooses the windows of a w x h scene: its tiles when every
// band is tiled in blocks that divide the tile size (a window then decodes
// exactly the blocks of its tile), else bands of tile rows across the whole
// scene (a strip is then decoded once for a row of tiles, not once per tile).
// With rowStrips every window is one such band and one tile.
func planWindows(w, h, tile int, rowStrips bool, layouts []Layout) ([]Rect, error) {
	tiled := !rowStrips
	for _, l := range layouts {
		tiled = tiled && l.Tiled && tile%l.BlockW == 0 && tile%l.BlockH == 0
	}
	if tiled {
		return Split(w, h, tile)
	}
	if w <= 0 || h <= 0 || tile <= 0 {
		return nil, fmt.Errorf("split: scene %dx%d, tile size %d", w, h, tile)
	}
	var out []Rect
	for y := 0; y < h; y += tile {
		out = append(out, Rect{X: 0, Y: y, W: w, H: min(tile, h-y)})
	}
	return out, nil
}

func readMTL(ctx context.Context, dir string) (MTL, error) {
	names, err := files.List(ctx, joinPath(dir, "*_MTL.txt"))
	if err != nil {
		return MTL{}, fmt.Errorf("%s: listing: %w", dir, err)
	}
	switch len(names) {
	case 0:
		return MTL{}, fmt.Errorf("%s: no *_MTL.txt metadata file: not a Landsat scene directory", dir)
	case 1:
	default:
		return MTL{}, fmt.Errorf("%s: %d *_MTL.txt files, want one per scene directory", dir, len(names))
	}
	f, err := files.OpenAt(ctx, names[0])
	if err != nil {
		return MTL{}, fmt.Errorf("%s: %w", names[0], err)
	}
	defer f.Close()
	return ParseMTL(io.NewSectionReader(f, 0, f.Size()), names[0])
}

func readLayoutFile(ctx context.Context, name string) (Layout, error) {
	f, err := files.OpenAt(ctx, name)
	if err != nil {
		return Layout{}, fmt.Errorf("%s: cannot open band: %w", name, err)
	}
	defer f.Close()
	return ReadLayout(f, f.Size(), name)
}

// ReadWindow is the CPU implementation of the read step: it decodes window
// w of every band, the bands in parallel, each from the strips or tiles
// that cover the window only, into the window's tiles.
func ReadWindow(w Window) ([]DNTile, error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	rects, err := w.TileRects()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.ID(), err)
	}
	tiles := make([]DNTile, len(rects))
	for i, r := range rects {
		tiles[i] = DNTile{Scene: w.Scene, SceneW: w.SceneW, SceneH: w.SceneH, Rect: r, SunElevation: w.SunElevation,
			Cal: w.Cal, DN: make([][]uint16, len(w.Bands))}
		for b := range w.Bands {
			tiles[i].DN[b] = make([]uint16, r.Area())
		}
	}
	// Tiles of a window form a grid of cols columns of TileSize pixels.
	cols, side := 1, w.Rect.W
	if !w.RowStrips {
		cols, side = (w.Rect.W+w.TileSize-1)/w.TileSize, w.TileSize
	}
	ctx := context.Background()
	// A goroutine per band; every band is decoded, and the errors are the
	// failing bands', in band order.
	err = parallel.DoErr(len(w.Bands), len(w.Bands), func(b int) error {
		bw := w.Bands[b]
		put := func(y, x0 int, dn []uint16) {
			for len(dn) > 0 {
				col, row := (x0-w.Rect.X)/side, (y-w.Rect.Y)/side
				if w.RowStrips {
					row = 0
				}
				t := &tiles[row*cols+col]
				n := min(len(dn), t.X+t.W-x0)
				copy(t.DN[b][(y-t.Y)*t.W+x0-t.X:], dn[:n])
				dn, x0 = dn[n:], x0+n
			}
		}
		f, err := files.OpenAt(ctx, bw.Header.Name)
		if err != nil {
			return fmt.Errorf("%s: cannot open band: %w", bw.Header.Name, err)
		}
		defer f.Close()
		if f.Size() != bw.Header.Size {
			return fmt.Errorf("%s: the file changed since its header was read (%d bytes, then %d)", bw.Header.Name, bw.Header.Size, f.Size())
		}
		return DecodeWindow(f, bw.Header, bw.Blocks, w.Rect, put)
	})
	if err != nil {
		return nil, err
	}
	return tiles, nil
}

// ReadScene scans a scene and decodes all its windows: the whole scene's
// tiles at once, in row-major order. It is for small scenes and tests; the
// pipelines decode window by window (Read).
func ReadScene(ref SceneRef) ([]DNTile, error) {
	sc, err := ScanScene(ref)
	if err != nil {
		return nil, err
	}
	var out []DNTile
	for _, w := range sc.Windows {
		tiles, err := ReadWindow(w)
		if err != nil {
			return nil, err
		}
		out = append(out, tiles...)
	}
	return out, nil
}
