package raster

import (
	"fmt"
	"sort"
)

// Split covers a w x h scene with tiles of at most size x size pixels, in
// row-major order. The last row and column of tiles are smaller when size
// does not divide the scene.
func Split(w, h, size int) ([]Rect, error) {
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("split: scene size %dx%d must be positive", w, h)
	}
	if size <= 0 {
		return nil, fmt.Errorf("split: tile size %d must be positive", size)
	}
	var out []Rect
	for y := 0; y < h; y += size {
		for x := 0; x < w; x += size {
			out = append(out, Rect{X: x, Y: y, W: min(size, w-x), H: min(size, h-y)})
		}
	}
	return out, nil
}

// Assemble puts single-plane tiles of one scene back into a whole-scene
// tile. It fails unless the tiles are of one scene and plane, lie inside the
// scene, do not overlap and cover it exactly.
func Assemble(tiles []Tile) (Tile, error) {
	if len(tiles) == 0 {
		return Tile{}, fmt.Errorf("assemble: no tiles")
	}
	first := tiles[0]
	if len(first.Names) != 1 {
		return Tile{}, fmt.Errorf("assemble: %s: want one plane per tile, got %v", first.ID(), first.Names)
	}
	sw, sh := first.SceneW, first.SceneH
	if sw <= 0 || sh <= 0 || sw*sh > maxPixels {
		return Tile{}, fmt.Errorf("assemble: %s: scene size %dx%d out of range", first.ID(), sw, sh)
	}
	out := Tile{Scene: first.Scene, SceneW: sw, SceneH: sh, Rect: Rect{W: sw, H: sh},
		Names: first.Names, Data: [][]float32{make([]float32, sw*sh)}}
	sorted := append([]Tile(nil), tiles...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i].Rect, sorted[j].Rect
		return a.Y < b.Y || a.Y == b.Y && a.X < b.X
	})
	covered := 0
	var prev Rect
	for i, t := range sorted {
		switch {
		case t.Scene != first.Scene || t.SceneW != sw || t.SceneH != sh:
			return Tile{}, fmt.Errorf("assemble: %s does not belong to scene %s (%dx%d)", t.ID(), first.Scene, sw, sh)
		case len(t.Names) != 1 || t.Names[0] != first.Names[0]:
			return Tile{}, fmt.Errorf("assemble: %s holds %v, want %v", t.ID(), t.Names, first.Names)
		case t.X < 0 || t.Y < 0 || t.W <= 0 || t.H <= 0 || t.X+t.W > sw || t.Y+t.H > sh:
			return Tile{}, fmt.Errorf("assemble: %s lies outside the %dx%d scene", t.ID(), sw, sh)
		case len(t.Data[0]) != t.Area():
			return Tile{}, fmt.Errorf("assemble: %s has %d pixels, want %d", t.ID(), len(t.Data[0]), t.Area())
		case i > 0 && t.Rect == prev:
			return Tile{}, fmt.Errorf("assemble: tile %s appears twice", t.ID())
		}
		prev = t.Rect
		dst := out.Data[0]
		for y := 0; y < t.H; y++ {
			copy(dst[(t.Y+y)*sw+t.X:(t.Y+y)*sw+t.X+t.W], t.Data[0][y*t.W:(y+1)*t.W])
		}
		covered += t.Area()
	}
	if covered != sw*sh {
		return Tile{}, fmt.Errorf("assemble: scene %s: tiles cover %d of %d pixels (missing or overlapping tiles)", first.Scene, covered, sw*sh)
	}
	if err := checkOverlap(sorted); err != nil {
		return Tile{}, err
	}
	return out, nil
}

// checkOverlap reports the first pair of overlapping tiles (sorted by Y, X).
// With exact coverage in pixel count, no overlap means an exact tiling.
func checkOverlap(sorted []Tile) error {
	for i := range sorted {
		a := sorted[i].Rect
		for j := i + 1; j < len(sorted); j++ {
			b := sorted[j].Rect
			if b.Y >= a.Y+a.H {
				break
			}
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				return fmt.Errorf("assemble: tiles %s and %s overlap", sorted[i].ID(), sorted[j].ID())
			}
		}
	}
	return nil
}
