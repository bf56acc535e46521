package tokenizer

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// bpeToken is one token of a word: its id and the byte range it covers in the word.
type bpeToken struct {
	id         int32
	start, end int32
}

// bpeMerge is what a merge rule makes of a pair: its rank (lower merges first) and the id
// of the merged token.
type bpeMerge struct {
	rank, id int32
}

// bpeConfig is the BPE model as a tokenizer.json describes it, validated by newBPE.
type bpeConfig struct {
	vocab                   map[string]int32
	merges                  [][2]string
	unkToken                *string
	continuingSubwordPrefix string
	endOfWordSuffix         string
	fuseUnk                 bool
	byteFallback            bool
	ignoreMerges            bool
}

// bpeModel is a byte-pair-encoding model (Sennrich et al.; GPT-2's byte-level form when the
// pre-tokenizer maps bytes to characters first). It merges the pair of adjacent symbols
// with the lowest merge rank, leftmost first, until no pair merges, as the Rust tokenizers
// library does. It is safe for concurrent use.
type bpeModel struct {
	vocab                   map[string]int32
	vocabR                  []string
	merges                  map[uint64]bpeMerge
	unkID                   int32 // -1 without an unknown token
	continuingSubwordPrefix string
	endOfWordSuffix         string
	fuseUnk                 bool
	byteFallback            bool
	ignoreMerges            bool
	byteIDs                 [256]int32 // id of <0xNN>, -1 where absent (byte fallback)
	cache                   *wordCache[[]bpeToken]
}

// bpeCacheMaxWord is the longest word (in bytes) kept in the word cache, as the Rust
// library's MAX_LENGTH.
const bpeCacheMaxWord = 256

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// newBPE validates c and builds the model. Errors say what is wrong without the file's
// name; the loader adds it.
func newBPE(c bpeConfig) (*bpeModel, error) {
	if len(c.vocab) == 0 {
		return nil, fmt.Errorf("BPE vocabulary is empty")
	}
	maxID := int32(-1)
	for tok, id := range c.vocab {
		if id < 0 {
			return nil, fmt.Errorf("BPE vocabulary gives %q the negative id %d", tok, id)
		}
		if id > maxID {
			maxID = id
		}
	}
	if int64(maxID) >= 2*int64(len(c.vocab))+1024 {
		return nil, fmt.Errorf("BPE vocabulary of %d tokens has id %d: ids this sparse are not supported", len(c.vocab), maxID)
	}
	m := &bpeModel{
		vocab:                   c.vocab,
		vocabR:                  make([]string, maxID+1),
		merges:                  make(map[uint64]bpeMerge, len(c.merges)),
		unkID:                   -1,
		continuingSubwordPrefix: c.continuingSubwordPrefix,
		endOfWordSuffix:         c.endOfWordSuffix,
		fuseUnk:                 c.fuseUnk,
		byteFallback:            c.byteFallback,
		ignoreMerges:            c.ignoreMerges,
		cache:                   newWordCache[[]bpeToken](),
	}
	seen := make([]bool, maxID+1)
	for tok, id := range c.vocab {
		if seen[id] {
			return nil, fmt.Errorf("BPE vocabulary gives id %d to both %q and %q", id, m.vocabR[id], tok)
		}
		seen[id] = true
		m.vocabR[id] = tok
	}
	if c.unkToken != nil {
		id, ok := c.vocab[*c.unkToken]
		if !ok {
			return nil, fmt.Errorf("BPE unk_token %q is not in the vocabulary", *c.unkToken)
		}
		m.unkID = id
	}
	for b := range m.byteIDs {
		m.byteIDs[b] = -1
		if id, ok := c.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteIDs[b] = id
		}
	}
	if len(c.merges) > math.MaxInt32 {
		return nil, fmt.Errorf("BPE has %d merges, too many", len(c.merges))
	}
	prefixLen := len(c.continuingSubwordPrefix)
	for i, pair := range c.merges {
		a, b := pair[0], pair[1]
		ida, ok := c.vocab[a]
		if !ok {
			return nil, fmt.Errorf("BPE merge %d (%q %q): %q is not in the vocabulary", i, a, b, a)
		}
		idb, ok := c.vocab[b]
		if !ok {
			return nil, fmt.Errorf("BPE merge %d (%q %q): %q is not in the vocabulary", i, a, b, b)
		}
		// As the Rust library: the merged token is a followed by b less the length of the
		// continuing-subword prefix.
		if prefixLen > len(b) {
			return nil, fmt.Errorf("BPE merge %d (%q %q): %q is shorter than the continuing_subword_prefix %q", i, a, b, b, c.continuingSubwordPrefix)
		}
		merged := a + b[prefixLen:]
		idm, ok := c.vocab[merged]
		if !ok {
			return nil, fmt.Errorf("BPE merge %d (%q %q): the merged token %q is not in the vocabulary", i, a, b, merged)
		}
		// A pair listed twice keeps its last rank, as the Rust library's map does.
		m.merges[pairKey(ida, idb)] = bpeMerge{rank: int32(i), id: idm}
	}
	return m, nil
}

// wordTokens returns the tokens of word (one pre-tokenized piece). The slice may be shared
// with the cache: callers must not modify it.
func (m *bpeModel) wordTokens(word string) []bpeToken {
	if word == "" {
		return nil
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[word]; ok {
			return []bpeToken{{id: id, start: 0, end: int32(len(word))}}
		}
	}
	cacheable := len(word) < bpeCacheMaxWord
	if cacheable {
		if toks, ok := m.cache.get(word); ok {
			return toks
		}
	}
	toks := m.mergeWord(word)
	if cacheable {
		m.cache.put(word, toks)
	}
	return toks
}

// bpeSymbol is a symbol of a word being merged: a doubly linked list over the initial
// characters; a merged-away symbol has length 0.
type bpeSymbol struct {
	id         int32
	prev, next int32
	start, len int32
}

// mergeWord splits word into its initial symbols (characters, with the prefix and
// suffix, the unknown token or byte fallback as the Rust library does) and merges them.
func (m *bpeModel) mergeWord(word string) []bpeToken {
	syms := make([]bpeSymbol, 0, utf8.RuneCountInString(word))
	add := func(id int32, start, length int) {
		p := int32(len(syms) - 1)
		syms = append(syms, bpeSymbol{id: id, prev: p, next: -1, start: int32(start), len: int32(length)})
		if p >= 0 {
			syms[p].next = p + 1
		}
	}
	unkID, unkStart, unkLen := int32(-1), 0, 0
	flushUnk := func() {
		if unkID >= 0 {
			add(unkID, unkStart, unkLen)
			unkID = -1
		}
	}
	var buf []byte
	for i := 0; i < len(word); {
		_, w := utf8.DecodeRuneInString(word[i:])
		end := i + w
		var s string
		if (i > 0 && m.continuingSubwordPrefix != "") || (end == len(word) && m.endOfWordSuffix != "") {
			buf = buf[:0]
			if i > 0 {
				buf = append(buf, m.continuingSubwordPrefix...)
			}
			buf = append(buf, word[i:end]...)
			if end == len(word) {
				buf = append(buf, m.endOfWordSuffix...)
			}
			s = string(buf)
		} else {
			s = word[i:end]
		}
		if id, ok := m.vocab[s]; ok {
			flushUnk()
			add(id, i, w)
		} else if m.byteFallback && m.allBytesKnown(s) {
			// The Rust library looks up the bytes of the symbol with its prefix and
			// suffix, each byte token covering one byte of the word.
			flushUnk()
			for k := 0; k < len(s); k++ {
				add(m.byteIDs[s[k]], i, 1)
			}
		} else if m.unkID >= 0 {
			if unkID >= 0 && m.fuseUnk {
				unkLen += w
			} else {
				flushUnk()
				unkID, unkStart, unkLen = m.unkID, i, w
			}
		}
		// Without an unknown token an unknown character is dropped, as the Rust library does.
		i = end
	}
	flushUnk()
	m.mergeAll(syms)
	live := 0
	for i := int32(0); len(syms) > 0 && i >= 0; i = syms[i].next {
		live++
	}
	out := make([]bpeToken, 0, live)
	for i := int32(0); len(syms) > 0 && i >= 0; i = syms[i].next {
		s := syms[i]
		t := bpeToken{id: s.id, start: s.start, end: s.start + s.len}
		// A byte-fallback token covers one byte of a character; its offsets
		// widen to the whole character (the Rust library leaves them inside it,
		// which no text can be sliced at).
		for t.start > 0 && !utf8.RuneStart(word[t.start]) {
			t.start--
		}
		for int(t.end) < len(word) && !utf8.RuneStart(word[t.end]) {
			t.end++
		}
		out = append(out, t)
	}
	return out
}

func (m *bpeModel) allBytesKnown(s string) bool {
	for k := 0; k < len(s); k++ {
		if m.byteIDs[s[k]] < 0 {
			return false
		}
	}
	return true
}

// bpeHeapItem is a candidate merge: the pair starting at symbol pos, ordered by rank then
// position (key is rank<<32 | pos), and the id the merge makes.
type bpeHeapItem struct {
	key uint64
	id  int32
}

func heapKey(rank, pos int32) uint64 { return uint64(uint32(rank))<<32 | uint64(uint32(pos)) }

// bpeHeap is a 4-ary min-heap of candidate merges (shallower than a binary heap: a
// word of millions of characters touches fewer cache lines per pop).
type bpeHeap []bpeHeapItem

func (h bpeHeap) down(i int) {
	n := len(h)
	it := h[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		best := c
		for k := c + 1; k < c+4 && k < n; k++ {
			if h[k].key < h[best].key {
				best = k
			}
		}
		if h[best].key >= it.key {
			break
		}
		h[i] = h[best]
		i = best
	}
	h[i] = it
}

func (h *bpeHeap) push(it bpeHeapItem) {
	*h = append(*h, it)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 4
		if s[p].key <= it.key {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = it
}

func (h *bpeHeap) pop() bpeHeapItem {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	if last > 0 {
		(*h).down(0)
	}
	return top
}

// mergeAll applies the merges to the linked symbols: the lowest rank first, leftmost
// among equal ranks, as the Rust library's priority queue does. Small words scan for the
// best pair; longer ones use a heap, so a word of n characters costs O(n log n), not
// O(n²).
func (m *bpeModel) mergeAll(syms []bpeSymbol) {
	if len(syms) < 2 {
		return
	}
	if len(syms) <= 12 {
		m.mergeScan(syms)
		return
	}
	// The pairs of the initial symbols, sorted (sequential, cheaper than heap pops),
	// and a heap of the pairs merges make; the next merge is the smaller of their heads.
	initial := make([]bpeHeapItem, 0, len(syms)-1)
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			initial = append(initial, bpeHeapItem{key: heapKey(mg.rank, int32(i)), id: mg.id})
		}
	}
	slices.SortFunc(initial, func(a, b bpeHeapItem) int { return cmp.Compare(a.key, b.key) })
	h := make(bpeHeap, 0, len(initial)/4+16)
	for len(initial) > 0 || len(h) > 0 {
		var top bpeHeapItem
		if len(h) == 0 || (len(initial) > 0 && initial[0].key < h[0].key) {
			top, initial = initial[0], initial[1:]
		} else {
			top = h.pop()
		}
		pos := int32(uint32(top.key))
		cur := &syms[pos]
		if cur.len == 0 || cur.next < 0 {
			continue
		}
		right := syms[cur.next]
		if mg, ok := m.merges[pairKey(cur.id, right.id)]; !ok || mg.id != top.id {
			continue // stale: one side has merged since this was queued
		}
		cur.id = top.id
		cur.len += right.len
		syms[cur.next].len = 0
		cur.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = pos
		}
		if cur.prev >= 0 {
			if mg, ok := m.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				h.push(bpeHeapItem{key: heapKey(mg.rank, cur.prev), id: mg.id})
			}
		}
		if cur.next >= 0 {
			if mg, ok := m.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				h.push(bpeHeapItem{key: heapKey(mg.rank, pos), id: mg.id})
			}
		}
	}
}

// mergeScan is mergeAll for short words: find the best pair by scanning, merge, repeat.
func (m *bpeModel) mergeScan(syms []bpeSymbol) {
	for {
		best := struct{ rank, pos, id int32 }{rank: math.MaxInt32, pos: -1}
		for i := int32(0); i >= 0 && syms[i].next >= 0; i = syms[i].next {
			if mg, ok := m.merges[pairKey(syms[i].id, syms[syms[i].next].id)]; ok && mg.rank < best.rank {
				best.rank, best.pos, best.id = mg.rank, i, mg.id
			}
		}
		if best.pos < 0 {
			return
		}
		cur := &syms[best.pos]
		right := syms[cur.next]
		cur.id = best.id
		cur.len += right.len
		syms[cur.next].len = 0
		cur.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = best.pos
		}
	}
}

// parseMerges reads a tokenizer.json merges list in either form: "a b" strings (split at
// its one space, as the Rust library does) or ["a", "b"] pairs.
func parseMerges(raw []any) ([][2]string, error) {
	out := make([][2]string, len(raw))
	for i, r := range raw {
		switch v := r.(type) {
		case string:
			a, b, ok := strings.Cut(v, " ")
			if !ok || strings.Contains(b, " ") {
				return nil, fmt.Errorf("BPE merge %d %q is not two tokens separated by a space", i, v)
			}
			out[i] = [2]string{a, b}
		case []any:
			if len(v) != 2 {
				return nil, fmt.Errorf("BPE merge %d has %d parts, not 2", i, len(v))
			}
			a, ok1 := v[0].(string)
			b, ok2 := v[1].(string)
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("BPE merge %d is not a pair of strings", i)
			}
			out[i] = [2]string{a, b}
		default:
			return nil, fmt.Errorf("BPE merge %d is neither a string nor a pair of strings", i)
		}
	}
	return out, nil
}

func init() {
	models["BPE"] = newBPEComponent
	decoders["BPEDecoder"] = newBPEDecoder
}

// newBPEComponent builds the "BPE" model of a tokenizer.json.
func newBPEComponent(c *component) (model, error) {
	var j struct {
		Vocab                   map[string]int `json:"vocab"`
		Merges                  []any          `json:"merges"`
		UnkToken                *string        `json:"unk_token"`
		ContinuingSubwordPrefix *string        `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string        `json:"end_of_word_suffix"`
		FuseUnk                 bool           `json:"fuse_unk"`
		ByteFallback            bool           `json:"byte_fallback"`
		IgnoreMerges            bool           `json:"ignore_merges"`
		Dropout                 *float64       `json:"dropout"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	// Dropout skips merges at random: encoding would not be repeatable, so a
	// dropout above 0 is refused (null and 0 mean none, as in the Rust library).
	if j.Dropout != nil && *j.Dropout != 0 {
		return nil, c.errorf("dropout %v: BPE dropout makes encoding random (it is for training); set it to null", *j.Dropout)
	}
	merges, err := parseMerges(j.Merges)
	if err != nil {
		return nil, c.errorf("merges: %v", err)
	}
	cfg := bpeConfig{
		vocab:        make(map[string]int32, len(j.Vocab)),
		merges:       merges,
		unkToken:     j.UnkToken,
		fuseUnk:      j.FuseUnk,
		byteFallback: j.ByteFallback,
		ignoreMerges: j.IgnoreMerges,
	}
	for tok, id := range j.Vocab {
		if id < 0 || id > math.MaxInt32 {
			return nil, c.errorf("vocab: token %q has id %d", tok, id)
		}
		cfg.vocab[tok] = int32(id)
	}
	if j.ContinuingSubwordPrefix != nil {
		cfg.continuingSubwordPrefix = *j.ContinuingSubwordPrefix
	}
	if j.EndOfWordSuffix != nil {
		cfg.endOfWordSuffix = *j.EndOfWordSuffix
	}
	m, err := newBPE(cfg)
	if err != nil {
		return nil, c.errorf("%v", err)
	}
	return m, nil
}

func (m *bpeModel) tokenize(word string, out []Token) []Token {
	toks := m.wordTokens(word)
	out = slices.Grow(out, len(toks))
	for _, t := range toks {
		out = append(out, Token{ID: int(t.id), Value: m.vocabR[t.id], Start: int(t.start), End: int(t.end)})
	}
	return out
}

func (m *bpeModel) tokenToID(token string) (int, bool) {
	id, ok := m.vocab[token]
	return int(id), ok
}

func (m *bpeModel) idToToken(id int) (string, bool) {
	if id < 0 || id >= len(m.vocabR) {
		return "", false
	}
	tok := m.vocabR[id]
	if tok == "" { // a hole in the ids, or the empty token
		if eid, ok := m.vocab[""]; !ok || int(eid) != id {
			return "", false
		}
	}
	return tok, true
}

func (m *bpeModel) vocabSize() int { return len(m.vocab) }

// bpeDecoder is the "BPEDecoder": the end-of-word suffix becomes a space
// (none after the last token).
type bpeDecoder struct{ suffix string }

func newBPEDecoder(c *component) (decoder, error) {
	var j struct {
		Suffix *string `json:"suffix"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	d := bpeDecoder{suffix: "</w>"}
	if j.Suffix != nil {
		d.suffix = *j.Suffix
	}
	return d, nil
}

func (d bpeDecoder) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		rep := " "
		if i == len(tokens)-1 {
			rep = ""
		}
		out[i] = strings.ReplaceAll(t, d.suffix, rep)
	}
	return out
}
