package raster

import (
	"math"
	"sync"
)

// stretchMemo remembers stretchValue of the values a channel has seen: a
// scene's reflectances are few distinct float32s (one per DN of its band,
// at most 65536), and a lookup is much cheaper than math.Pow. It returns
// exactly what stretchValue returns: a value is computed the first time
// and read back after.
type stretchMemo struct {
	lo, hi [3]float32
	inv    float64
	keys   [3][]uint32 // float32 bits + 1 (0: empty slot)
	vals   [3][]uint8
}

const memoSlots = 1 << 17

var memoPool = sync.Pool{New: func() any {
	m := &stretchMemo{}
	for c := range m.keys {
		m.keys[c], m.vals[c] = make([]uint32, memoSlots), make([]uint8, memoSlots)
	}
	return m
}}

// getMemo returns a memo for the stretch of st (cleared if it held another).
func getMemo(st Stretch, inv float64) *stretchMemo {
	m := memoPool.Get().(*stretchMemo)
	same := m.inv == inv
	for c := 0; c < 3; c++ {
		same = same && m.lo[c] == st.Lo[c] && m.hi[c] == st.Hi[c]
	}
	if !same {
		for c := range m.keys {
			clear(m.keys[c])
			m.lo[c], m.hi[c] = st.Lo[c], st.Hi[c]
		}
		m.inv = inv
	}
	return m
}

func (m *stretchMemo) value(c int, v float32) uint8 {
	bits := math.Float32bits(v)
	slot := (bits * 0x9E3779B1) >> (32 - 17)
	if m.keys[c][slot] == bits+1 {
		return m.vals[c][slot]
	}
	out := stretchValue(v, m.lo[c], m.hi[c], m.inv)
	if bits != math.MaxUint32 {
		m.keys[c][slot], m.vals[c][slot] = bits+1, out
	}
	return out
}
