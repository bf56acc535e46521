package tokenizer

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// precompiledMap is SentencePiece's precompiled_charsmap: a darts-clone double-array trie
// whose keys are UTF-8 strings and whose values index NUL-terminated replacements in a
// blob after it. The layout is a little-endian uint32 trie size in bytes, the trie's
// uint32 units, then the replacements.
type precompiledMap struct {
	units      []uint32
	normalized string
}

// newPrecompiledMap decodes the base64 charsmap of a tokenizer.json.
func newPrecompiledMap(b64 string) (*precompiledMap, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("precompiled_charsmap is not base64: %v", err)
	}
	if len(raw) < 4 {
		return nil, fmt.Errorf("precompiled_charsmap has %d bytes, fewer than its 4-byte header", len(raw))
	}
	size := binary.LittleEndian.Uint32(raw)
	if size%4 != 0 || uint64(size) > uint64(len(raw)-4) {
		return nil, fmt.Errorf("precompiled_charsmap's trie size %d does not fit its %d bytes in whole units", size, len(raw)-4)
	}
	if size == 0 {
		return nil, fmt.Errorf("precompiled_charsmap has an empty trie")
	}
	units := make([]uint32, size/4)
	for i := range units {
		units[i] = binary.LittleEndian.Uint32(raw[4+4*i:])
	}
	rest := raw[4+size:]
	if !utf8.Valid(rest) {
		return nil, fmt.Errorf("precompiled_charsmap's replacement strings are not valid UTF-8")
	}
	return &precompiledMap{units: units, normalized: string(rest)}, nil
}

// lookup is spm_precompiled's transform: the replacement of the shortest key that chunk
// starts with (the first match of darts' common-prefix search), or false. A trie that
// points outside itself matches nothing.
func (p *precompiledMap) lookup(chunk string) (string, bool) {
	u := p.units
	pos := uint32(0)
	unit := u[0]
	pos ^= unitOffset(unit)
	for i := 0; i < len(chunk); i++ {
		c := chunk[i]
		if c == 0 {
			return "", false
		}
		pos ^= uint32(c)
		if pos >= uint32(len(u)) {
			return "", false
		}
		unit = u[pos]
		if unit&(1<<31|0xFF) != uint32(c) {
			return "", false
		}
		pos ^= unitOffset(unit)
		if (unit>>8)&1 == 1 {
			if pos >= uint32(len(u)) {
				return "", false
			}
			idx := int(u[pos] & (1<<31 - 1))
			if idx >= len(p.normalized) {
				return "", false
			}
			end := idx
			for end < len(p.normalized) && p.normalized[end] != 0 {
				end++
			}
			return p.normalized[idx:end], true
		}
	}
	return "", false
}

func unitOffset(unit uint32) uint32 {
	return (unit >> 10) << ((unit & (1 << 9)) >> 6)
}

func init() {
	normalizers["Precompiled"] = newPrecompiledNormalizer
}

// precompiledNormalizer is the "Precompiled" normalizer: SentencePiece's charsmap
// applied as the Rust library applies it (tokenizers.js approximates it with NFKC; this
// package reads the charsmap).
type precompiledNormalizer struct{ m *precompiledMap }

func newPrecompiledNormalizer(c *component) (normalizer, error) {
	var j struct {
		Charsmap *string `json:"precompiled_charsmap"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	if j.Charsmap == nil || *j.Charsmap == "" {
		// Some exports write a charsmap of null for "no normalization".
		return precompiledNormalizer{}, nil
	}
	m, err := newPrecompiledMap(*j.Charsmap)
	if err != nil {
		return nil, c.errorf("%v", err)
	}
	return precompiledNormalizer{m}, nil
}

func (p precompiledNormalizer) normalize(n *NormalizedString) {
	if p.m == nil || n.Len() == 0 {
		return
	}
	s := n.String()
	var e *Editor
	state := -1
	for pos := 0; pos < len(s); {
		var g string
		g, _, _, state = uniseg.FirstGraphemeClusterInString(s[pos:], state)
		if len(g) < 6 {
			if norm, ok := p.m.lookup(g); ok {
				e = startEdit(n, e, pos)
				replaceAligned(e, g, norm)
				pos += len(g)
				continue
			}
		}
		for i := 0; i < len(g); {
			_, w := utf8.DecodeRuneInString(g[i:])
			if norm, ok := p.m.lookup(g[i : i+w]); ok {
				e = startEdit(n, e, pos+i)
				replaceAligned(e, g[i:i+w], norm)
			}
			i += w
		}
		pos += len(g)
	}
	if e != nil {
		e.Done()
	}
}

// edit starts the editor on first use and keeps the unchanged bytes before pos.
func startEdit(n *NormalizedString, e *Editor, pos int) *Editor {
	if e == nil {
		e = n.Edit()
	}
	e.Keep(pos - e.Pos())
	return e
}

// replaceAligned writes new in place of old as the Rust library aligns a Precompiled
// replacement: the i-th new character comes from the i-th old one, extra new characters
// are inserted after them, and old characters left over are removed.
func replaceAligned(e *Editor, old, new string) {
	for old != "" && new != "" {
		_, ow := utf8.DecodeRuneInString(old)
		_, nw := utf8.DecodeRuneInString(new)
		if ow == len(old) {
			nw = len(new) // inserted characters align with the one before them
		}
		e.Replace(ow, new[:nw])
		old, new = old[ow:], new[nw:]
	}
	if new != "" {
		e.Replace(0, new) // (old was empty: not a charsmap key)
	}
	if old != "" {
		e.Replace(len(old), "")
	}
}
