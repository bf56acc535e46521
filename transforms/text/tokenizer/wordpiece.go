package tokenizer

import (
	"strings"
	"unicode/utf8"
)

func init() {
	models["WordPiece"] = newWordPiece
}

// wordPiece is BERT's model: each word is cut greedily into the longest
// pieces of the vocabulary from the left, pieces after the first spelled
// with the continuing-subword prefix ("##"); a word that cannot be cut, or
// that has more than maxChars characters, is the unknown token.
type wordPiece struct {
	vocab    map[string]int
	cont     map[string]int // pieces that start with prefix, without it
	tokens   []string       // id -> token
	unk      string
	unkID    int
	prefix   string
	maxChars int
	maxBytes int // longest piece, in bytes, without the prefix
}

func newWordPiece(c *component) (model, error) {
	var j struct {
		Vocab                   map[string]int `json:"vocab"`
		UnkToken                *string        `json:"unk_token"`
		ContinuingSubwordPrefix *string        `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    *int           `json:"max_input_chars_per_word"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	m := &wordPiece{vocab: j.Vocab, unk: "[UNK]", prefix: "##", maxChars: 100}
	if j.UnkToken != nil {
		m.unk = *j.UnkToken
	}
	if j.ContinuingSubwordPrefix != nil {
		m.prefix = *j.ContinuingSubwordPrefix
	}
	if j.MaxInputCharsPerWord != nil {
		m.maxChars = *j.MaxInputCharsPerWord
	}
	if len(m.vocab) == 0 {
		return nil, c.errorf("empty vocab")
	}
	var ok bool
	if m.unkID, ok = m.vocab[m.unk]; !ok {
		return nil, c.errorf("unk_token %q is not in the vocab (%d tokens)", m.unk, len(m.vocab))
	}
	tokens, err := vocabTokens(c, m.vocab)
	if err != nil {
		return nil, err
	}
	m.tokens = tokens
	m.cont = make(map[string]int, len(m.vocab)/4)
	for tok, id := range m.vocab {
		piece := tok
		if m.prefix != "" && strings.HasPrefix(tok, m.prefix) {
			piece = tok[len(m.prefix):]
			m.cont[piece] = id
		}
		m.maxBytes = max(m.maxBytes, len(piece), len(tok))
	}
	if m.prefix == "" {
		m.cont = m.vocab
	}
	return m, nil
}

// vocabTokens inverts a token -> id vocabulary, refusing negative or
// repeated ids.
func vocabTokens(c *component, vocab map[string]int) ([]string, error) {
	n := 0
	for tok, id := range vocab {
		if id < 0 {
			return nil, c.errorf("vocab: token %q has id %d", tok, id)
		}
		n = max(n, id+1)
	}
	tokens := make([]string, n)
	seen := make([]bool, n)
	for tok, id := range vocab {
		if seen[id] {
			return nil, c.errorf("vocab: id %d is both %q and %q", id, tokens[id], tok)
		}
		tokens[id], seen[id] = tok, true
	}
	return tokens, nil
}

func (m *wordPiece) tokenize(word string, out []Token) []Token {
	unk := Token{ID: m.unkID, Value: m.unk, Start: 0, End: len(word)}
	if len(word) > m.maxChars && utf8.RuneCountInString(word) > m.maxChars {
		return append(out, unk)
	}
	// The whole word is the common case.
	if id, ok := m.vocab[word]; ok {
		return append(out, Token{ID: id, Value: m.tokens[id], Start: 0, End: len(word)})
	}
	first := len(out)
	for start := 0; start < len(word); {
		dict := m.vocab
		if start > 0 {
			dict = m.cont
		}
		end := len(word)
		if end-start > m.maxBytes {
			// No piece is longer: start at the last rune boundary within
			// maxBytes.
			end = start + m.maxBytes
			for end > start && !utf8.RuneStart(word[end]) {
				end--
			}
		}
		found := false
		for end > start {
			if id, ok := dict[word[start:end]]; ok {
				out = append(out, Token{ID: id, Value: m.tokens[id], Start: start, End: end})
				found = true
				break
			}
			// Back one rune.
			end--
			for end > start && !utf8.RuneStart(word[end]) {
				end--
			}
		}
		if !found {
			return append(out[:first], unk)
		}
		start = end
	}
	return out
}

func (m *wordPiece) tokenToID(token string) (int, bool) {
	id, ok := m.vocab[token]
	return id, ok
}

func (m *wordPiece) idToToken(id int) (string, bool) {
	if id < 0 || id >= len(m.tokens) || (m.tokens[id] == "" && m.vocab[""] != id) {
		return "", false
	}
	return m.tokens[id], true
}

func (m *wordPiece) vocabSize() int { return len(m.vocab) }
