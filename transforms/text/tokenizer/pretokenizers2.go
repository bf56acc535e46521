package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

func init() {
	preTokenizers["Whitespace"] = func(*component) (preTokenizer, error) { return whitespace{}, nil }
	preTokenizers["WhitespaceSplit"] = func(*component) (preTokenizer, error) { return whitespaceSplit{}, nil }
	preTokenizers["Punctuation"] = newPunctuation
	preTokenizers["Digits"] = newDigits
	preTokenizers["Split"] = newSplit
	preTokenizers["Sequence"] = newPreTokenizerSequence
}

// parseBehavior reads the "behavior" field of c (def when absent).
func parseBehavior(c *component, def SplitBehavior) (SplitBehavior, error) {
	var j struct {
		Behavior *string `json:"behavior"`
	}
	if err := c.decode(&j); err != nil {
		return 0, err
	}
	if j.Behavior == nil {
		return def, nil
	}
	switch *j.Behavior {
	case "Removed":
		return Removed, nil
	case "Isolated":
		return Isolated, nil
	case "MergedWithPrevious":
		return MergedWithPrevious, nil
	case "MergedWithNext":
		return MergedWithNext, nil
	case "Contiguous":
		return Contiguous, nil
	}
	return 0, c.errorf("behavior %q, want Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous", *j.Behavior)
}

// isWordChar is \w of Hugging Face's Rust crate (Unicode): letters, marks,
// decimal digits, connector punctuation, letter numbers, the joiners.
func isWordChar(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')
	}
	return unicode.In(r, unicode.L, unicode.M, unicode.Nd, unicode.Pc, unicode.Nl) || r == 0x200c || r == 0x200d
}

// whitespace is the Whitespace pre-tokenizer: the matches of \w+|[^\w\s]+,
// runs of word characters and runs of other non-space characters. \w is
// Unicode's, as in Hugging Face's Rust crate (tokenizers.js 0.2.0 compiles
// the pattern without the u flag, so its \w is ASCII only and it splits
// "café" into "caf" and "é"; this package does not follow it there).
type whitespace struct{}

func (whitespace) preTokenize(p *preTokenized) {
	p.splitEach(func(n *NormalizedString, out []NormalizedString) []NormalizedString {
		s := n.s
		start, kind := -1, 0 // kind of the current run: 1 word, 2 other
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			k := 2
			switch {
			case isWordChar(r):
				k = 1
			case unicode.IsSpace(r):
				k = 0
			}
			if k != kind {
				if kind != 0 {
					out = append(out, n.Slice(start, i))
				}
				start, kind = i, k
			}
			i += size
		}
		if kind != 0 {
			out = append(out, n.Slice(start, len(s)))
		}
		return out
	})
}

func (whitespace) cutBefore(r rune) bool { return unicode.IsSpace(r) }

// whitespaceSplit splits at white space (Unicode's White_Space, as Rust's
// char::is_whitespace), removing it.
type whitespaceSplit struct{}

func (whitespaceSplit) preTokenize(p *preTokenized) {
	p.splitEach(func(n *NormalizedString, out []NormalizedString) []NormalizedString {
		return n.SplitFunc(unicode.IsSpace, Removed, out)
	})
}

func (whitespaceSplit) cutBefore(r rune) bool { return unicode.IsSpace(r) }

// punctuation isolates punctuation characters (behavior, default
// Isolated).
type punctuation struct{ behavior SplitBehavior }

func newPunctuation(c *component) (preTokenizer, error) {
	b, err := parseBehavior(c, Isolated)
	return punctuation{b}, err
}

func (pt punctuation) preTokenize(p *preTokenized) {
	p.splitEach(func(n *NormalizedString, out []NormalizedString) []NormalizedString {
		return n.SplitFunc(isBertPunct, pt.behavior, out)
	})
}

// digits splits ASCII digits from the rest: each digit on its own
// (individual_digits) or runs of digits.
type digits struct{ individual bool }

func newDigits(c *component) (preTokenizer, error) {
	var j struct {
		IndividualDigits bool `json:"individual_digits"`
	}
	err := c.decode(&j)
	return digits{j.IndividualDigits}, err
}

func isASCIIDigit(r rune) bool { return '0' <= r && r <= '9' }

func (d digits) preTokenize(p *preTokenized) {
	b := Contiguous
	if d.individual {
		b = Isolated
	}
	p.splitEach(func(n *NormalizedString, out []NormalizedString) []NormalizedString {
		return n.SplitFunc(isASCIIDigit, b, out)
	})
}

// split is the Split pre-tokenizer: the matches of a pattern are the
// delimiters, treated as behavior says; with invert the text between
// matches is.
type split struct {
	pattern  pattern
	behavior SplitBehavior
	invert   bool
}

func newSplit(c *component) (preTokenizer, error) {
	var j struct {
		Behavior *string `json:"behavior"`
		Invert   bool    `json:"invert"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	if j.Behavior == nil {
		return nil, c.errorf("no \"behavior\"")
	}
	b, err := parseBehavior(c, Removed)
	if err != nil {
		return nil, err
	}
	pat, err := parsePattern(c, "pattern")
	if err != nil {
		return nil, err
	}
	return split{pattern: pat, behavior: b, invert: j.Invert}, nil
}

func (sp split) preTokenize(p *preTokenized) {
	var buf [16][2]int
	p.splitEach(func(n *NormalizedString, out []NormalizedString) []NormalizedString {
		m := sp.pattern.find(n.s, buf[:0])
		return n.splitEntries(matchEntries(m, n.Len(), sp.invert), sp.behavior, out)
	})
}

// preTokenizerSequence applies pre-tokenizers in order, each to the pieces
// of the one before.
type preTokenizerSequence []preTokenizer

func newPreTokenizerSequence(c *component) (preTokenizer, error) {
	items, path, err := c.list("pretokenizers")
	if err != nil {
		return nil, err
	}
	var seq preTokenizerSequence
	for i, raw := range items {
		if isNull(raw) {
			continue
		}
		pt, err := c.l.preTokenizer(path+"["+itoa(i)+"]", raw)
		if err != nil {
			return nil, err
		}
		seq = append(seq, pt)
	}
	return seq, nil
}

func (seq preTokenizerSequence) preTokenize(p *preTokenized) {
	for _, pt := range seq {
		pt.preTokenize(p)
	}
}

// Cutting before a character (see cutter): a punctuation character may be
// cut before when it is split off on its own; digits and Split patterns
// are never cut before (the pieces may span the cut), but they work piece
// by piece, so a Sequence of them and a white-space splitter may be cut
// where the splitter allows.
func (pt punctuation) cutBefore(r rune) bool {
	return (pt.behavior == Isolated || pt.behavior == Removed) && isBertPunct(r)
}
func (digits) cutBefore(rune) bool { return false }
func (split) cutBefore(rune) bool  { return false }

func (seq preTokenizerSequence) cutBefore(r rune) bool {
	ok := false
	for _, pt := range seq {
		c, is := pt.(cutter)
		if !is {
			return false
		}
		ok = ok || c.cutBefore(r)
	}
	return ok
}
