package tokenizer

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
)

// unigramConfig is the Unigram model as a tokenizer.json describes it.
type unigramConfig struct {
	pieces       []string
	scores       []float64
	unkID        *int
	byteFallback bool
}

// unigramModel is SentencePiece's unigram language model (Kudo 2018): the tokens of a
// word are the segmentation into vocabulary pieces with the highest total log
// probability, found by Viterbi over the lattice of pieces; a character no piece starts
// with is the unknown token, consecutive unknowns fused into one, as the Rust
// tokenizers library does. It is safe for concurrent use.
type unigramModel struct {
	pieces       []string
	scores       []float64
	ids          map[string]int32
	trie         *pieceTrie
	unkID        int32
	unkScore     float64 // the lowest piece score less 10, as SentencePiece's kUnkPenalty
	byteFallback bool
	byteIDs      [256]int32
	cache        *wordCache[[]unigramToken]
}

// unigramToken is a token of a word: its id and the byte range of the word it covers
// (all the byte tokens of a byte-fallback piece cover the whole piece, as the Rust
// library gives them).
type unigramToken struct {
	id         int32
	start, end int32
}

const unigramUnkPenalty = 10.0

func newUnigram(c unigramConfig) (*unigramModel, error) {
	if len(c.pieces) == 0 {
		return nil, fmt.Errorf("the vocabulary is empty")
	}
	if c.unkID == nil {
		return nil, fmt.Errorf("no unk_id: a vocabulary without its unknown token cannot encode a character outside it")
	}
	if *c.unkID < 0 || *c.unkID >= len(c.pieces) {
		return nil, fmt.Errorf("unk_id %d is outside the vocabulary of %d pieces", *c.unkID, len(c.pieces))
	}
	if len(c.pieces) > math.MaxInt32 {
		return nil, fmt.Errorf("the vocabulary of %d pieces is too large", len(c.pieces))
	}
	m := &unigramModel{
		pieces:       c.pieces,
		scores:       c.scores,
		ids:          make(map[string]int32, len(c.pieces)),
		unkID:        int32(*c.unkID),
		byteFallback: c.byteFallback,
		cache:        newWordCache[[]unigramToken](),
	}
	minScore := math.Inf(1)
	ids := make([]int32, len(c.pieces))
	for i, p := range c.pieces {
		if math.IsNaN(c.scores[i]) || math.IsInf(c.scores[i], 0) {
			return nil, fmt.Errorf("vocab[%d] (%q) has the score %v", i, p, c.scores[i])
		}
		if !utf8.ValidString(p) {
			return nil, fmt.Errorf("vocab[%d] is not valid UTF-8", i)
		}
		m.ids[p] = int32(i) // a piece listed twice has its last id, as in the Rust library

		minScore = min(minScore, c.scores[i])
	}
	m.unkScore = minScore - unigramUnkPenalty
	for i, p := range c.pieces {
		ids[i] = m.ids[p]
	}
	m.trie = newPieceTrie(c.pieces, ids)
	for b := range m.byteIDs {
		m.byteIDs[b] = -1
		if id, ok := m.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteIDs[b] = id
		}
	}
	return m, nil
}

// wordTokens returns the tokens of word. The slice may be shared with the cache: callers
// must not modify it.
func (m *unigramModel) wordTokens(word string) []unigramToken {
	if word == "" {
		return nil
	}
	cacheable := len(word) < bpeCacheMaxWord
	if cacheable {
		if toks, ok := m.cache.get(word); ok {
			return toks
		}
	}
	toks := m.encode(word)
	if cacheable {
		m.cache.put(word, toks)
	}
	return toks
}

type latticeNode struct {
	score   float64
	start   int32
	id      int32
	reached bool
}

// encode is the Rust library's Unigram::encode_optimized (SentencePiece's
// EncodeOptimized): best paths to every byte position, left to right.
func (m *unigramModel) encode(s string) []unigramToken {
	n := len(s)
	best := make([]latticeNode, n+1)
	best[0].reached = true
	for start := 0; start < n; {
		_, mblen := utf8.DecodeRuneInString(s[start:])
		here := best[start].score
		single := false
		m.trie.prefixes(s[start:], func(id int32, length int) {
			end := start + length
			cand := m.scores[id] + here
			if t := &best[end]; !t.reached || cand > t.score {
				*t = latticeNode{score: cand, start: int32(start), id: id, reached: true}
			}
			if length == mblen {
				single = true
			}
		})
		if !single {
			end := start + mblen
			cand := m.unkScore + here
			if t := &best[end]; !t.reached || cand > t.score {
				*t = latticeNode{score: cand, start: int32(start), id: m.unkID, reached: true}
			}
		}
		start += mblen
	}
	// Walk back from the end; consecutive unknowns fuse into one piece.
	var rev []unigramToken
	for end := n; end > 0; {
		nd := best[end]
		start := nd.start
		if nd.id == m.unkID && len(rev) > 0 && rev[len(rev)-1].id == m.unkID {
			rev[len(rev)-1].start = start
		} else {
			rev = append(rev, unigramToken{id: nd.id, start: start, end: int32(end)})
		}
		end = int(start)
	}
	out := make([]unigramToken, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		t := rev[i]
		if t.id == m.unkID {
			// As the Rust library, the (fused) piece is looked up again, then its bytes'
			// <0xNN> tokens are tried, then it is the unknown token.
			piece := s[t.start:t.end]
			if id, ok := m.ids[piece]; ok {
				t.id = id
			} else if m.byteFallback && m.allBytesKnown(piece) {
				for k := t.start; k < t.end; k++ {
					out = append(out, unigramToken{id: m.byteIDs[s[k]], start: t.start, end: t.end})
				}
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

func (m *unigramModel) allBytesKnown(s string) bool {
	for k := 0; k < len(s); k++ {
		if m.byteIDs[s[k]] < 0 {
			return false
		}
	}
	return true
}

func init() {
	models["Unigram"] = newUnigramComponent
}

// newUnigramComponent builds the "Unigram" model of a tokenizer.json: vocab is a list of
// [piece, score] pairs, the id of a piece its index.
func newUnigramComponent(c *component) (model, error) {
	var j struct {
		UnkID        *int                `json:"unk_id"`
		Vocab        [][]json.RawMessage `json:"vocab"`
		ByteFallback bool                `json:"byte_fallback"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	cfg := unigramConfig{unkID: j.UnkID, byteFallback: j.ByteFallback}
	cfg.pieces = make([]string, len(j.Vocab))
	cfg.scores = make([]float64, len(j.Vocab))
	for i, v := range j.Vocab {
		if len(v) != 2 {
			return nil, c.errorf("vocab[%d] has %d items, want [piece, score]", i, len(v))
		}
		if err := json.Unmarshal(v[0], &cfg.pieces[i]); err != nil {
			return nil, c.errorf("vocab[%d]: the piece is not a string", i)
		}
		if err := json.Unmarshal(v[1], &cfg.scores[i]); err != nil {
			return nil, c.errorf("vocab[%d] (%q): the score is not a number", i, cfg.pieces[i])
		}
	}
	m, err := newUnigram(cfg)
	if err != nil {
		return nil, c.errorf("%v", err)
	}
	return m, nil
}

func (m *unigramModel) tokenize(word string, out []Token) []Token {
	toks := m.wordTokens(word)
	out = slices.Grow(out, len(toks))
	for _, t := range toks {
		v := m.pieces[t.id]
		if t.id == m.unkID {
			v = word[t.start:t.end] // the Rust library names an unknown token by its text
		}
		out = append(out, Token{ID: int(t.id), Value: v, Start: int(t.start), End: int(t.end)})
	}
	return out
}

func (m *unigramModel) tokenToID(token string) (int, bool) {
	id, ok := m.ids[token]
	return int(id), ok
}

func (m *unigramModel) idToToken(id int) (string, bool) {
	if id < 0 || id >= len(m.pieces) {
		return "", false
	}
	return m.pieces[id], true
}

func (m *unigramModel) vocabSize() int { return len(m.pieces) }
