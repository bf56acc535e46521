package raster

import (
	"fmt"
	"math"
)

// Rect is a window of a scene in pixels: X, Y is its top-left corner.
type Rect struct {
	X, Y, W, H int
}

// Area returns W*H.
func (r Rect) Area() int { return r.W * r.H }

func (r Rect) String() string { return fmt.Sprintf("(%d,%d %dx%d)", r.X, r.Y, r.W, r.H) }

// SceneRef names one scene to read: a directory holding its _MTL.txt and band files.
type SceneRef struct {
	Dir string
	// TileSize is the side of the square tiles the scene is split into.
	TileSize int
	// Bands are the band numbers to read (e.g. 2, 3, 4, 5).
	Bands []int
	// RowStrips makes the tiles full-width bands of TileSize rows instead
	// of squares: each is then a contiguous run of a row-major plane (for
	// outputs on object stores, which are written in whole objects).
	RowStrips bool
}

// ID implements step.Identifier.
func (r SceneRef) ID() string { return r.Dir }

// Key implements step.Keyed: a scene that cannot be read is known by its directory.
func (r SceneRef) Key() string { return r.Dir }

// Calibration holds one band's reflectance rescaling coefficients from the MTL.
type Calibration struct {
	Band int
	Mult float64
	Add  float64
}

// DNTile is a window of a scene as read: raw digital numbers for several
// bands, with what is needed to calibrate them.
type DNTile struct {
	Scene          string // product ID, e.g. LC08_L1TP_195025_20130707_20170503_01_T1
	SceneW, SceneH int
	Rect
	SunElevation float64 // degrees
	Cal          []Calibration
	DN           [][]uint16 // one plane per band in Cal order, Rect.W*Rect.H, row-major
}

// ID implements step.Identifier.
func (t DNTile) ID() string { return t.Scene + t.Rect.String() }

// Key implements step.Keyed: the scene.
func (t DNTile) Key() string { return t.Scene }

// Items implements step.Sized: pixels in the window.
func (t DNTile) Items() int { return t.Area() }

// Bytes implements step.Sized.
func (t DNTile) Bytes() int { return 2 * t.Area() * len(t.DN) }

// Tile is a window of a scene holding named float32 planes (reflectance
// bands "B2".."B5", or "NDVI"), NaN for no-data.
type Tile struct {
	Scene          string
	SceneW, SceneH int
	Rect
	Names []string
	Data  [][]float32 // one plane per name, Rect.W*Rect.H, row-major
}

// ID implements step.Identifier.
func (t Tile) ID() string { return t.Scene + t.Rect.String() }

// Key implements step.Keyed: the scene.
func (t Tile) Key() string { return t.Scene }

// Items implements step.Sized.
func (t Tile) Items() int { return t.Area() }

// Bytes implements step.Sized.
func (t Tile) Bytes() int { return 4 * t.Area() * len(t.Data) }

// Plane returns the plane called name, or an error naming the tile.
func (t Tile) Plane(name string) ([]float32, error) {
	for i, n := range t.Names {
		if n == name {
			return t.Data[i], nil
		}
	}
	return nil, fmt.Errorf("%s: no plane %q (have %v)", t.ID(), name, t.Names)
}

// Select returns a tile holding only the named plane (sharing its data).
func (t Tile) Select(name string) (Tile, error) {
	p, err := t.Plane(name)
	if err != nil {
		return Tile{}, err
	}
	out := t
	out.Names, out.Data = []string{name}, [][]float32{p}
	return out, nil
}

// RGBATile is a window of an 8-bit picture: R, G, B, A per pixel, A = 0 for no-data.
type RGBATile struct {
	Scene          string
	SceneW, SceneH int
	Rect
	Pix []uint8 // 4*Rect.W*Rect.H
}

// ID implements step.Identifier.
func (t RGBATile) ID() string { return t.Scene + t.Rect.String() }

// Key implements step.Keyed: the scene.
func (t RGBATile) Key() string { return t.Scene }

// Items implements step.Sized.
func (t RGBATile) Items() int { return t.Area() }

// Bytes implements step.Sized.
func (t RGBATile) Bytes() int { return len(t.Pix) }

// checkPlanes verifies that every plane has the window's pixel count.
func checkPlanes[T any](id string, r Rect, planes [][]T) error {
	for i, p := range planes {
		if len(p) != r.Area() {
			return fmt.Errorf("%s: plane %d has %d pixels, window %dx%d needs %d", id, i, len(p), r.W, r.H, r.Area())
		}
	}
	return nil
}

var nan32 = float32(math.NaN())
