package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Byte-level (GPT-2, RoBERTa) building blocks: the byte-to-character table and the
// GPT-2 split pattern, written as a scanner because Go's regexp has no lookahead.

// byteLevelChars maps each byte to the printable character GPT-2's bytes_to_unicode gives
// it: the printable Latin-1 bytes map to themselves, the other 68 to U+0100 onwards in
// byte order.
var byteLevelChars = func() (t [256]rune) {
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			t[b] = rune(b)
		} else {
			t[b] = 256 + n
			n++
		}
	}
	return t
}()

// byteLevelBytes is byteLevelChars reversed: -1 for a character no byte maps to.
var byteLevelBytes = func() map[rune]byte {
	m := make(map[rune]byte, 256)
	for b, r := range byteLevelChars {
		m[r] = byte(b)
	}
	return m
}()

// byteLevelEncoded holds each byte's character already UTF-8 encoded, so mapping a
// string is a table copy.
var byteLevelEncoded = func() (t [256]string) {
	for b, r := range byteLevelChars {
		t[b] = string(r)
	}
	return t
}()

// gpt2Split calls emit with the byte range of each match of GPT-2's pre-tokenization
// pattern
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// in s, left to right, as a backtracking engine matches it (the first alternative that
// matches at a position wins). The matches cover s, so they are also the Isolated split of
// s. \s is JavaScript's, as tokenizers.js writes the pattern (it takes U+FEFF and not
// U+0085; the Rust library's Oniguruma has it the other way round); \p{L} and \p{N} are
// Go's Unicode tables. Invalid UTF-8 bytes count as neither space, letter nor number.
func gpt2Split(s string, emit func(start, end int)) {
	i := 0
	n := len(s)
	for i < n {
		end := gpt2Match(s, i)
		emit(i, end)
		i = end
	}
}

// runClass classifies a rune for the pattern: 0 other, 1 letter, 2 number, 3 space.
func runClass(r rune) int {
	if r < utf8.RuneSelf {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			return 1
		case r >= '0' && r <= '9':
			return 2
		case r == ' ' || (r >= 0x09 && r <= 0x0D):
			return 3
		}
		return 0
	}
	switch {
	case unicode.IsLetter(r):
		return 1
	case unicode.IsNumber(r):
		return 2
	case isJSSpace(r):
		return 3
	}
	return 0
}

func decodeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// gpt2Match returns the end of the pattern's match starting at i (i < len(s)); the
// pattern always matches at least one character.
func gpt2Match(s string, i int) int {
	n := len(s)
	// 's|'t|'re|'ve|'m|'ll|'d
	if s[i] == '\'' && i+1 < n {
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r':
			if i+2 < n && s[i+2] == 'e' {
				return i + 3
			}
		case 'v':
			if i+2 < n && s[i+2] == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < n && s[i+2] == 'l' {
				return i + 3
			}
		}
	}
	// ' ?' then a run of one class: letters, numbers, or neither-space-letter-nor-number.
	j := i
	if s[i] == ' ' && i+1 < n {
		j = i + 1
	}
	r, w := decodeAt(s, j)
	cls := runClass(r)
	if cls != 3 {
		k := j + w
		for k < n {
			r2, w2 := decodeAt(s, k)
			if runClass(r2) != cls {
				break
			}
			k += w2
		}
		return k
	}
	if j != i {
		// A space followed by a space: ' ?' matched nothing the other alternatives take.
		r, w = decodeAt(s, i)
		cls = runClass(r)
		if cls != 3 {
			// unreachable: s[i] is ' ', a space
			return i + w
		}
	}
	// \s+(?!\S) | \s+ from i: the whitespace run, less its last character when a
	// non-space follows it and the run is longer than one character.
	k := i
	last := i
	for k < n {
		r2, w2 := decodeAt(s, k)
		if runClass(r2) != 3 {
			break
		}
		last = k
		k += w2
	}
	if k < n && last > i {
		return last
	}
	return k
}
