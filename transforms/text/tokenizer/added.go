package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// addedToken is one entry of tokenizer.json's added_tokens.
type addedToken struct {
	id         int
	content    string
	singleWord bool
	lstrip     bool
	rstrip     bool
	normalized bool
	special    bool
}

func (a *addedToken) specialMask() int {
	if a.special {
		return 1
	}
	return 0
}

// addedVocab finds added tokens in the text before the model sees it, as
// Hugging Face does: those with normalized false in the original text,
// before normalization; those with normalized true in the normalized text
// of each section between them.
type addedVocab struct {
	tokens        []addedToken
	byContent     map[string]int // content -> index in tokens
	byID          map[int]int
	raw           matcher // tokens matched in the original text
	norm          matcher // normalized contents of normalized tokens
	hasNormalized bool
}

// section is a byte range of the text being split, an added token (index
// into tokens) or not (-1).
type section struct {
	start, end int
	added      int
}

// matcher finds the leftmost-longest occurrences of a set of strings.
type matcher struct {
	first [256]bool
	trie  []trieNode
}

type trieNode struct {
	next  map[byte]int32
	token int32 // index into tokens + 1, 0 when no token ends here
}

func (m *matcher) add(s string, token int) {
	if s == "" {
		return
	}
	if len(m.trie) == 0 {
		m.trie = append(m.trie, trieNode{})
	}
	m.first[s[0]] = true
	node := 0
	for i := 0; i < len(s); i++ {
		nx, ok := m.trie[node].next[s[i]]
		if !ok {
			if m.trie[node].next == nil {
				m.trie[node].next = map[byte]int32{}
			}
			nx = int32(len(m.trie))
			m.trie[node].next[s[i]] = nx
			m.trie = append(m.trie, trieNode{})
		}
		node = int(nx)
	}
	if m.trie[node].token == 0 {
		m.trie[node].token = int32(token + 1)
	}
}

// longest returns the index of the longest token starting at s[i:] and its
// length, or -1.
func (m *matcher) longest(s string, i int) (int, int) {
	if len(m.trie) == 0 || !m.first[s[i]] {
		return -1, 0
	}
	node, best, bestLen := 0, -1, 0
	for j := i; j < len(s); j++ {
		nx, ok := m.trie[node].next[s[j]]
		if !ok {
			break
		}
		node = int(nx)
		if tk := m.trie[node].token; tk != 0 {
			best, bestLen = int(tk-1), j+1-i
		}
	}
	return best, bestLen
}

func (t *Tokenizer) setAddedTokens(l *loader, list []addedTokenJSON) error {
	v := &t.added
	v.byContent = map[string]int{}
	v.byID = map[int]int{}
	for i, j := range list {
		if j.ID == nil {
			return fmt.Errorf("%s: added_tokens[%d]: no id", l.name, i)
		}
		if j.Content == "" {
			return fmt.Errorf("%s: added_tokens[%d]: empty content", l.name, i)
		}
		a := addedToken{
			id: *j.ID, content: j.Content, singleWord: j.SingleWord,
			lstrip: j.LStrip, rstrip: j.RStrip, special: j.Special,
			normalized: !j.Special,
		}
		if j.Normalized != nil {
			a.normalized = *j.Normalized
		}
		idx := len(v.tokens)
		v.tokens = append(v.tokens, a)
		v.byContent[a.content] = idx
		v.byID[a.id] = idx
		if a.normalized && t.normalizer != nil {
			n := newNormalized(a.content, 0, len(a.content))
			t.normalizer.normalize(&n)
			v.norm.add(n.s, idx)
			if n.s != "" {
				v.hasNormalized = true
				if _, ok := v.byContent[n.s]; !ok {
					v.byContent[n.s] = idx
				}
			}
		} else {
			v.raw.add(a.content, idx)
		}
	}
	return nil
}

// split cuts s[start:end] into sections at the added tokens (the
// normalized ones when normalized), removing the whitespace an lstrip token
// takes from the section before it and an rstrip token from the section
// after it.
func (v *addedVocab) split(s string, start, end int, normalized bool, out []section) []section {
	m := &v.raw
	if normalized {
		m = &v.norm
	}
	if len(m.trie) == 0 {
		return append(out, section{start, end, -1})
	}
	first := len(out)
	prev := start
	for i := start; i < end; {
		tk, n := m.longest(s[:end], i)
		if tk < 0 {
			i++
			continue
		}
		if v.tokens[tk].singleWord && !singleWord(s, start, end, i, i+n) {
			// Hugging Face drops the match and goes on after it.
			i += n
			continue
		}
		if i > prev {
			out = append(out, section{prev, i, -1})
		}
		out = append(out, section{i, i + n, tk})
		i += n
		prev = i
	}
	if prev < end {
		out = append(out, section{prev, end, -1})
	}
	secs := out[first:]
	for i, sc := range secs {
		if sc.added < 0 {
			continue
		}
		a := &v.tokens[sc.added]
		// The white space an lstrip or rstrip token takes becomes part of
		// it (its offsets), as in Hugging Face's Rust crate.
		if a.lstrip && i > 0 && secs[i-1].added < 0 {
			p := &secs[i-1]
			p.end = p.start + len(strings.TrimRightFunc(s[p.start:p.end], isJSSpace))
			secs[i].start = p.end
		}
		if a.rstrip && i+1 < len(secs) && secs[i+1].added < 0 {
			p := &secs[i+1]
			p.start = p.end - len(strings.TrimLeftFunc(s[p.start:p.end], isJSSpace))
			secs[i].end = p.start
		}
	}
	return out
}

// singleWord reports whether s[i:j] stands alone as a word within
// s[start:end]: no word character right before or after it (single_word).
func singleWord(s string, start, end, i, j int) bool {
	if i > start {
		r, _ := utf8.DecodeLastRuneInString(s[start:i])
		if isWordChar(r) {
			return false
		}
	}
	if j < end {
		r, _ := utf8.DecodeRuneInString(s[j:end])
		if isWordChar(r) {
			return false
		}
	}
	return true
}

// isJSSpace reports whether r is white space as JavaScript's \s and trim()
// define it (WhiteSpace and LineTerminator), which the reference uses.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}
