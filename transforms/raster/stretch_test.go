package raster

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every float32 reflectance between lo and hi of a realistic stretch (the
// scene's red channel, gamma 1.4: about 30 million values) and a margin
// around them: the table gives stretchValue's level.
func TestLevelsExhaustive(t *testing.T) {
	if testing.Short() {
		t.Skip("30 million math.Pow calls")
	}
	lo, hi, inv := float32(0.03), float32(0.25), 1/1.4
	tab := newLevels(lo, hi, inv)
	require.NotNil(t, tab)
	from, to := math.Float32bits(lo-0.01), math.Float32bits(hi+0.01)
	chunk := make([]float32, 0, 1<<20)
	pix := make([]uint8, 4<<20)
	vector := 0
	for b := from; b <= to; b++ {
		v := math.Float32frombits(b)
		if got, want := tab.level(v), stretchValue(v, lo, hi, inv); got != want {
			t.Fatalf("v=%v (%#08x): level %d, stretchValue %d", v, b, got, want)
		}
		// The vector kernel on the same values (as the three channels).
		if chunk = append(chunk, v); len(chunk) == cap(chunk) || b == to {
			n := compositeVector(pix, chunk, chunk, chunk, [3]*levels{tab, tab, tab})
			for i, v := range chunk[:n] {
				want := tab.level(v)
				if p := pix[4*i : 4*i+4]; p[0] != want || p[1] != want || p[2] != want || p[3] != 255 {
					t.Fatalf("vector kernel, v=%v (%#08x): pixel %v, want level %d", v, math.Float32bits(v), p, want)
				}
			}
			vector += n
			chunk = chunk[:0]
		}
	}
	t.Logf("%d values, %d of them through the vector kernel too", to-from+1, vector)
}

// The vector kernel and the scalar tables on tiles with NaN, infinite and
// out-of-range values, ragged lengths: the bytes of the stretchValue loop.
func TestCompositeVectorEqualsScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	st := Stretch{Lo: []float32{0.03, 0.04, 0.06}, Hi: []float32{0.25, 0.2, 0.18}, Gamma: 1.4}
	for _, n := range []int{1, 15, 16, 17, 1000, 4099} {
		tile := Tile{Scene: "s", SceneW: n, SceneH: 1, Rect: Rect{W: n, H: 1}}
		for _, b := range []int{4, 3, 2} {
			p := make([]float32, n)
			for i := range p {
				switch r.IntN(20) {
				case 0:
					p[i] = nan32
				case 1:
					p[i] = float32(math.Inf(1 - 2*r.IntN(2)))
				default:
					p[i] = float32(0.4*r.Float64() - 0.1)
				}
			}
			tile.Names, tile.Data = append(tile.Names, BandName(b)), append(tile.Data, p)
		}
		in := CompositeInput{Tile: tile, Stretch: st}
		want := compositeReference(in)
		for _, w := range widths() {
			withWidth(w, 0, func() {
				got, err := CompositeTile(in)
				require.NoError(t, err)
				require.Equal(t, want, got.Pix, "n=%d width %d", n, w)
			})
		}
	}
}

// Random stretches and gammas, including extreme ones (many thresholds in a
// bucket): the values around every threshold, random values and the
// special ones.
func TestLevelsMatchStretchValue(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 1, -1}
	gammas := []float64{1.4, 1, 0.5, 2.2, 3, 0.05, 20, 1e5}
	multi := 0
	for i := range 60 {
		lo := float32(0.3*r.Float64() - 0.1)
		hi := lo + float32(0.01+r.Float64())
		if i%10 == 0 {
			hi = lo + float32(1e-6*r.Float64()) // a narrow stretch
		}
		g := gammas[i%len(gammas)]
		if i >= len(gammas) {
			g = 0.3 + 3*r.Float64()
		}
		inv := 1 / g
		tab := newLevels(lo, hi, inv)
		require.NotNil(t, tab, "lo=%v hi=%v gamma=%v", lo, hi, g)
		for _, m := range tab.multi {
			if m {
				multi++
			}
		}
		check := func(v float32) {
			if got, want := tab.level(v), stretchValue(v, lo, hi, inv); got != want {
				t.Fatalf("lo=%v hi=%v gamma=%v v=%v (%#08x): level %d, stretchValue %d", lo, hi, g, v, math.Float32bits(v), got, want)
			}
		}
		for l := 1; l <= 255; l++ {
			b := math.Float32bits(lo + tab.thr[l])
			for db := -3; db <= 3; db++ {
				check(math.Float32frombits(uint32(int64(b) + int64(db))))
			}
		}
		for range 20000 {
			check(lo + (hi-lo)*float32(1.2*r.Float64()-0.1))
		}
		for _, v := range append(special, lo, hi) {
			check(v)
		}
	}
	require.Positive(t, multi, "no bucket with several thresholds: the slow path was not tested")
}

func TestLevelsNotApplicable(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		lo, hi float32
		inv    float64
	}{{0.2, 0.1, 1}, {0.1, 0.1, 1}, {nan, 0.1, 1}, {0, nan, 1}, {-inf, 0, 1}, {0, inf, 1}, {0, 1, 1e-7}, {0, 1, math.Inf(1)}, {0, 1, math.NaN()}} {
		require.Nil(t, newLevels(c.lo, c.hi, c.inv), "%+v", c)
	}
}

// The composite through the tables gives the bytes of the per-pixel
// stretchValue loop, NaN pixels included, and falls back to that loop on a
// stretch the tables do not take.
func TestCompositeLevelsEqualsStretchValue(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		in := stepSampleComposite(seed)
		got, err := CompositeTile(in)
		require.NoError(t, err)
		want := compositeReference(in)
		require.Equal(t, want, got.Pix, "seed %d", seed)
	}
	in := stepSampleComposite(1)
	in.Stretch.Hi[1] = in.Stretch.Lo[1] // hi <= lo: no table
	got, err := CompositeTile(in)
	require.NoError(t, err)
	require.Equal(t, compositeReference(in), got.Pix)
}

// stepSampleComposite is the composite step's random sample (a tile with
// NaN no-data pixels and a random stretch).
func stepSampleComposite(seed uint64) CompositeInput { return StepComposite.Def().Random(seed) }

// compositeReference is the per-pixel loop with stretchValue.
func compositeReference(in CompositeInput) []uint8 {
	var ch [3][]float32
	for c, b := range compositeBands {
		ch[c], _ = in.Tile.Plane(BandName(b))
	}
	pix := make([]uint8, 4*in.Tile.Area())
	inv := 1 / in.Stretch.Gamma
	for i := range in.Tile.Area() {
		r, g, b := ch[0][i], ch[1][i], ch[2][i]
		if r != r || g != g || b != b {
			continue
		}
		for c, v := range [3]float32{r, g, b} {
			pix[4*i+c] = stretchValue(v, in.Stretch.Lo[c], in.Stretch.Hi[c], inv)
		}
		pix[4*i+3] = 255
	}
	return pix
}
