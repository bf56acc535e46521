package raster

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/beamgpu/beamgpu/transforms/step"
)

// CompositeParams configures the true-colour composite.
type CompositeParams struct {
	// Low and High are the percentiles of each channel's valid pixels over
	// the whole scene that map to 0 and 255. Defaults 2 and 98.
	Low, High float64
	// Gamma brightens the stretched value v in [0, 1] as v^(1/Gamma). Default 1.4.
	Gamma float64
}

// DefaultCompositeParams are the defaults of the composite.
var DefaultCompositeParams = CompositeParams{Low: 2, High: 98, Gamma: 1.4}

// WithDefaults returns p, or DefaultCompositeParams if p is zero.
func (p CompositeParams) WithDefaults() CompositeParams {
	if p == (CompositeParams{}) {
		return DefaultCompositeParams
	}
	return p
}

// Validate reports whether the parameters make sense.
func (p CompositeParams) Validate() error {
	if !(p.Low >= 0 && p.Low < p.High && p.High <= 100) {
		return fmt.Errorf("composite: percentiles low=%g high=%g: want 0 <= low < high <= 100", p.Low, p.High)
	}
	if !(p.Gamma > 0) || math.IsInf(p.Gamma, 0) {
		return fmt.Errorf("composite: gamma %g: want a positive number", p.Gamma)
	}
	return nil
}

// Stretch is one scene's contrast stretch: reflectance Lo[c]..Hi[c] of
// channel c (red, green, blue) maps to 0..1, then v^(1/Gamma) to 0..255.
type Stretch struct {
	Scene  string
	Lo, Hi []float32
	Gamma  float64
}

// CompositeInput is the composite step's batch: a reflectance tile (planes
// B4, B3, B2) and its scene's stretch.
type CompositeInput struct {
	Tile    Tile
	Stretch Stretch
}

// ID implements step.Identifier.
func (c CompositeInput) ID() string { return c.Tile.ID() }

// Key implements step.Keyed.
func (c CompositeInput) Key() string { return c.Tile.Scene }

// Items implements step.Sized.
func (c CompositeInput) Items() int { return c.Tile.Items() }

// Bytes implements step.Sized.
func (c CompositeInput) Bytes() int { return c.Tile.Bytes() }

// compositeBands are the bands of the red, green and blue channels.
var compositeBands = [3]int{4, 3, 2}

// StepComposite is the true-colour composite step: a reflectance tile
// (planes B4, B3, B2) and its scene's stretch to an 8-bit RGBA picture tile.
var StepComposite = step.Register(step.Def[CompositeInput, RGBATile]{
	Name: "composite",
	Doc:  "true-colour (B4, B3, B2) picture with a percentile contrast stretch and gamma, 8-bit RGBA",
	CPU:  CompositeTile,
	GPU: &step.GPU[CompositeInput, RGBATile]{Op: "raster.composite", Hints: gpuHints,
		In: CompositeInputCodec, Out: RGBATileCodec,
		Split: func(in CompositeInput) (CompositeInput, CompositeInput, bool) {
			a, b, ok := splitTile(in.Tile)
			return CompositeInput{Tile: a, Stretch: in.Stretch}, CompositeInput{Tile: b, Stretch: in.Stretch}, ok
		},
		Merge: mergeRGBA},
	Sample: func() CompositeInput {
		t, _ := TOA(sampleDNTile())
		return CompositeInput{Tile: t, Stretch: Stretch{Scene: t.Scene, Lo: []float32{0.02, 0.03, 0.05}, Hi: []float32{0.2, 0.2, 0.2}, Gamma: 1.4}}
	},
	Random: func(seed uint64) CompositeInput {
		t, _ := TOA(randomDNTile(seed))
		r := rand.New(rand.NewPCG(seed, 2))
		st := Stretch{Scene: t.Scene, Gamma: 0.5 + 2.5*r.Float64()}
		for c := 0; c < 3; c++ {
			lo := float32(0.3 * r.Float64())
			st.Lo, st.Hi = append(st.Lo, lo), append(st.Hi, lo+0.01+float32(r.Float64()))
		}
		return CompositeInput{Tile: t, Stretch: st}
	},
	// 8-bit output rounded from floats: a GPU's pow may land on the
	// other side of a .5 by an ulp.
	Tolerance: step.Tolerance{IntDiff: 1},
})

// CompositeTile is the CPU implementation of the composite step. A pixel
// where any channel is NaN is transparent black (no-data).
func CompositeTile(in CompositeInput) (RGBATile, error) {
	t, st := in.Tile, in.Stretch
	if err := checkPlanes(t.ID(), t.Rect, t.Data); err != nil {
		return RGBATile{}, err
	}
	if len(st.Lo) != 3 || len(st.Hi) != 3 || !(st.Gamma > 0) {
		return RGBATile{}, fmt.Errorf("%s: invalid stretch %+v", t.ID(), st)
	}
	var ch [3][]float32
	for c, b := range compositeBands {
		p, err := t.Plane(BandName(b))
		if err != nil {
			return RGBATile{}, err
		}
		ch[c] = p
	}
	out := RGBATile{Scene: t.Scene, SceneW: t.SceneW, SceneH: t.SceneH, Rect: t.Rect, Pix: make([]uint8, 4*t.Area())}
	inv := 1 / st.Gamma
	if compositeLevels(out.Pix, ch, st, inv) {
		return out, nil
	}
	for i := 0; i < t.Area(); i++ {
		r, g, b := ch[0][i], ch[1][i], ch[2][i]
		if r != r || g != g || b != b { // NaN: no-data
			continue
		}
		for c, v := range [3]float32{r, g, b} {
			out.Pix[4*i+c] = stretchValue(v, st.Lo[c], st.Hi[c], inv)
		}
		out.Pix[4*i+3] = 255
	}
	return out, nil
}

// stretchValue maps v from [lo, hi] to [0, 255] with gamma exponent inv.
func stretchValue(v, lo, hi float32, inv float64) uint8 {
	x := float64(v-lo) / float64(hi-lo)
	if x <= 0 || hi <= lo {
		return 0
	}
	if x >= 1 {
		return 255
	}
	return uint8(math.Round(255 * math.Pow(x, inv)))
}

// Histogram bins of reflectance for the percentile stretch: HistBins bins
// over [HistLo, HistHi); values outside go to the end bins. The bin width
// (0.00024 reflectance) is finer than one output level of any usable stretch.
const (
	HistBins = 8192
	HistLo   = -0.2
	HistHi   = 1.8
)

// Histogram counts the valid pixels of the three composite channels of one scene.
type Histogram struct {
	Scene  string
	Counts []int64 // 3*HistBins: red, green, blue
}

// HistogramFn is the combiner of a scene's histogram and its stretch (Beam's
// CombineFn methods; package rasterbeam registers and applies it).
type HistogramFn struct {
	Params CompositeParams
}

// CreateAccumulator returns an empty histogram.
func (f *HistogramFn) CreateAccumulator() *Histogram {
	return &Histogram{Counts: make([]int64, 3*HistBins)}
}

// AddInput counts the valid pixels of t's composite channels.
func (f *HistogramFn) AddInput(h *Histogram, t Tile) *Histogram {
	h.Scene = t.Scene
	eachPlane(len(compositeBands), t.Area(), func(c int) {
		p, err := t.Plane(BandName(compositeBands[c]))
		if err != nil {
			return // the composite step reports the missing plane
		}
		counts := h.Counts[c*HistBins : (c+1)*HistBins]
		for _, v := range p {
			if v == v {
				counts[histBin(v)]++
			}
		}
	})
	return h
}

func histBin(v float32) int {
	i := int(math.Floor((float64(v) - HistLo) / (HistHi - HistLo) * HistBins))
	return max(0, min(HistBins-1, i))
}

// MergeAccumulators adds b's counts to a's.
func (f *HistogramFn) MergeAccumulators(a, b *Histogram) *Histogram {
	if a.Scene == "" {
		a.Scene = b.Scene
	}
	for i, n := range b.Counts {
		a.Counts[i] += n
	}
	return a
}

// ExtractOutput is the scene's stretch: the Low and High percentiles of each
// channel.
func (f *HistogramFn) ExtractOutput(h *Histogram) Stretch {
	st := Stretch{Scene: h.Scene, Lo: make([]float32, 3), Hi: make([]float32, 3), Gamma: f.Params.Gamma}
	for c := 0; c < 3; c++ {
		counts := h.Counts[c*HistBins : (c+1)*HistBins]
		st.Lo[c] = percentile(counts, f.Params.Low)
		st.Hi[c] = percentile(counts, f.Params.High)
		if st.Hi[c] <= st.Lo[c] {
			st.Hi[c] = st.Lo[c] + (HistHi-HistLo)/HistBins
		}
	}
	return st
}

// percentile returns the reflectance below which p percent of the counted
// pixels lie, interpolating linearly inside the bin. With no pixels it is 0.
func percentile(counts []int64, p float64) float32 {
	var total int64
	for _, n := range counts {
		total += n
	}
	if total == 0 {
		return 0
	}
	target := p / 100 * float64(total)
	width := (HistHi - HistLo) / float64(len(counts))
	var cum float64
	for i, n := range counts {
		if n > 0 && cum+float64(n) >= target {
			return float32(HistLo + (float64(i)+(target-cum)/float64(n))*width)
		}
		cum += float64(n)
	}
	return HistHi
}
