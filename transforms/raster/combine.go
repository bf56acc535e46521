package raster

import (
	"math"
	"math/big"
	"slices"

	"github.com/beamgpu/beamgpu/internal/parallel"
)

// The combiners of this file summarise a scene from its tiles, in any order
// and in any grouping, so that a pipeline never holds a scene's planes:
// StatsCombiner the statistics of every plane, StretchCombiner the
// percentile stretch of the true-colour picture. Both are Beam CombineFns
// (CreateAccumulator, AddInput, MergeAccumulators, ExtractOutput) over Tile.

// ExactSum is the exact sum of float32 values, whatever their order: each
// value is an integer times 2^-149, accumulated in 32-bit limbs, and the sum
// is rounded once, to the float64 nearest it. (A float64 running sum would
// depend on the order of the tiles, and so on the tile size and the runner.)
type ExactSum struct {
	// Limbs[k] holds multiples of 2^(32k-149); lower limbs are kept in
	// [0, 2^32) by Normalize.
	Limbs []int64
	// PosInf and NegInf count infinite values.
	PosInf, NegInf int64
}

const exactLimbs = 10 // 2^-149 .. 2^128 (float32's range), plus a carry limb

// Add adds v (not NaN).
func (s *ExactSum) Add(v float32) {
	switch {
	case math.IsInf(float64(v), 1):
		s.PosInf++
		return
	case math.IsInf(float64(v), -1):
		s.NegInf++
		return
	case v == 0:
		return
	}
	if s.Limbs == nil {
		s.Limbs = make([]int64, exactLimbs)
	}
	bits := math.Float32bits(v)
	exp := int(bits>>23) & 0xff
	mant := uint64(bits & 0x7fffff)
	shift := exp - 1 // subnormals: mant * 2^-149
	if exp != 0 {
		mant |= 1 << 23
	} else {
		shift = 0
	}
	// v = mant * 2^(shift-149)
	wide := mant << (shift % 32)
	k := shift / 32
	lo, hi := int64(wide&0xffffffff), int64(wide>>32)
	if bits>>31 != 0 {
		lo, hi = -lo, -hi
	}
	s.Limbs[k] += lo
	s.Limbs[k+1] += hi
}

// Merge adds the values summed in o.
func (s *ExactSum) Merge(o ExactSum) {
	s.PosInf += o.PosInf
	s.NegInf += o.NegInf
	if o.Limbs == nil {
		return
	}
	if s.Limbs == nil {
		s.Limbs = make([]int64, exactLimbs)
	}
	for i, l := range o.Limbs {
		s.Limbs[i] += l
	}
	s.Normalize()
}

// Normalize carries each limb's excess into the next one, so that the
// limbs cannot overflow however many sums are merged.
func (s *ExactSum) Normalize() {
	for i := 0; i+1 < len(s.Limbs); i++ {
		c := s.Limbs[i] >> 32 // floor division by 2^32
		s.Limbs[i] -= c << 32
		s.Limbs[i+1] += c
	}
}

// Float64 is the sum rounded to the nearest float64 (ties to even).
func (s ExactSum) Float64() float64 {
	switch {
	case s.PosInf > 0 && s.NegInf > 0:
		return math.NaN()
	case s.PosInf > 0:
		return math.Inf(1)
	case s.NegInf > 0:
		return math.Inf(-1)
	}
	total := new(big.Int)
	for i := len(s.Limbs) - 1; i >= 0; i-- {
		total.Lsh(total, 32)
		total.Add(total, big.NewInt(s.Limbs[i]))
	}
	f := new(big.Float).SetInt(total)
	f.SetMantExp(f, -149)
	v, _ := f.Float64()
	return v
}

// PlaneAcc accumulates the statistics of one plane.
type PlaneAcc struct {
	Plane         string
	Pixels, Valid int64
	Min, Max      float64
	Sum           ExactSum
}

func (a *PlaneAcc) add(p []float32) {
	a.Pixels += int64(len(p))
	for _, v := range p {
		if v != v {
			continue
		}
		f := float64(v)
		if a.Valid == 0 {
			a.Min, a.Max = f, f
		}
		a.Valid++
		a.Sum.Add(v)
		// math.Min and math.Max, without their NaN cases (none here).
		if f < a.Min || f == a.Min && math.Signbit(f) {
			a.Min = f
		}
		if f > a.Max || f == a.Max && !math.Signbit(f) {
			a.Max = f
		}
	}
	a.Sum.Normalize()
}

func (a *PlaneAcc) merge(b PlaneAcc) {
	if b.Valid > 0 {
		if a.Valid == 0 {
			a.Min, a.Max = b.Min, b.Max
		}
		a.Min, a.Max = math.Min(a.Min, b.Min), math.Max(a.Max, b.Max)
	}
	a.Pixels += b.Pixels
	a.Valid += b.Valid
	a.Sum.Merge(b.Sum)
}

// stats is the accumulated PlaneStats: as Stats computes them for a whole
// plane, the mean being the exact sum rounded, divided by the valid count.
func (a PlaneAcc) stats(scene string, w, h int) PlaneStats {
	s := PlaneStats{Scene: scene, Plane: a.Plane, Width: w, Height: h, Pixels: int(a.Pixels), Valid: int(a.Valid),
		NoData: int(a.Pixels - a.Valid), Mean: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	if a.Valid > 0 {
		s.Mean, s.Min, s.Max = a.Sum.Float64()/float64(a.Valid), a.Min, a.Max
	}
	return s
}

// SceneStatsAcc is StatsCombiner's accumulator: one PlaneAcc per plane of
// one scene, in the order the planes first arrive.
type SceneStatsAcc struct {
	Scene          string
	SceneW, SceneH int
	Planes         []PlaneAcc
}

func (a *SceneStatsAcc) plane(name string) *PlaneAcc {
	for i := range a.Planes {
		if a.Planes[i].Plane == name {
			return &a.Planes[i]
		}
	}
	a.Planes = append(a.Planes, PlaneAcc{Plane: name})
	return &a.Planes[len(a.Planes)-1]
}

// SceneStats are the statistics of every plane of a scene.
type SceneStats struct {
	Scene          string
	SceneW, SceneH int
	Planes         []PlaneStats
}

// Plane returns the statistics of the named plane.
func (s SceneStats) Plane(name string) (PlaneStats, bool) {
	for _, p := range s.Planes {
		if p.Plane == name {
			return p, true
		}
	}
	return PlaneStats{}, false
}

// StatsCombiner computes the statistics of every plane of a scene from its
// tiles (Tile, one scene per key): pixels, valid pixels, no-data, and the
// mean, minimum and maximum of the valid ones, as Stats gives them for the
// whole plane, whatever the tiles and their order.
type StatsCombiner struct{}

// CreateAccumulator implements a Beam CombineFn.
func (StatsCombiner) CreateAccumulator() *SceneStatsAcc { return &SceneStatsAcc{} }

// AddInput implements a Beam CombineFn.
func (StatsCombiner) AddInput(a *SceneStatsAcc, t Tile) *SceneStatsAcc {
	a.Scene, a.SceneW, a.SceneH = t.Scene, t.SceneW, t.SceneH
	n := min(len(t.Names), len(t.Data))
	for _, name := range t.Names[:n] {
		a.plane(name) // every plane's accumulator exists before the pointers are taken
	}
	add := func(i int) { a.plane(t.Names[i]).add(t.Data[i]) }
	if hasDuplicate(t.Names[:n]) { // two planes of one name add to one accumulator: in turn
		for i := range n {
			add(i)
		}
		return a
	}
	eachPlane(n, t.Area(), add)
	return a
}

func hasDuplicate(names []string) bool {
	for i, a := range names {
		if slices.Contains(names[i+1:], a) {
			return true
		}
	}
	return false
}

// parallelPixels is the tile size from which eachPlane runs the planes on
// goroutines of their own.
const parallelPixels = 1 << 16

// eachPlane calls fn for each of n planes of a tile of pixels pixels, at
// once on goroutines of their own where the tile is large enough: a runner
// that gives a scene's tiles to one bundle (prism does) would otherwise go
// through the tile's planes on one core. fn must touch only plane i's data.
func eachPlane(n, pixels int, fn func(i int)) {
	if n < 2 || pixels < parallelPixels {
		for i := range n {
			fn(i)
		}
		return
	}
	parallel.Do(n, n, fn) // a goroutine per plane
}

// MergeAccumulators implements a Beam CombineFn.
func (StatsCombiner) MergeAccumulators(a, b *SceneStatsAcc) *SceneStatsAcc {
	if a.Scene == "" {
		a.Scene, a.SceneW, a.SceneH = b.Scene, b.SceneW, b.SceneH
	}
	for _, p := range b.Planes {
		a.plane(p.Plane).merge(p)
	}
	return a
}

// ExtractOutput implements a Beam CombineFn.
func (StatsCombiner) ExtractOutput(a *SceneStatsAcc) SceneStats {
	out := SceneStats{Scene: a.Scene, SceneW: a.SceneW, SceneH: a.SceneH}
	for _, p := range a.Planes {
		out.Planes = append(out.Planes, p.stats(a.Scene, a.SceneW, a.SceneH))
	}
	return out
}

// StretchCombiner computes a scene's percentile stretch from its
// reflectance tiles (planes B4, B3, B2; one scene per key) with a histogram
// per channel: the combiner of Composite, for pipelines that build the
// picture from written planes.
type StretchCombiner struct {
	Params CompositeParams
}

func (f StretchCombiner) fn() *HistogramFn { return &HistogramFn{Params: f.Params.WithDefaults()} }

// CreateAccumulator implements a Beam CombineFn.
func (f StretchCombiner) CreateAccumulator() *Histogram { return f.fn().CreateAccumulator() }

// AddInput implements a Beam CombineFn.
func (f StretchCombiner) AddInput(h *Histogram, t Tile) *Histogram { return f.fn().AddInput(h, t) }

// MergeAccumulators implements a Beam CombineFn.
func (f StretchCombiner) MergeAccumulators(a, b *Histogram) *Histogram {
	return f.fn().MergeAccumulators(a, b)
}

// ExtractOutput implements a Beam CombineFn.
func (f StretchCombiner) ExtractOutput(h *Histogram) Stretch { return f.fn().ExtractOutput(h) }
