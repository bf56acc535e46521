package raster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// StepComposite is the name of the true-colour composite step, and
// GPUOpComposite its GPU op.
const (
	StepComposite  = "composite"
	GPUOpComposite = "raster.composite"
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

func (p CompositeParams) withDefaults() CompositeParams {
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

func init() {
	step.Register(step.Def{
		Step: backendStep(StepComposite, GPUOpComposite),
		Doc:  "true-colour (B4, B3, B2) picture with a percentile contrast stretch and gamma, 8-bit RGBA",
		CPU:  CompositeTile,
		Sample: func() any {
			t, _ := TOA(sampleDNTile())
			return CompositeInput{Tile: t, Stretch: Stretch{Scene: t.Scene, Lo: []float32{0.02, 0.03, 0.05}, Hi: []float32{0.2, 0.2, 0.2}, Gamma: 1.4}}
		},
		Random: func(seed uint64) any {
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
	register.DoFn5x0[context.Context, Tile, func(*Stretch) bool, func(RGBATile), func(step.Failure)](&compositeFn{})
	register.Emitter1[RGBATile]()
	register.Iter1[Stretch]()
	register.Function1x2(keyByScene)
	register.Combiner3[*Histogram, Tile, Stretch](&histogramFn{})
	register.Function2x1(dropKey)
	beam.RegisterType(reflect.TypeOf((*RGBATile)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Stretch)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*CompositeInput)(nil)).Elem())
}

// Composite makes the true-colour picture of reflectance tiles (planes B4,
// B3, B2): a histogram per scene gives the percentile stretch, applied to
// every tile of the scene. It panics on invalid parameters, as Beam's
// transforms do at construction.
func Composite(s beam.Scope, refl beam.PCollection, p CompositeParams, opts ...step.Option) (rgba, failed beam.PCollection) {
	p = p.withDefaults()
	if err := p.Validate(); err != nil {
		panic(err)
	}
	s, ex := step.Scope(s, StepComposite, opts...)
	keyed := beam.ParDo(s, keyByScene, refl)
	stretches := beam.ParDo(s, dropKey, beam.CombinePerKey(s, &histogramFn{Params: p}, keyed))
	fn := &compositeFn{Exec: ex}
	return beam.ParDo2(s, fn, refl, beam.SideInput{Input: stretches})
}

func keyByScene(t Tile) (string, Tile) { return t.Scene, t }

func dropKey(_ string, st Stretch) Stretch { return st }

type compositeFn struct {
	step.Exec
	// byScene caches the side input: in the global window it is the same
	// for every element the DoFn instance sees.
	byScene map[string]Stretch
}

func (f *compositeFn) ProcessElement(ctx context.Context, in Tile, stretches func(*Stretch) bool, emit func(RGBATile), fail func(step.Failure)) {
	if f.byScene == nil {
		f.byScene = map[string]Stretch{}
		var st Stretch
		for stretches(&st) {
			f.byScene[st.Scene] = st
		}
	}
	st, ok := f.byScene[in.Scene]
	if !ok {
		fail(step.NewFailure(StepComposite, in, errors.New("no stretch computed for the scene")))
		return
	}
	if out, ok := step.Run[CompositeInput, RGBATile](ctx, &f.Exec, CompositeInput{Tile: in, Stretch: st}, fail); ok {
		emit(out)
	}
}

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

type histogramFn struct {
	Params CompositeParams
}

func (f *histogramFn) CreateAccumulator() *Histogram {
	return &Histogram{Counts: make([]int64, 3*HistBins)}
}

func (f *histogramFn) AddInput(h *Histogram, t Tile) *Histogram {
	h.Scene = t.Scene
	for c, b := range compositeBands {
		p, err := t.Plane(BandName(b))
		if err != nil {
			continue // the composite step reports the missing plane
		}
		counts := h.Counts[c*HistBins : (c+1)*HistBins]
		for _, v := range p {
			if v == v {
				counts[histBin(v)]++
			}
		}
	}
	return h
}

func histBin(v float32) int {
	i := int(math.Floor((float64(v) - HistLo) / (HistHi - HistLo) * HistBins))
	return max(0, min(HistBins-1, i))
}

func (f *histogramFn) MergeAccumulators(a, b *Histogram) *Histogram {
	if a.Scene == "" {
		a.Scene = b.Scene
	}
	for i, n := range b.Counts {
		a.Counts[i] += n
	}
	return a
}

func (f *histogramFn) ExtractOutput(h *Histogram) Stretch {
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
