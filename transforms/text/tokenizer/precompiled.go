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

// runeChange is one character of a normalized string and how it came from the original,
// as the Rust library's NormalizedString::transform takes them: 0 replaces an original
// character, 1 is inserted, -n replaces and also removes the n original characters after.
type runeChange struct {
	r      rune
	change int
}

// precompiledTransform normalizes s as the Rust library's Precompiled normalizer does:
// grapheme clusters of under 6 bytes are looked up whole, others (and clusters with no
// entry) character by character. It returns false when nothing changed.
func (p *precompiledMap) transform(s string) ([]runeChange, bool) {
	var out []runeChange
	modified := false
	state := -1
	rest := s
	for len(rest) > 0 {
		var g string
		g, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if len(g) < 6 {
			if norm, ok := p.lookup(g); ok {
				modified = true
				out = replaceChanges(out, g, norm)
				continue
			}
		}
		for i, r := range g {
			part := g[i : i+utf8.RuneLen(r)]
			if r == utf8.RuneError {
				_, w := utf8.DecodeRuneInString(g[i:])
				part = g[i : i+w]
			}
			if norm, ok := p.lookup(part); ok {
				modified = true
				out = replaceChanges(out, part, norm)
			} else {
				out = append(out, runeChange{r: r})
			}
		}
	}
	return out, modified
}

// replaceChanges appends the characters of new replacing those of old, as the Rust
// library's Precompiled does: extra characters are marked inserted, fewer characters
// fold the removed ones into the last.
func replaceChanges(out []runeChange, old, new string) []runeChange {
	diff := utf8.RuneCountInString(new) - utf8.RuneCountInString(old)
	for _, r := range new {
		out = append(out, runeChange{r: r})
	}
	switch {
	case diff > 0:
		for i := 0; i < diff && i < len(out); i++ {
			out[len(out)-1-i].change = 1
		}
	case diff < 0:
		if len(out) > 0 {
			out[len(out)-1].change += diff
		}
	}
	return out
}
