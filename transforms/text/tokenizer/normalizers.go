package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func init() {
	normalizers["BertNormalizer"] = newBertNormalizer
	normalizers["Sequence"] = newNormalizerSequence
	normalizers["NFC"] = unicodeForm(norm.NFC)
	normalizers["NFD"] = unicodeForm(norm.NFD)
	normalizers["NFKC"] = unicodeForm(norm.NFKC)
	normalizers["NFKD"] = unicodeForm(norm.NFKD)
	normalizers["Lowercase"] = func(*component) (normalizer, error) { return lowercase{}, nil }
	normalizers["StripAccents"] = func(*component) (normalizer, error) { return stripMarks{}, nil }
	normalizers["Strip"] = newStrip
	normalizers["Prepend"] = newPrepend
	normalizers["Replace"] = newReplaceNormalizer
}

// bertNormalizer is BERT's normalizer: control characters removed and
// white space made a plain space (clean_text), spaces around CJK ideographs
// (handle_chinese_chars), lower case, accents removed (strip_accents; null,
// the default, follows lowercase).
type bertNormalizer struct {
	clean, chinese, lower, strip bool
}

func newBertNormalizer(c *component) (normalizer, error) {
	var j struct {
		CleanText          *bool `json:"clean_text"`
		HandleChineseChars *bool `json:"handle_chinese_chars"`
		StripAccents       *bool `json:"strip_accents"`
		Lowercase          *bool `json:"lowercase"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	b := bertNormalizer{clean: true, chinese: true, lower: true}
	if j.CleanText != nil {
		b.clean = *j.CleanText
	}
	if j.HandleChineseChars != nil {
		b.chinese = *j.HandleChineseChars
	}
	if j.Lowercase != nil {
		b.lower = *j.Lowercase
	}
	b.strip = b.lower
	if j.StripAccents != nil {
		b.strip = *j.StripAccents
	}
	return b, nil
}

func (b bertNormalizer) normalize(n *NormalizedString) {
	if b.clean || b.chinese {
		b.cleanAndSpace(n)
	}
	if b.lower {
		lowercase{}.normalize(n)
	}
	if b.strip {
		stripAccentsNFD(n)
	}
}

// safeCut reports whether a text may be cut before r without changing what
// the normalizers that look at one character at a time do: r is white
// space or punctuation, neither cased nor case-ignorable (lower-case's
// final sigma looks past case-ignorable characters), a starter that
// composes with nothing before it (Unicode normalization).
func safeCut(r rune) bool {
	if isJSSpace(r) {
		return true
	}
	return isBertPunct(r) && !isCaseIgnorable(r)
}

func (b bertNormalizer) cutBefore(r rune) bool { return safeCut(r) || b.spacedBefore(r) }

// spacedBefore reports whether the normalizer puts a space before r (a
// CJK ideograph), so that a white-space splitting pre-tokenizer may be cut
// there too.
func (b bertNormalizer) spacedBefore(r rune) bool { return b.chinese && isChineseBMP(r) }
func (lowercase) cutBefore(r rune) bool           { return safeCut(r) }
func (stripMarks) cutBefore(r rune) bool          { return safeCut(r) }
func (formNormalizer) cutBefore(r rune) bool      { return safeCut(r) }

func (seq normalizerSequence) cutBefore(r rune) bool {
	for _, nz := range seq {
		c, ok := nz.(cutter)
		if !ok || !c.cutBefore(r) {
			return false
		}
	}
	return true
}

// cleanAndSpace does clean_text and handle_chinese_chars in one pass (each
// looks at one character at a time, so one pass equals two).
func (b bertNormalizer) cleanAndSpace(n *NormalizedString) {
	s := n.s
	var e *Editor
	mark := 0 // bytes before mark are handled
	edit := func(i, size int, repl string) {
		if e == nil {
			e = n.Edit()
		}
		e.Keep(i - mark)
		e.Replace(size, repl)
		mark = i + size
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if b.clean {
				switch {
				case c == '\t' || c == '\n' || c == '\r':
					edit(i, 1, " ")
				case c < 0x20 || c == 0x7f:
					edit(i, 1, "")
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case b.clean && (r == 0xfffd || isJSControl(r)):
			edit(i, size, "")
		case b.clean && isJSSpace(r):
			edit(i, size, " ")
		case b.chinese && isChineseBMP(r):
			edit(i, size, " "+s[i:i+size]+" ")
		}
		i += size
	}
	if e != nil {
		e.Done()
	}
}

// isJSControl is the reference's is_control: Cc, Cf, Co or Cs, but not
// tab, newline or carriage return. (Hugging Face's Rust crate also removes
// unassigned code points, Cn.)
func isJSControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// isChineseBMP is BERT's _is_chinese_char as the reference applies it: one
// UTF-16 code unit at a time, so only the ideographs of the Basic
// Multilingual Plane get spaces around them (the Rust crate also spaces
// those of the supplementary planes, CJK Extension B and later).
func isChineseBMP(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0xF900 && r <= 0xFAFF)
}

// lowercase is JavaScript's String.prototype.toLowerCase, which the
// reference uses: Unicode's full lower-case mapping (İ becomes i̇) with
// the final-sigma rule.
type lowercase struct{}

func (lowercase) normalize(n *NormalizedString) {
	s := n.s
	var e *Editor
	mark := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				if e == nil {
					e = n.Edit()
				}
				e.Keep(i - mark)
				e.ReplaceRune(1, rune(c+'a'-'A'))
				mark = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		var repl string
		switch {
		case r == 'İ':
			repl = "i\u0307"
		case r == 'Σ':
			repl = "σ"
			if finalSigma(s, i, size) {
				repl = "ς"
			}
		default:
			l := unicode.ToLower(r)
			if l == r {
				i += size
				continue
			}
			if e == nil {
				e = n.Edit()
			}
			e.Keep(i - mark)
			e.ReplaceRune(size, l)
			mark = i + size
			i += size
			continue
		}
		if e == nil {
			e = n.Edit()
		}
		e.Keep(i - mark)
		e.Replace(size, repl)
		mark = i + size
		i += size
	}
	if e != nil {
		e.Done()
	}
}

// finalSigma is Unicode's Final_Sigma condition for the Σ at s[i:i+size]:
// a cased letter before it and none after it, skipping case-ignorable
// characters.
func finalSigma(s string, i, size int) bool {
	before := false
	for j := i; j > 0; {
		r, k := utf8.DecodeLastRuneInString(s[:j])
		j -= k
		if isCaseIgnorable(r) {
			continue
		}
		before = isCased(r)
		break
	}
	if !before {
		return false
	}
	for j := i + size; j < len(s); {
		r, k := utf8.DecodeRuneInString(s[j:])
		j += k
		if isCaseIgnorable(r) {
			continue
		}
		return !isCased(r)
	}
	return true
}

func isCased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

func isCaseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '^', '`', 0xb7, 0x2018, 0x2019, 0x2024, 0x2027, 0xfe13, 0xfe52, 0xfe55, 0xff07, 0xff0e, 0xff1a, 0x387, 0x55f, 0x5f4:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// stripAccentsNFD is BertNormalizer's strip_accents: NFD, then the
// non-spacing marks (Mn) removed.
func stripAccentsNFD(n *NormalizedString) {
	if isASCII(n.s) {
		return
	}
	applyForm(n, norm.NFD)
	removeRunes(n, func(r rune) bool { return unicode.Is(unicode.Mn, r) })
}

// stripMarks is the StripAccents normalizer as the reference has it: every
// mark (\p{M}) removed, without decomposing first (put NFD before it, as
// tokenizer.json files do).
type stripMarks struct{}

func (stripMarks) normalize(n *NormalizedString) {
	if isASCII(n.s) {
		return
	}
	removeRunes(n, func(r rune) bool { return unicode.Is(unicode.M, r) })
}

func removeRunes(n *NormalizedString, drop func(rune) bool) {
	s := n.s
	var e *Editor
	mark := 0
	for i, r := range s {
		if r < utf8.RuneSelf || !drop(r) {
			continue
		}
		if e == nil {
			e = n.Edit()
		}
		size := utf8.RuneLen(r)
		e.Keep(i - mark)
		e.Replace(size, "")
		mark = i + size
	}
	if e != nil {
		e.Done()
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// unicodeForm is the NFC, NFD, NFKC and NFKD normalizers.
func unicodeForm(f norm.Form) func(*component) (normalizer, error) {
	return func(*component) (normalizer, error) { return formNormalizer{f}, nil }
}

type formNormalizer struct{ f norm.Form }

func (u formNormalizer) normalize(n *NormalizedString) { applyForm(n, u.f) }

// applyForm normalizes n to form f one normalization segment at a time
// (norm.Iter's), so each changed segment's bytes align to that segment of
// the original.
func applyForm(n *NormalizedString, f norm.Form) {
	s := n.s
	if f.QuickSpanString(s) == len(s) {
		return
	}
	e := n.Edit()
	var it norm.Iter
	it.InitString(f, s)
	var out []byte
	for !it.Done() {
		// A long decomposition comes in several pieces before the
		// iterator moves on in the input.
		p := it.Pos()
		out = append(out[:0], it.Next()...)
		for it.Pos() == p && !it.Done() {
			out = append(out, it.Next()...)
		}
		q := it.Pos()
		if string(out) == s[p:q] {
			e.Keep(q - p)
		} else {
			e.ReplaceBytes(q-p, out)
		}
	}
	e.Done()
}

// strip removes white space (as JavaScript's trim does) from the left
// and/or the right.
type strip struct{ left, right bool }

func newStrip(c *component) (normalizer, error) {
	var j struct {
		StripLeft  bool `json:"strip_left"`
		StripRight bool `json:"strip_right"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	return strip{j.StripLeft, j.StripRight}, nil
}

func (st strip) normalize(n *NormalizedString) {
	a, b := 0, n.Len()
	if st.left {
		a = b - len(strings.TrimLeftFunc(n.s, isJSSpace))
	}
	if st.right && a < b {
		b = a + len(strings.TrimRightFunc(n.s[a:], isJSSpace))
	}
	if a == 0 && b == n.Len() {
		return
	}
	e := n.Edit()
	e.Replace(a, "")
	e.Keep(b - a)
	e.Replace(n.Len()-b, "")
	e.Done()
}

// prepend puts a string before the text (Metaspace-style tokenizers
// prepend "▁").
type prepend struct{ s string }

func newPrepend(c *component) (normalizer, error) {
	var j struct {
		Prepend *string `json:"prepend"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	if j.Prepend == nil {
		return nil, c.errorf("no \"prepend\"")
	}
	return prepend{*j.Prepend}, nil
}

func (p prepend) normalize(n *NormalizedString) {
	if n.Len() == 0 || p.s == "" {
		return
	}
	e := n.Edit()
	e.Replace(0, p.s)
	e.Done()
}

// normalizerSequence applies normalizers in order.
type normalizerSequence []normalizer

func newNormalizerSequence(c *component) (normalizer, error) {
	items, path, err := c.list("normalizers")
	if err != nil {
		return nil, err
	}
	var seq normalizerSequence
	for i, raw := range items {
		if isNull(raw) {
			continue
		}
		nz, err := c.l.normalizer(path+"["+itoa(i)+"]", raw)
		if err != nil {
			return nil, err
		}
		seq = append(seq, nz)
	}
	return seq, nil
}

func (seq normalizerSequence) normalize(n *NormalizedString) {
	for _, nz := range seq {
		nz.normalize(n)
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// replaceNormalizer replaces every match of a pattern by content.
type replaceNormalizer struct {
	pattern pattern
	content string
}

func newReplaceNormalizer(c *component) (normalizer, error) {
	var j struct {
		Content *string `json:"content"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	if j.Content == nil {
		return nil, c.errorf("no \"content\"")
	}
	p, err := parsePattern(c, "pattern")
	if err != nil {
		return nil, err
	}
	return replaceNormalizer{p, *j.Content}, nil
}

func (rn replaceNormalizer) normalize(n *NormalizedString) {
	var buf [8][2]int
	m := rn.pattern.find(n.s, buf[:0])
	if len(m) == 0 {
		return
	}
	e := n.Edit()
	for _, r := range m {
		e.Keep(r[0] - e.Pos())
		e.Replace(r[1]-r[0], rn.content)
	}
	e.Done()
}
