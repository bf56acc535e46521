package tokenizer

import (
	"strings"
	"unicode/utf8"
)

func init() {
	preTokenizers["ByteLevel"] = newByteLevelPreTokenizer
	postProcessors["ByteLevel"] = newByteLevelProcessor
	decoders["ByteLevel"] = newByteLevelDecoder
}

// byteLevel is the ByteLevel component (GPT-2, RoBERTa): as a pre-tokenizer it
// prepends a space when asked, splits with GPT-2's pattern and writes every byte of
// each piece as a printable character; as a post-processor it trims the spaces
// out of token offsets; as a decoder it turns the characters back into bytes.
type byteLevel struct {
	addPrefixSpace bool
	trimOffsets    bool
	useRegex       bool
}

func decodeByteLevel(c *component) (byteLevel, error) {
	var j struct {
		AddPrefixSpace *bool `json:"add_prefix_space"`
		TrimOffsets    *bool `json:"trim_offsets"`
		UseRegex       *bool `json:"use_regex"`
	}
	if err := c.decode(&j); err != nil {
		return byteLevel{}, err
	}
	b := byteLevel{addPrefixSpace: true, trimOffsets: true, useRegex: true}
	if j.AddPrefixSpace != nil {
		b.addPrefixSpace = *j.AddPrefixSpace
	}
	if j.TrimOffsets != nil {
		b.trimOffsets = *j.TrimOffsets
	}
	if j.UseRegex != nil {
		b.useRegex = *j.UseRegex
	}
	return b, nil
}

func newByteLevelPreTokenizer(c *component) (preTokenizer, error) { return decodeByteLevel(c) }

func (b byteLevel) preTokenize(p *preTokenized) {
	p.splitEach(func(n *NormalizedString, out []NormalizedString) []NormalizedString {
		if n.Len() == 0 {
			return out
		}
		if b.addPrefixSpace && n.String()[0] != ' ' {
			prependUnaligned(n, " ")
		}
		first := len(out)
		if b.useRegex {
			var local [64][2]int
			matches := local[:0]
			gpt2Split(n.String(), func(s, e int) { matches = append(matches, [2]int{s, e}) })
			out = n.SplitMatches(matches, Isolated, out)
		} else {
			out = append(out, *n)
		}
		mapPieces(out[first:])
		return out
	})
}

// mapPieces writes every byte of the pieces as its byte-level character,
// each aligned to the original of the character the byte belonged to. The
// pieces' new texts and alignments share one string and one slice (two
// allocations for a section rather than two for each word). Pieces of
// printable ASCII, which map to themselves, are left as they are.
func mapPieces(pieces []NormalizedString) {
	total := 0
	for i := range pieces {
		if !printableASCII(pieces[i].s) {
			for k := 0; k < len(pieces[i].s); k++ {
				total += len(byteLevelEncoded[pieces[i].s[k]])
			}
		}
	}
	if total == 0 {
		return
	}
	var sb strings.Builder
	sb.Grow(total)
	aligns := make([]span, 0, total)
	type place struct{ i, off, n int }
	var local [32]place
	places := local[:0]
	for i := range pieces {
		n := &pieces[i]
		if printableASCII(n.s) {
			continue
		}
		off := sb.Len()
		for k := 0; k < len(n.s); {
			_, w := utf8.DecodeRuneInString(n.s[k:])
			sp := span{n.alignAt(k).start, n.alignAt(k + w - 1).end}
			for _, by := range []byte(n.s[k : k+w]) {
				enc := byteLevelEncoded[by]
				sb.WriteString(enc)
				for range len(enc) {
					aligns = append(aligns, sp)
				}
			}
			k += w
		}
		places = append(places, place{i, off, sb.Len() - off})
	}
	all := sb.String()
	for _, pl := range places {
		n := &pieces[pl.i]
		n.base = n.pointAt(0)
		n.s = all[pl.off : pl.off+pl.n]
		n.align = aligns[pl.off : pl.off+pl.n : pl.off+pl.n]
	}
}

func printableASCII(s string) bool {
	for k := 0; k < len(s); k++ {
		if s[k] < '!' || s[k] > '~' {
			return false
		}
	}
	return true
}

// prependUnaligned puts text before n, aligned to the empty range at the
// start of n's original: a token of only the added space has the offsets
// (start, start) and a token of the space and a word the word's. (The Rust
// library aligns the space to the first character, so that trimming a lone
// space token leaves offsets inside that character when it has several
// bytes.)
func prependUnaligned(n *NormalizedString, text string) {
	p := int32(n.pointAt(0))
	align := make([]span, len(text), len(text)+n.Len())
	for i := range align {
		align[i] = span{p, p}
	}
	for i := 0; i < n.Len(); i++ {
		align = append(align, n.alignAt(i))
	}
	n.s = text + n.s
	n.align = align
	n.base = int(p)
}

func newByteLevelProcessor(c *component) (postProcessor, error) { return decodeByteLevel(c) }

func (b byteLevel) addedTokens(bool) int { return 0 }

// processEach trims the offsets of one text's encoding when trim_offsets is
// set (trimByteLevelOffsets); it adds no tokens (a perSequence processor).
func (b byteLevel) processEach(e *Encoding) {
	if b.trimOffsets {
		trimByteLevelOffsets(e, b.addPrefixSpace)
	}
}

// process trims the offsets and joins a pair, keeping the type ids the texts
// were encoded with (0, then 1), as the Rust crate's ByteLevel does. The
// result is a new Encoding (a and p are the caller's pooled buffers).
func (b byteLevel) process(a, p *Encoding, _ bool) *Encoding {
	b.processEach(a)
	n := a.Len()
	if p != nil {
		b.processEach(p)
		n += p.Len()
	}
	out := newEncoding(n)
	out.appendEncoding(a, -1)
	out.appendEncoding(p, -1)
	return out
}

func newByteLevelDecoder(c *component) (decoder, error) { return decodeByteLevel(c) }

// decodeChain turns the tokens' characters back into bytes (a token with a character
// outside the byte-level alphabet is kept as it is) and the bytes into text, invalid
// UTF-8 becoming U+FFFD.
func (b byteLevel) decodeChain(tokens []string) []string {
	var buf []byte
	for _, t := range tokens {
		start := len(buf)
		ok := true
		for _, r := range t {
			by, found := byteLevelBytes[r]
			if !found {
				ok = false
				break
			}
			buf = append(buf, by)
		}
		if !ok {
			buf = append(buf[:start], t...)
		}
	}
	return []string{lossyUTF8(buf)}
}

// lossyUTF8 is Rust's String::from_utf8_lossy (and the WHATWG decoder's): each maximal
// invalid subsequence becomes one U+FFFD.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for i := 0; i < len(b); {
		r, w := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || w > 1 {
			sb.Write(b[i : i+w])
			i += w
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += invalidRun(b[i:])
	}
	return sb.String()
}

// invalidRun is the length of the maximal subpart of an ill-formed sequence at the start
// of b: the lead byte and the continuation bytes that could still have completed it.
func invalidRun(b []byte) int {
	var want int
	lo, hi := byte(0x80), byte(0xBF)
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		want = 2
	case c == 0xE0:
		want, lo = 3, 0xA0
	case c == 0xED:
		want, hi = 3, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		want = 3
	case c == 0xF0:
		want, lo = 4, 0x90
	case c == 0xF4:
		want, hi = 4, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		want = 4
	default:
		return 1
	}
	n := 1
	if n < len(b) && b[n] >= lo && b[n] <= hi {
		n++
		for n < want && n < len(b) && b[n] >= 0x80 && b[n] <= 0xBF {
			n++
		}
	}
	return n
}
