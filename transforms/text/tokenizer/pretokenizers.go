package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

func init() {
	preTokenizers["BertPreTokenizer"] = func(*component) (preTokenizer, error) { return bertPreTokenizer{}, nil }
}

// bertPreTokenizer is BERT's basic tokenizer: words split at white space
// (removed) and every punctuation character a word of its own.
type bertPreTokenizer struct{}

func (bertPreTokenizer) preTokenize(p *preTokenized) {
	p.splitEach(func(n *NormalizedString, out []NormalizedString) []NormalizedString {
		s := n.s
		start := -1 // start of the current word
		for i := 0; i < len(s); {
			c := s[i]
			var r rune
			size := 1
			if c < utf8.RuneSelf {
				r = rune(c)
			} else {
				r, size = utf8.DecodeRuneInString(s[i:])
			}
			switch {
			case isJSSpace(r):
				if start >= 0 {
					out = append(out, n.Slice(start, i))
					start = -1
				}
			case isBertPunct(r):
				if start >= 0 {
					out = append(out, n.Slice(start, i))
					start = -1
				}
				out = append(out, n.Slice(i, i+size))
			default:
				if start < 0 {
					start = i
				}
			}
			i += size
		}
		if start >= 0 {
			out = append(out, n.Slice(start, len(s)))
		}
		return out
	})
}

func (bertPreTokenizer) cutBefore(r rune) bool { return isJSSpace(r) || isBertPunct(r) }

// isBertPunct is BERT's punctuation: the ASCII symbols and punctuation, and
// Unicode's punctuation categories (P*).
func isBertPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return (r >= 0x21 && r <= 0x2f) || (r >= 0x3a && r <= 0x40) || (r >= 0x5b && r <= 0x60) || (r >= 0x7b && r <= 0x7e)
	}
	return unicode.IsPunct(r)
}
