package raster

import (
	"math"
	"sync"
)

// levels maps a reflectance v to its 8-bit level under one channel's stretch
// (lo, hi, inv), exactly as stretchValue does, without a math.Pow per pixel.
//
// stretchValue depends on v only through d = v - lo (a float32 subtraction),
// and is non-decreasing in d: x = d/(hi-lo) is a correctly rounded division
// by a positive number, and between two neighbouring float32 values of d,
// 255·x^inv grows by about inv·2^-24 relative, some 2^29·inv float64 ulps,
// far more than math.Pow's error of a few ulps (for inv >= 1e-6, which
// newLevels checks). So the level of d is the number of thresholds
// thr[1..255] at or below it, thr[l] being the smallest float32 d > 0 whose
// stretchValue is at least l; newLevels finds each by bisection over the
// float32 values, calling the real stretchValue.
//
// Counting thresholds is made one lookup: d in (0, hi-lo) falls in bucket
// int(d·scale) of levelBuckets; base[i] counts the thresholds in earlier
// buckets and next[i] is the threshold inside bucket i (+Inf if none), so the
// level is base[i] + (d >= next[i]). The bucket of d is computed the same
// way for the thresholds and the pixels, and is monotone in d, so this is
// exact; a bucket holding several thresholds (possible for extreme gammas)
// is marked multi and its pixels count them one by one.
type levels struct {
	lo, h float32 // d = v - lo; h = hi - lo > 0
	scale float32 // bucket of d = int(d * scale)
	thr   [256]float32
	base  [levelBuckets]uint8
	multi [levelBuckets]bool
	next  [levelBuckets]float32

	vecOnce sync.Once
	vecTab  *levelsVec // the vector kernel's copy (composite_amd64.go)
}

// levelBuckets is the number of buckets over (0, hi-lo): enough that with
// gammas from 1/16 to 16 no bucket holds two thresholds.
const levelBuckets = 4096

// newLevels returns the table of the stretch (lo, hi, inv), or nil where the
// fast path does not apply (hi <= lo, a value that is not finite, inv below
// 1e-6): then stretchValue is called per pixel.
func newLevels(lo, hi float32, inv float64) *levels {
	h := hi - lo
	if !(h > 0) || math.IsInf(float64(h), 0) || math.IsInf(float64(lo), 0) || lo != lo ||
		!(inv >= 1e-6) || math.IsInf(inv, 0) {
		return nil
	}
	t := &levels{lo: lo, h: h, scale: levelBuckets / h}
	// The search is over d = v - lo itself, with stretchValue's arithmetic
	// from there on (stretchValue(lo+d) would round lo+d first).
	level := func(d float32) uint8 { return levelOfD(d, h, hi, lo, inv) }
	// Bisection over the bits of positive float32 d (ordered as the
	// values): level(below) < l <= level(above).
	below := uint32(0) // d = +0: level 0
	hb := math.Float32bits(h)
	for l := 1; l <= 255; l++ {
		above := hb // level(h) = 255 (x = 1)
		for above-below > 1 {
			mid := below + (above-below)/2
			if int(level(math.Float32frombits(mid))) >= l {
				above = mid
			} else {
				below = mid
			}
		}
		t.thr[l] = math.Float32frombits(above)
		below = above - 1 // level(thr[l]-) < l <= l+1
	}
	counts := [levelBuckets]int{}
	for l := 1; l <= 255; l++ {
		counts[t.bucket(t.thr[l])]++
	}
	n := 0
	for i := range t.base {
		t.base[i] = uint8(n)
		t.next[i] = float32(math.Inf(1))
		switch counts[i] {
		case 0:
		case 1:
			t.next[i] = t.thr[n+1]
		default:
			t.multi[i] = true
		}
		n += counts[i]
	}
	return t
}

// levelOfD is stretchValue for v with v - lo = d.
func levelOfD(d, h, hi, lo float32, inv float64) uint8 {
	x := float64(d) / float64(h)
	if x <= 0 || hi <= lo {
		return 0
	}
	if x >= 1 {
		return 255
	}
	return uint8(math.Round(255 * math.Pow(x, inv)))
}

// bucket is the bucket of d in (0, h); d >= h lands in the last.
func (t *levels) bucket(d float32) int {
	return min(int(d*t.scale), levelBuckets-1)
}

// level returns stretchValue(v, lo, hi, inv) for a v that is not NaN. It is
// written without data-dependent branches (the compiler makes the
// conditional assignments conditional moves): pixels of an image fall on
// either side of a threshold unpredictably.
func (t *levels) level(v float32) uint8 {
	d := v - t.lo
	// Out of range (d <= 0, d >= h) the bucket is clamped; the level is
	// then overridden below.
	i := max(min(int(d*t.scale), levelBuckets-1), 0)
	if t.multi[i] {
		return t.levelSlow(d)
	}
	l := t.base[i]
	inc := uint8(0)
	if d >= t.next[i] {
		inc = 1
	}
	l += inc
	if d >= t.h {
		l = 255
	}
	if !(d > 0) {
		l = 0
	}
	return l
}

// levelSlow counts the thresholds one by one.
func (t *levels) levelSlow(d float32) uint8 {
	if !(d > 0) {
		return 0
	}
	l := uint8(0)
	for l < 255 && d >= t.thr[l+1] {
		l++
	}
	return l
}

// maxLevelTables bounds the cache of level tables (about 40 KiB each): a
// worker sees three per scene.
const maxLevelTables = 48

var levelTables struct {
	sync.Mutex
	m     map[levelKey]*levels
	order []levelKey
}

type levelKey struct {
	lo, hi float32
	inv    float64
}

// levelTable returns the (cached) table of the stretch, or nil where the
// fast path does not apply.
func levelTable(lo, hi float32, inv float64) *levels {
	key := levelKey{lo, hi, inv}
	levelTables.Lock()
	t, ok := levelTables.m[key]
	levelTables.Unlock()
	if ok {
		return t
	}
	t = newLevels(lo, hi, inv) // outside the lock: about a millisecond
	levelTables.Lock()
	defer levelTables.Unlock()
	if levelTables.m == nil {
		levelTables.m = map[levelKey]*levels{}
	}
	if _, ok := levelTables.m[key]; !ok {
		if len(levelTables.order) == maxLevelTables {
			delete(levelTables.m, levelTables.order[0])
			levelTables.order = levelTables.order[1:]
		}
		levelTables.m[key] = t
		levelTables.order = append(levelTables.order, key)
	}
	return t
}

// compositeLevels is the composite's per-pixel loop with the level tables
// of the three channels: the same bytes as stretchValue per channel. It
// returns false, writing nothing, where a table does not apply.
func compositeLevels(pix []uint8, ch [3][]float32, st Stretch, inv float64) bool {
	var tabs [3]*levels
	for c := range tabs {
		if tabs[c] = levelTable(st.Lo[c], st.Hi[c], inv); tabs[c] == nil {
			return false
		}
	}
	r, g, b := ch[0], ch[1][:len(ch[0])], ch[2][:len(ch[0])]
	pix = pix[:4*len(r)]
	done := compositeVector(pix, r, g, b, tabs)
	pix, r, g, b = pix[4*done:], r[done:], g[done:], b[done:]
	tr, tg, tb := tabs[0], tabs[1], tabs[2]
	for i, vr := range r {
		vg, vb := g[i], b[i]
		if vr != vr || vg != vg || vb != vb { // NaN: no-data, transparent
			continue
		}
		p := pix[4*i : 4*i+4 : 4*i+4]
		p[0], p[1], p[2], p[3] = tr.level(vr), tg.level(vg), tb.level(vb), 255
	}
	return true
}
