package raster

import (
	"strings"

	"github.com/beamgpu/beamgpu/transforms/step"
)

// StepAssemble is the step that reassembles the tiles of one plane of one
// scene into the whole-scene plane (no GPU op: it moves memory).
var StepAssemble = step.Register(step.Def[TileGroup, Tile]{
	Name: "assemble",
	Doc:  "reassemble single-plane tiles of one scene into the whole-scene plane",
	CPU:  AssembleGroup,
	Sample: func() TileGroup {
		t, _ := TOA(sampleDNTile())
		b4, _ := t.Select(BandName(4))
		b4.SceneW, b4.SceneH = b4.W, b4.H
		return TileGroup{Name: b4.Scene + "/B4", Tiles: []Tile{b4}}
	},
})

// SplitPlanes splits a tile into one tile per plane, each keyed by
// "scene/plane" (the key the assemble step groups by).
func SplitPlanes(t Tile, emit func(string, Tile)) {
	for i, name := range t.Names {
		one := t
		one.Names, one.Data = []string{name}, [][]float32{t.Data[i]}
		emit(t.Scene+"/"+name, one)
	}
}

// TileGroup is the assemble step's batch: the tiles of one plane of one
// scene, under the key "scene/plane".
type TileGroup struct {
	Name  string
	Tiles []Tile
}

// ID implements step.Identifier.
func (g TileGroup) ID() string { return g.Name }

// Key implements step.Keyed: the scene.
func (g TileGroup) Key() string { scene, _, _ := strings.Cut(g.Name, "/"); return scene }

// Items implements step.Sized.
func (g TileGroup) Items() int {
	n := 0
	for _, t := range g.Tiles {
		n += t.Area()
	}
	return n
}

// Bytes implements step.Sized.
func (g TileGroup) Bytes() int { return 4 * g.Items() }

// AssembleGroup is the CPU implementation of the assemble step.
func AssembleGroup(g TileGroup) (Tile, error) { return Assemble(g.Tiles) }
