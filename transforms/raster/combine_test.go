package raster_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// StatsCombiner gives, for tiles in any order and grouping, the statistics
// Stats gives for the whole plane: counts, minimum and maximum exactly, and
// the mean from the exact sum (so the same whatever the order).
func TestStatsCombinerMatchesWholePlane(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	const w, h = 70, 45
	plane := make([]float32, w*h)
	for i := range plane {
		switch r.IntN(10) {
		case 0:
			plane[i] = float32(math.NaN())
		case 1:
			plane[i] = float32(r.NormFloat64() * 1e-30) // tiny: a float64 running sum drops them
		default:
			plane[i] = float32(r.NormFloat64() * 1e6)
		}
	}
	whole := raster.Stats(raster.Tile{Scene: "s", SceneW: w, SceneH: h, Rect: raster.Rect{W: w, H: h}, Names: []string{"B4"}, Data: [][]float32{plane}})
	var exact float64
	{
		var s raster.ExactSum
		for _, v := range plane {
			if v == v {
				s.Add(v)
			}
		}
		exact = s.Float64()
	}
	c := raster.StatsCombiner{}
	var results []raster.PlaneStats
	for _, size := range []int{7, 16, 70} {
		rects, err := raster.Split(w, h, size)
		require.NoError(t, err)
		r.Shuffle(len(rects), func(i, j int) { rects[i], rects[j] = rects[j], rects[i] })
		accs := []*raster.SceneStatsAcc{c.CreateAccumulator(), c.CreateAccumulator()}
		for i, rc := range rects {
			p := make([]float32, 0, rc.Area())
			for y := rc.Y; y < rc.Y+rc.H; y++ {
				p = append(p, plane[y*w+rc.X:y*w+rc.X+rc.W]...)
			}
			accs[i%2] = c.AddInput(accs[i%2], raster.Tile{Scene: "s", SceneW: w, SceneH: h, Rect: rc, Names: []string{"B4"}, Data: [][]float32{p}})
		}
		out := c.ExtractOutput(c.MergeAccumulators(accs[1], accs[0]))
		st, ok := out.Plane("B4")
		require.True(t, ok)
		results = append(results, st)
		assert.Equal(t, []int{whole.Pixels, whole.Valid, whole.NoData}, []int{st.Pixels, st.Valid, st.NoData})
		assert.Equal(t, whole.Min, st.Min)
		assert.Equal(t, whole.Max, st.Max)
		assert.Equal(t, exact/float64(whole.Valid), st.Mean, "tiles of %d", size)
		assert.InEpsilon(t, whole.Mean, st.Mean, 1e-12)
	}
	assert.Equal(t, results[0], results[1])
	assert.Equal(t, results[0], results[2])
}

// ExactSum is exact: a sum that cancels to the smallest float32 keeps it.
func TestExactSum(t *testing.T) {
	var s raster.ExactSum
	tiny := math.Float32frombits(1) // 2^-149
	for _, v := range []float32{3e38, tiny, -3e38, 1, -1, tiny} {
		s.Add(v)
	}
	assert.Equal(t, 2*float64(tiny), s.Float64())
	s.Add(float32(math.Inf(1)))
	assert.True(t, math.IsInf(s.Float64(), 1))
	s.Add(float32(math.Inf(-1)))
	assert.True(t, math.IsNaN(s.Float64()))
}

// A large tile's planes are added on goroutines of their own; a tile with
// two planes of one name adds both to one accumulator, in turn, as a small
// tile does.
func TestStatsCombinerLargeTiles(t *testing.T) {
	const side = 512
	plane := func(v float32) []float32 {
		p := make([]float32, side*side)
		for i := range p {
			p[i] = v + float32(i%7)
		}
		return p
	}
	tile := raster.Tile{Scene: "s", SceneW: side, SceneH: side, Rect: raster.Rect{W: side, H: side},
		Names: []string{"B4", "B5", "ndvi"}, Data: [][]float32{plane(1), plane(2), plane(3)}}
	var c raster.StatsCombiner
	st := c.ExtractOutput(c.AddInput(c.CreateAccumulator(), tile))
	require.Len(t, st.Planes, 3)
	for i, p := range st.Planes {
		assert.Equal(t, tile.Names[i], p.Plane)
		assert.Equal(t, side*side, p.Valid)
		assert.Equal(t, float64(i+1), p.Min)
		assert.Equal(t, float64(i+7), p.Max)
	}
	dup := tile
	dup.Names = []string{"B4", "B4", "ndvi"}
	st = c.ExtractOutput(c.AddInput(c.CreateAccumulator(), dup))
	require.Len(t, st.Planes, 2)
	assert.Equal(t, 2*side*side, st.Planes[0].Valid)
	assert.Equal(t, 1.0, st.Planes[0].Min)
	assert.Equal(t, 8.0, st.Planes[0].Max)
}
