package raster

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The memo returns stretchValue exactly, across calls with other stretches
// (a pooled memo is cleared when the stretch changes) and for values that
// collide in its table.
func TestCompositeMemoIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	for round := 0; round < 6; round++ {
		st := Stretch{Scene: "s", Gamma: 0.5 + 2*r.Float64()}
		for c := 0; c < 3; c++ {
			lo := float32(0.2 * r.Float64())
			st.Lo, st.Hi = append(st.Lo, lo), append(st.Hi, lo+0.05+float32(r.Float64()))
		}
		if round%3 == 2 {
			st.Hi[1] = st.Lo[1] // a degenerate channel
		}
		const n = 50000
		tile := Tile{Scene: "s", SceneW: n, SceneH: 1, Rect: Rect{W: n, H: 1}, Names: []string{"B2", "B3", "B4"}}
		distinct := make([]float32, 3000)
		for i := range distinct {
			distinct[i] = float32(-0.1 + 1.4*r.Float64())
		}
		distinct[0], distinct[1] = float32(math.Inf(1)), float32(math.Inf(-1))
		for c := 0; c < 3; c++ {
			p := make([]float32, n)
			for i := range p {
				p[i] = distinct[r.IntN(len(distinct))]
			}
			tile.Data = append(tile.Data, p)
		}
		out, err := CompositeTile(CompositeInput{Tile: tile, Stretch: st})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			for c, b := range compositeBands {
				p, _ := tile.Plane(BandName(b))
				if want := stretchValue(p[i], st.Lo[c], st.Hi[c], 1/st.Gamma); out.Pix[4*i+c] != want {
					t.Fatalf("round %d pixel %d channel %d: %d, stretchValue gives %d", round, i, c, out.Pix[4*i+c], want)
				}
			}
		}
	}
}
