package raster

import (
	"context"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// StepAssemble is the name of the step that reassembles tiles into scenes.
const StepAssemble = "assemble"

func init() {
	step.Register(step.Def{
		Step: backendStep(StepAssemble, ""),
		Doc:  "reassemble single-plane tiles of one scene into the whole-scene plane",
		CPU:  AssembleGroup,
		Sample: func() any {
			t, _ := TOA(sampleDNTile())
			b4, _ := t.Select(BandName(4))
			b4.SceneW, b4.SceneH = b4.W, b4.H
			return TileGroup{Name: b4.Scene + "/B4", Tiles: []Tile{b4}}
		},
	})
	register.DoFn5x0[context.Context, string, func(*Tile) bool, func(Tile), func(step.Failure)](&assembleFn{})
	register.Iter1[Tile]()
	register.Function2x0[Tile, func(string, Tile)](keyByScenePlane)
	register.Emitter2[string, Tile]()
}

// AssemblePlanes splits tiles into their planes and reassembles each plane of
// each scene into one whole-scene Tile. Use it at the end of a pipeline,
// where a whole plane is needed (a picture, an array file): the scene is one
// element only from here on.
func AssemblePlanes(s beam.Scope, tiles beam.PCollection, opts ...step.Option) (planes, failed beam.PCollection) {
	s, ex := step.Scope(s, StepAssemble, opts...)
	grouped := beam.GroupByKey(s, beam.ParDo(s, keyByScenePlane, tiles))
	return beam.ParDo2(s, &assembleFn{Exec: ex}, grouped)
}

// keyByScenePlane emits each plane of a tile keyed by "scene/plane".
func keyByScenePlane(t Tile, emit func(string, Tile)) {
	for i, name := range t.Names {
		one := t
		one.Names, one.Data = []string{name}, [][]float32{t.Data[i]}
		emit(t.Scene+"/"+name, one)
	}
}

type assembleFn struct{ step.Exec }

func (f *assembleFn) ProcessElement(ctx context.Context, key string, iter func(*Tile) bool, emit func(Tile), fail func(step.Failure)) {
	g := TileGroup{Name: key}
	var t Tile
	for iter(&t) {
		g.Tiles = append(g.Tiles, t)
		t = Tile{}
	}
	if out, ok := step.Run[TileGroup, Tile](ctx, &f.Exec, g, fail); ok {
		emit(out)
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
