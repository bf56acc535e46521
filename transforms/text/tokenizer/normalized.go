package tokenizer

import (
	"unicode/utf8"
)

// span is a byte range [start, end) of the original text.
type span struct{ start, end int32 }

// NormalizedString is a piece of text being normalized (or pre-tokenized)
// that remembers, for every byte, which bytes of the original input it came
// from, as Hugging Face's NormalizedString does: offsets of tokens found in
// the normalized text map back to the original however the normalizers
// changed lengths (NFD, lower-casing that grows, removed control characters,
// spaces around CJK characters, a prepended "▁").
//
// A normalizer or pre-tokenizer changes it only through an [Editor]
// (n.Edit()), or splits it with [NormalizedString.Slice] and the split
// helpers. The zero value is an empty string at offset 0.
type NormalizedString struct {
	s string // the normalized text
	// align[i] is the original span of byte i of s. When align is nil the
	// mapping is the identity shifted by base: byte i of s is original byte
	// base+i (no normalizer changed a length yet, the common case).
	align []span
	base  int
}

// newNormalized wraps original[start:end] with the identity alignment.
func newNormalized(original string, start, end int) NormalizedString {
	return NormalizedString{s: original[start:end], base: start}
}

// String returns the normalized text.
func (n *NormalizedString) String() string { return n.s }

// Len returns the length of the normalized text in bytes.
func (n *NormalizedString) Len() int { return len(n.s) }

// alignAt returns the original span of normalized byte i (0 <= i < Len()).
func (n *NormalizedString) alignAt(i int) span {
	if n.align == nil {
		return span{int32(n.base + i), int32(n.base + i + 1)}
	}
	return n.align[i]
}

// Original returns the byte range [start, end) of the original text that the
// normalized bytes [start, end) came from. An empty range maps to an empty
// range at the original position of that point.
func (n *NormalizedString) Original(start, end int) (int, int) {
	if n.align == nil {
		return n.base + start, n.base + end
	}
	if start >= end {
		p := n.pointAt(start)
		return p, p
	}
	return int(n.align[start].start), int(n.align[end-1].end)
}

// pointAt returns the original position of the boundary before normalized
// byte i.
func (n *NormalizedString) pointAt(i int) int {
	if n.align == nil {
		return n.base + i
	}
	if i < len(n.align) {
		return int(n.align[i].start)
	}
	if len(n.align) > 0 {
		return int(n.align[len(n.align)-1].end)
	}
	return n.base
}

// Slice returns the normalized bytes [start, end) as a NormalizedString of
// its own, sharing this one's memory and alignment. start and end must be on
// rune boundaries.
func (n *NormalizedString) Slice(start, end int) NormalizedString {
	out := NormalizedString{s: n.s[start:end]}
	if n.align == nil {
		out.base = n.base + start
	} else {
		out.align = n.align[start:end]
		out.base = n.pointAt(start)
	}
	return out
}

// Edit starts rebuilding the text from front to back. See [Editor].
func (n *NormalizedString) Edit() *Editor {
	return &Editor{n: n, sameLen: true}
}

// Editor rebuilds a NormalizedString from front to back: each call consumes
// the next bytes of the current text and keeps them, replaces them or
// removes them; Done installs the result (what is not consumed is kept).
// Every byte written by Replace aligns to the original span of the bytes it
// consumed; an insertion (Replace of 0 bytes) aligns to the byte before it,
// or to the byte after it at the start, as Hugging Face aligns inserted
// characters. Consume whole runes only.
//
// An editor whose replacements all put one rune for one rune of the same
// length keeps the alignment as it was (for ASCII case mapping, say).
type Editor struct {
	n       *NormalizedString
	pos     int // bytes of n.s consumed
	buf     []byte
	align   []span // built only once a length changed
	sameLen bool   // every edit so far kept its byte length: buf[i] came from n.s[i]
	changed bool
}

// Pos returns how many bytes of the current text were consumed.
func (e *Editor) Pos() int { return e.pos }

// Keep copies the next nbytes bytes unchanged.
func (e *Editor) Keep(nbytes int) {
	if nbytes <= 0 {
		return
	}
	e.buf = append(e.buf, e.n.s[e.pos:e.pos+nbytes]...)
	if !e.sameLen {
		for i := e.pos; i < e.pos+nbytes; i++ {
			e.align = append(e.align, e.n.alignAt(i))
		}
	}
	e.pos += nbytes
}

// Replace consumes the next nbytes bytes (0 inserts) and writes text in
// their place.
func (e *Editor) Replace(nbytes int, text string) { replace(e, nbytes, text) }

// ReplaceBytes is Replace with the text in a byte slice (not retained).
func (e *Editor) ReplaceBytes(nbytes int, text []byte) { replace(e, nbytes, text) }

// ReplaceRune consumes the next nbytes bytes and writes r in their place.
func (e *Editor) ReplaceRune(nbytes int, r rune) {
	var b [utf8.UTFMax]byte
	replace(e, nbytes, utf8.AppendRune(b[:0], r))
}

func replace[T string | []byte](e *Editor, nbytes int, text T) {
	e.changed = true
	// One rune for one rune of the same length keeps every byte's place
	// (and so the identity alignment); anything else aligns explicitly.
	if e.sameLen && len(text) == nbytes && (nbytes <= 1 ||
		(runeCount(text) == 1 && utf8.RuneCountInString(e.n.s[e.pos:e.pos+nbytes]) == 1)) {
		e.buf = append(e.buf, text...)
		e.pos += nbytes
		return
	}
	if e.sameLen {
		e.sameLen = false
		e.align = make([]span, len(e.buf), len(e.n.s)+len(e.n.s)/4+len(text)+16)
		for i := range e.buf {
			e.align[i] = e.n.alignAt(i)
		}
	}
	var sp span
	switch {
	case nbytes > 0:
		sp = span{e.n.alignAt(e.pos).start, e.n.alignAt(e.pos + nbytes - 1).end}
	case e.pos > 0:
		// The whole character before (its last byte alone may be inside it).
		_, w := utf8.DecodeLastRuneInString(e.n.s[:e.pos])
		sp = span{e.n.alignAt(e.pos - w).start, e.n.alignAt(e.pos - 1).end}
	case len(e.n.s) > 0:
		_, w := utf8.DecodeRuneInString(e.n.s)
		sp = span{e.n.alignAt(0).start, e.n.alignAt(w - 1).end}
	default:
		p := int32(e.n.pointAt(0))
		sp = span{p, p}
	}
	e.buf = append(e.buf, text...)
	for range len(text) {
		e.align = append(e.align, sp)
	}
	e.pos += nbytes
}

func runeCount[T string | []byte](s T) int {
	return utf8.RuneCountInString(string(s)) // no copy: the conversion does not escape
}

// Done keeps what was not consumed and installs the new text. It reports
// whether anything changed.
func (e *Editor) Done() bool {
	if !e.changed {
		return false
	}
	e.Keep(len(e.n.s) - e.pos)
	n := e.n
	base := n.pointAt(0)
	if e.sameLen {
		// Every byte kept its place: the old alignment still holds.
		n.s = string(e.buf)
		return true
	}
	n.s = string(e.buf)
	n.align = e.align
	n.base = base
	if len(n.align) > 0 {
		n.base = int(n.align[0].start)
	}
	return true
}

// SplitBehavior says what a split does with the delimiters it matched, as
// Hugging Face's SplitDelimiterBehavior.
type SplitBehavior int

// The split behaviours, named as in tokenizer.json.
const (
	// Removed drops the delimiters.
	Removed SplitBehavior = iota
	// Isolated makes each delimiter a piece of its own.
	Isolated
	// MergedWithPrevious appends each delimiter to the piece before it.
	MergedWithPrevious
	// MergedWithNext prepends each delimiter to the piece after it.
	MergedWithNext
	// Contiguous makes each run of adjacent delimiters one piece.
	Contiguous
)

// SplitMatches appends to out the pieces of n cut at the delimiter byte
// ranges matches (sorted, not overlapping; [2]int{start, end}), treating the
// delimiters as behavior says. Empty pieces are left out.
func (n *NormalizedString) SplitMatches(matches [][2]int, behavior SplitBehavior, out []NormalizedString) []NormalizedString {
	return n.splitEntries(matchEntries(matches, n.Len(), false), behavior, out)
}

// entry is one range of a text and whether it is a delimiter, as Hugging
// Face's find_matches returns them: the whole text covered, each match an
// entry of its own.
type entry struct {
	start, end int
	delim      bool
}

// matchEntries turns matches in a text of length n into entries; invert
// makes the matches the pieces and the text between them the delimiters
// (Hugging Face's Invert).
func matchEntries(matches [][2]int, n int, invert bool) []entry {
	es := make([]entry, 0, 2*len(matches)+1)
	prev := 0
	for _, m := range matches {
		if m[0] > prev {
			es = append(es, entry{prev, m[0], invert})
		}
		es = append(es, entry{m[0], m[1], !invert})
		prev = m[1]
	}
	if prev < n || len(es) == 0 {
		es = append(es, entry{prev, n, invert})
	}
	return es
}

// splitEntries is Hugging Face's NormalizedString::split: the behaviour
// decides which entries are merged and which removed.
func (n *NormalizedString) splitEntries(es []entry, behavior SplitBehavior, out []NormalizedString) []NormalizedString {
	type piece struct {
		start, end int
		remove     bool
	}
	ps := make([]piece, 0, len(es))
	prevDelim := false
	switch behavior {
	case Removed:
		for _, e := range es {
			ps = append(ps, piece{e.start, e.end, e.delim})
		}
	case Isolated:
		for _, e := range es {
			ps = append(ps, piece{e.start, e.end, false})
		}
	case MergedWithPrevious:
		for _, e := range es {
			if e.delim && !prevDelim && len(ps) > 0 {
				ps[len(ps)-1].end = e.end
			} else {
				ps = append(ps, piece{e.start, e.end, false})
			}
			prevDelim = e.delim
		}
	case MergedWithNext:
		for i := len(es) - 1; i >= 0; i-- {
			e := es[i]
			if e.delim && !prevDelim && len(ps) > 0 {
				ps[len(ps)-1].start = e.start
			} else {
				ps = append(ps, piece{e.start, e.end, false})
			}
			prevDelim = e.delim
		}
		for i, j := 0, len(ps)-1; i < j; i, j = i+1, j-1 {
			ps[i], ps[j] = ps[j], ps[i]
		}
	case Contiguous:
		for _, e := range es {
			if e.delim == prevDelim && len(ps) > 0 {
				ps[len(ps)-1].end = e.end
			} else {
				ps = append(ps, piece{e.start, e.end, false})
			}
			prevDelim = e.delim
		}
	}
	for _, p := range ps {
		if !p.remove && p.end > p.start {
			out = append(out, n.Slice(p.start, p.end))
		}
	}
	return out
}

// SplitFunc appends to out the pieces of n cut at every rune for which
// isDelim is true, treating the delimiters as behavior says (each rune is a
// delimiter of its own; Contiguous joins adjacent ones).
func (n *NormalizedString) SplitFunc(isDelim func(rune) bool, behavior SplitBehavior, out []NormalizedString) []NormalizedString {
	var matches [][2]int
	var local [32][2]int
	matches = local[:0]
	for i, r := range n.s {
		if isDelim(r) {
			matches = append(matches, [2]int{i, i + utf8.RuneLen(r)})
		}
	}
	return n.SplitMatches(matches, behavior, out)
}
