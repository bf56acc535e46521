package tokenizer

import (
	"strings"
	"unicode/utf8"
)

func init() {
	preTokenizers["Metaspace"] = newMetaspacePreTokenizer
	decoders["Metaspace"] = newMetaspaceDecoder
}

// prependScheme says when Metaspace puts the replacement character before a piece of
// text that does not start with it.
type prependScheme int

const (
	prependAlways prependScheme = iota // every section
	prependFirst                       // the first section of the input only
	prependNever
)

// metaspace is the Metaspace component (SentencePiece's whitespace handling): spaces
// become the replacement character (▁), prepended as prepend_scheme says, and the
// text splits before each replacement character (split); as a decoder the
// replacement characters become spaces again, the first token's leading one dropped.
type metaspace struct {
	replacement rune
	rep         string
	scheme      prependScheme
	split       bool
}

func decodeMetaspace(c *component) (metaspace, error) {
	var j struct {
		Replacement    *string `json:"replacement"`
		PrependScheme  *string `json:"prepend_scheme"`
		Split          *bool   `json:"split"`
		AddPrefixSpace *bool   `json:"add_prefix_space"` // before prepend_scheme existed
	}
	if err := c.decode(&j); err != nil {
		return metaspace{}, err
	}
	m := metaspace{replacement: '▁', scheme: prependAlways, split: true}
	if j.Replacement != nil {
		r, w := utf8.DecodeRuneInString(*j.Replacement)
		if w == 0 || w != len(*j.Replacement) || r == utf8.RuneError {
			return metaspace{}, c.errorf("replacement %q is not one character", *j.Replacement)
		}
		m.replacement = r
	}
	m.rep = string(m.replacement)
	switch {
	case j.PrependScheme != nil:
		switch *j.PrependScheme {
		case "always":
			m.scheme = prependAlways
		case "first":
			m.scheme = prependFirst
		case "never":
			m.scheme = prependNever
		default:
			return metaspace{}, c.errorf("prepend_scheme %q, want always, first or never", *j.PrependScheme)
		}
	case j.AddPrefixSpace != nil && !*j.AddPrefixSpace:
		m.scheme = prependNever
	}
	if j.Split != nil {
		m.split = *j.Split
	}
	return m, nil
}

func newMetaspacePreTokenizer(c *component) (preTokenizer, error) { return decodeMetaspace(c) }

func (m metaspace) preTokenize(p *preTokenized) {
	section := p.section
	p.splitEach(func(n *NormalizedString, out []NormalizedString) []NormalizedString {
		if n.Len() == 0 {
			return out
		}
		s := n.String()
		// Spaces become the replacement first, so the text starts with it when it
		// started with a space.
		prepend := !strings.HasPrefix(s, " ") && !strings.HasPrefix(s, m.rep) &&
			(m.scheme == prependAlways || (m.scheme == prependFirst && section == 0))
		if prepend || strings.IndexByte(s, ' ') >= 0 {
			e := n.Edit()
			if prepend {
				// As the Rust library's prepend: the replacement takes the first
				// character's place and that character follows it, both aligned
				// to the first character.
				_, w := utf8.DecodeRuneInString(s)
				e.Replace(w, m.rep+s[:w])
			}
			for i := strings.IndexByte(s, ' '); i >= 0; {
				e.Keep(i - e.Pos())
				e.Replace(1, m.rep)
				next := strings.IndexByte(s[i+1:], ' ')
				if next < 0 {
					break
				}
				i += 1 + next
			}
			e.Done()
		}
		if !m.split {
			return append(out, *n)
		}
		return n.SplitFunc(func(r rune) bool { return r == m.replacement }, MergedWithNext, out)
	})
}

func newMetaspaceDecoder(c *component) (decoder, error) { return decodeMetaspace(c) }

func (m metaspace) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		d := strings.ReplaceAll(t, m.rep, " ")
		if i == 0 && m.scheme != prependNever {
			d = strings.TrimPrefix(d, " ")
		}
		out[i] = d
	}
	return out
}
