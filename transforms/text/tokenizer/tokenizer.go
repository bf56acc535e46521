package tokenizer

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// Tokenizer encodes text as a Hugging Face tokenizer.json says. It is
// immutable and safe for concurrent use; WithTruncation and WithPadding
// return changed copies.
type Tokenizer struct {
	name          string
	normalizer    normalizer
	preTokenizer  preTokenizer
	model         model
	postProcessor postProcessor
	decoder       decoder
	added         addedVocab

	// chunkable: the normalizer and pre-tokenizer are cutters, so a long
	// section may be encoded a chunk at a time (see cut).
	chunkable bool

	truncation     *Truncation
	padding        *Padding
	modelMaxLength int
	cleanUpSpaces  bool
	padToken       string // tokenizer_config.json's pad_token
}

// Name returns the file name (or the name given to Read) the tokenizer was
// loaded from.
func (t *Tokenizer) Name() string { return t.name }

// ModelMaxLength returns tokenizer_config.json's model_max_length, or 0 when
// it was absent or "unlimited".
func (t *Tokenizer) ModelMaxLength() int { return t.modelMaxLength }

// Truncation returns a copy of the truncation settings, nil when off. They
// come from tokenizer.json's "truncation", else from tokenizer_config.json's
// model_max_length (LongestFirst, Right).
func (t *Tokenizer) Truncation() *Truncation {
	if t.truncation == nil {
		return nil
	}
	c := *t.truncation
	return &c
}

// Padding returns a copy of the padding settings (tokenizer.json's
// "padding"), nil when off.
func (t *Tokenizer) Padding() *Padding {
	if t.padding == nil {
		return nil
	}
	c := *t.padding
	return &c
}

// WithTruncation returns a copy of t that truncates as tr says (nil: not
// at all).
func (t *Tokenizer) WithTruncation(tr *Truncation) (*Tokenizer, error) {
	c := *t
	if tr != nil {
		if tr.MaxLength <= 0 {
			return nil, fmt.Errorf("tokenizer: truncation max length %d, want > 0", tr.MaxLength)
		}
		if tr.Strategy < LongestFirst || tr.Strategy > OnlySecond {
			return nil, fmt.Errorf("tokenizer: unknown truncation strategy %v", tr.Strategy)
		}
		tc := *tr
		tr = &tc
	}
	c.truncation = tr
	return &c, nil
}

// WithPadding returns a copy of t that pads as p says (nil: not at all).
func (t *Tokenizer) WithPadding(p *Padding) (*Tokenizer, error) {
	c := *t
	if p != nil {
		if p.Length < 0 || p.PadToMultipleOf < 0 {
			return nil, fmt.Errorf("tokenizer: padding length %d, multiple %d: want >= 0", p.Length, p.PadToMultipleOf)
		}
		pc := *p
		p = &pc
	}
	c.padding = p
	return &c, nil
}

// PadToken returns the pad token and its id: the padding settings' when
// padding is on, else tokenizer_config.json's pad_token when the
// vocabulary has it; ok is false when neither says. A pipeline that pads
// batches itself pads input_ids with this id.
func (t *Tokenizer) PadToken() (token string, id int, ok bool) {
	if p := t.padding; p != nil {
		return p.PadToken, p.PadID, true
	}
	if t.padToken == "" {
		return "", 0, false
	}
	id, ok = t.TokenToID(t.padToken)
	return t.padToken, id, ok
}

// VocabSize returns the number of ids: the model's vocabulary and the added
// tokens.
func (t *Tokenizer) VocabSize() int {
	n := t.model.vocabSize()
	for _, a := range t.added.tokens {
		if a.id >= n {
			n = a.id + 1
		}
	}
	return n
}

// TokenToID returns the id of a token (an added token or one of the
// model's vocabulary).
func (t *Tokenizer) TokenToID(token string) (int, bool) {
	if i, ok := t.added.byContent[token]; ok {
		return t.added.tokens[i].id, true
	}
	return t.model.tokenToID(token)
}

// IDToToken returns the token of an id.
func (t *Tokenizer) IDToToken(id int) (string, bool) {
	if i, ok := t.added.byID[id]; ok {
		return t.added.tokens[i].content, true
	}
	return t.model.idToToken(id)
}

// Encode encodes one text: added tokens, normalization, pre-tokenization,
// the model, the post-processor's special tokens, then truncation and
// fixed-length padding. A text that is not valid UTF-8 is an error.
func (t *Tokenizer) Encode(text string) (*Encoding, error) {
	return t.encode(text, nil)
}

// EncodePair encodes a pair of texts (a question and a passage, two
// sentences) as the post-processor's pair template says.
func (t *Tokenizer) EncodePair(a, b string) (*Encoding, error) {
	return t.encode(a, &b)
}

// EncodeBatch encodes texts and pads them together (to the longest one
// when the padding strategy is BatchLongest). The first text that fails
// fails the batch, its index in the error; callers that must keep going
// encode one text at a time and call Pad.
func (t *Tokenizer) EncodeBatch(texts []string) ([]*Encoding, error) {
	out := make([]*Encoding, len(texts))
	for i, s := range texts {
		e, err := t.encode(s, nil)
		if err != nil {
			return nil, fmt.Errorf("text %d: %w", i, err)
		}
		out[i] = e
	}
	t.Pad(out)
	return out, nil
}

// Pad pads encodings in place as the padding settings say: to the fixed
// length, or to the longest of them; nothing when padding is off.
func (t *Tokenizer) Pad(encs []*Encoding) {
	p := t.padding
	if p == nil {
		return
	}
	longest := 0
	for _, e := range encs {
		longest = maxInt(longest, e.Len())
	}
	n := p.target(longest)
	for _, e := range encs {
		p.pad(e, n)
	}
}

func (t *Tokenizer) encode(a string, b *string) (*Encoding, error) {
	pair := b != nil
	added := 0
	if t.postProcessor != nil {
		added = t.postProcessor.addedTokens(pair)
	}
	// A right-truncated text never keeps more than MaxLength tokens, so
	// the model may stop there (bounded work for a huge text).
	limit := -1
	tr := t.truncation
	if tr != nil && !tr.Left && !tr.Overflowing {
		limit = tr.MaxLength
	}
	if tr != nil && tr.Overflowing && pair {
		return nil, fmt.Errorf("tokenizer: truncation with overflowing tokens takes single texts, not pairs")
	}
	sc := scratchPool.Get().(*scratch)
	defer func() {
		// Keep no huge buffers (from a huge text) in the pool.
		if cap(sc.seq[0].IDs)+cap(sc.seq[1].IDs) < 1<<16 && cap(sc.tokens) < 1<<16 {
			scratchPool.Put(sc)
		}
	}()
	ea := &sc.seq[0]
	if err := t.encodeSequence(ea, sc, a, 0, limit); err != nil {
		return nil, err
	}
	var eb *Encoding
	if pair {
		eb = &sc.seq[1]
		if err := t.encodeSequence(eb, sc, *b, 1, limit); err != nil {
			return nil, fmt.Errorf("second text: %w", err)
		}
	}
	var rest []*Encoding // the overflowing windows, before post-processing
	if tr != nil && tr.Overflowing && ea.Len() > tr.MaxLength-added {
		room := tr.MaxLength - added
		if room <= 0 || tr.Stride < 0 || tr.Stride >= room {
			return nil, fmt.Errorf("tokenizer: truncation to %d tokens (%d beside the special tokens) with stride %d: want 0 <= stride < %d", tr.MaxLength, room, tr.Stride, room)
		}
		ws := windows(ea.Len(), room, tr.Stride, tr.Left)
		for _, w := range ws[1:] {
			rest = append(rest, ea.window(w[0], w[1]))
		}
		ea.truncate(room, tr.Left)
	} else if tr != nil {
		if err := tr.truncatePair(ea, eb, added); err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
	}
	// ea and eb are pooled: the result is a copy.
	var e *Encoding
	if t.postProcessor != nil {
		e = t.postProcessor.process(ea, eb, true)
	} else {
		n := ea.Len()
		if eb != nil {
			n += eb.Len()
		}
		e = newEncoding(n)
		e.appendEncoding(ea, -1)
		e.appendEncoding(eb, -1)
	}
	if p := t.padding; p != nil && p.Length > 0 {
		p.pad(e, p.target(0))
	}
	for _, w := range rest {
		o := w
		if t.postProcessor != nil {
			o = t.postProcessor.process(w, nil, true)
		}
		if p := t.padding; p != nil && p.Length > 0 {
			p.pad(o, p.target(0))
		}
		e.Overflowing = append(e.Overflowing, o)
	}
	return e, nil
}

// scratch holds per-call buffers, pooled.
type scratch struct {
	seq    [2]Encoding // the encodings of the texts, before post-processing
	pre    preTokenized
	tokens []Token
	secs   []section
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// encodeSequence encodes one text into e (reset first) without special
// tokens, with type id typeID, stopping after limit tokens when limit >= 0.
func (t *Tokenizer) encodeSequence(e *Encoding, sc *scratch, text string, typeID int, limit int) error {
	if !utf8.ValidString(text) {
		i := 0
		for i < len(text) {
			r, size := utf8.DecodeRuneInString(text[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		return fmt.Errorf("tokenizer: text is not valid UTF-8 (byte %d is %#02x)", i, text[i])
	}
	seq := typeID
	e.reset()
	full := func() bool { return limit >= 0 && e.Len() >= limit }

	word := 0
	sc.secs = t.added.split(text, 0, len(text), false, sc.secs[:0])
	secs := sc.secs
	for si := 0; si < len(secs) && !full(); si++ {
		sec := secs[si]
		if sec.added >= 0 {
			a := &t.added.tokens[sec.added]
			e.push(a.id, typeID, a.content, [2]int{sec.start, sec.end}, a.specialMask(), word, seq)
			word++
			continue
		}
		if sec.start >= sec.end {
			continue
		}
		if limit < 0 || !t.chunkable || sec.end-sec.start <= chunkBytes {
			t.encodeSection(e, sc, text, sec.start, sec.end, si, typeID, &word, full)
			continue
		}
		// A long section of a tokenizer whose normalizer and
		// pre-tokenizer give the same tokens when the text is cut before
		// some characters (white space, say): encode it a chunk at a time
		// until the limit, so a huge text costs a bounded amount.
		for a := sec.start; a < sec.end && !full(); {
			b := t.cut(text, a+chunkBytes, sec.end)
			t.encodeSection(e, sc, text, a, b, si, typeID, &word, full)
			a = b
		}
	}
	if limit >= 0 && e.Len() > limit {
		e.truncate(limit, false)
	}
	return nil
}

// chunkBytes is the size of the chunks a long section is encoded in when
// the tokenizer allows it (see cut).
const chunkBytes = 1 << 14

// cut returns where to end a chunk that starts before from: the first
// character at or after from before which the normalizer and the
// pre-tokenizer allow a cut, or end.
func (t *Tokenizer) cut(text string, from, end int) int {
	for from < end && !utf8.RuneStart(text[from]) {
		from++
	}
	for i := from; i < end; {
		r, size := utf8.DecodeRuneInString(text[i:end])
		if t.normalizer == nil {
			if t.preTokenizer.(cutter).cutBefore(r) {
				return i
			}
		} else if t.normalizer.(cutter).cutBefore(r) {
			if sp, ok := t.normalizer.(interface{ spacedBefore(rune) bool }); ok && sp.spacedBefore(r) {
				r = ' '
			}
			if t.preTokenizer.(cutter).cutBefore(r) {
				return i
			}
		}
		i += size
	}
	return end
}

// encodeSection appends the tokens of the section text[start:end] (no
// added token in it) to e: normalizer, normalized added tokens,
// pre-tokenizer, model.
func (t *Tokenizer) encodeSection(e *Encoding, sc *scratch, text string, start, end, si, typeID int, word *int, full func() bool) {
	n := newNormalized(text, start, end)
	if t.normalizer != nil {
		t.normalizer.normalize(&n)
	}
	if n.Len() == 0 {
		return
	}
	var one [1]section
	subs := one[:]
	if t.added.hasNormalized {
		subs = t.added.split(n.s, 0, n.Len(), true, nil)
	} else {
		one[0] = section{start: 0, end: n.Len(), added: -1}
	}
	for _, sub := range subs {
		if full() {
			break
		}
		if sub.added >= 0 {
			a := &t.added.tokens[sub.added]
			s, en := n.Original(sub.start, sub.end)
			// The token is spelled as matched (the normalized content),
			// without the white space lstrip and rstrip took.
			tok := n.s[sub.start:sub.end]
			if a.lstrip || a.rstrip {
				tok = strings.TrimFunc(tok, isJSSpace)
			}
			e.push(a.id, typeID, tok, [2]int{s, en}, a.specialMask(), *word, typeID)
			*word++
			continue
		}
		if sub.start >= sub.end {
			continue
		}
		p := &sc.pre
		p.splits = append(p.splits[:0], n.Slice(sub.start, sub.end))
		p.section = si
		if t.preTokenizer != nil {
			t.preTokenizer.preTokenize(p)
		}
		for i := range p.splits {
			if full() {
				break
			}
			w := &p.splits[i]
			if w.Len() == 0 {
				continue
			}
			sc.tokens = t.model.tokenize(w.s, sc.tokens[:0])
			for _, tok := range sc.tokens {
				if full() {
					break
				}
				s, en := w.Original(tok.Start, tok.End)
				e.push(tok.ID, typeID, tok.Value, [2]int{s, en}, 0, *word, typeID)
			}
			*word++
		}
	}
}

// Decode turns ids back into text with the decoder tokenizer.json names
// (tokens joined by spaces when it names none), leaving out special added
// tokens when skipSpecial, and removes the spaces before punctuation and
// contractions unless tokenizer_config.json's clean_up_tokenization_spaces
// is false (as tokenizers.js and transformers decode). An id outside the
// vocabulary is an error.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) (string, error) {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if i, ok := t.added.byID[id]; ok && skipSpecial && t.added.tokens[i].special {
			continue
		}
		s, ok := t.IDToToken(id)
		if !ok {
			return "", fmt.Errorf("tokenizer: decode: id %d is not in the vocabulary (%d ids)", id, t.VocabSize())
		}
		toks = append(toks, s)
	}
	var s string
	if t.decoder == nil {
		s = strings.Join(toks, " ")
	} else {
		s = strings.Join(t.decoder.decodeChain(toks), "")
	}
	if t.cleanUpSpaces {
		s = cleanUpTokenization(s)
	}
	return s, nil
}
