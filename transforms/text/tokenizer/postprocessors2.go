package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

func init() {
	postProcessors["BertProcessing"] = newBertProcessing
	postProcessors["RobertaProcessing"] = newRobertaProcessing
	postProcessors["Sequence"] = newPostProcessorSequence
}

// specialTokenJSON is ["[CLS]", 101], as BertProcessing's cls and sep.
type specialTokenJSON struct {
	token string
	id    int
}

func (s *specialTokenJSON) parse(c *component, name string, raw []any) error {
	if len(raw) != 2 {
		return c.errorf("%s: want [token, id]", name)
	}
	tok, ok1 := raw[0].(string)
	id, ok2 := raw[1].(float64)
	if !ok1 || !ok2 || id < 0 || id != float64(int(id)) {
		return c.errorf("%s: want [token, id], got %v", name, raw)
	}
	s.token, s.id = tok, int(id)
	return nil
}

// bertProcessing is BertProcessing: [CLS] A [SEP] and [CLS] A [SEP] B [SEP],
// type ids 0 for the first text (with its special tokens) and 1 for the
// second.
type bertProcessing struct {
	cls, sep specialTokenJSON
}

func newBertProcessing(c *component) (postProcessor, error) {
	var j struct {
		Cls []any `json:"cls"`
		Sep []any `json:"sep"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	b := &bertProcessing{}
	if err := b.cls.parse(c, "cls", j.Cls); err != nil {
		return nil, err
	}
	if err := b.sep.parse(c, "sep", j.Sep); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *bertProcessing) addedTokens(pair bool) int {
	if pair {
		return 3
	}
	return 2
}

func (b *bertProcessing) process(a, bb *Encoding, addSpecial bool) *Encoding {
	n := a.Len() + b.addedTokens(bb != nil)
	if bb != nil {
		n += bb.Len()
	}
	out := newEncoding(n)
	special := func(s specialTokenJSON, typeID int) {
		if addSpecial {
			out.push(s.id, typeID, s.token, [2]int{}, 1, -1, -1)
		}
	}
	special(b.cls, 0)
	out.appendEncoding(a, 0)
	special(b.sep, 0)
	if bb != nil {
		out.appendEncoding(bb, 1)
		special(b.sep, 1)
	}
	return out
}

// robertaProcessing is RobertaProcessing: <s> A </s> and
// <s> A </s></s> B </s>, type ids 0 for the first text and 1 for the
// second (with the special tokens between them), as tokenizers.js sets
// them. With trim_offsets the offsets of byte-level tokens leave out their
// leading and trailing spaces ("Ġ"), as Hugging Face's process_offsets.
type robertaProcessing struct {
	bertProcessing
	trimOffsets, addPrefixSpace bool
}

func newRobertaProcessing(c *component) (postProcessor, error) {
	var j struct {
		Cls            []any `json:"cls"`
		Sep            []any `json:"sep"`
		TrimOffsets    *bool `json:"trim_offsets"`
		AddPrefixSpace *bool `json:"add_prefix_space"`
	}
	if err := c.decode(&j); err != nil {
		return nil, err
	}
	r := &robertaProcessing{trimOffsets: true, addPrefixSpace: true}
	if err := r.cls.parse(c, "cls", j.Cls); err != nil {
		return nil, err
	}
	if err := r.sep.parse(c, "sep", j.Sep); err != nil {
		return nil, err
	}
	if j.TrimOffsets != nil {
		r.trimOffsets = *j.TrimOffsets
	}
	if j.AddPrefixSpace != nil {
		r.addPrefixSpace = *j.AddPrefixSpace
	}
	return r, nil
}

func (r *robertaProcessing) addedTokens(pair bool) int {
	if pair {
		return 4
	}
	return 2
}

func (r *robertaProcessing) process(a, b *Encoding, addSpecial bool) *Encoding {
	n := a.Len() + r.addedTokens(b != nil)
	if b != nil {
		n += b.Len()
	}
	if r.trimOffsets {
		trimByteLevelOffsets(a, r.addPrefixSpace)
		if b != nil {
			trimByteLevelOffsets(b, r.addPrefixSpace)
		}
	}
	out := newEncoding(n)
	special := func(s specialTokenJSON, typeID int) {
		if addSpecial {
			out.push(s.id, typeID, s.token, [2]int{}, 1, -1, -1)
		}
	}
	special(r.cls, 0)
	out.appendEncoding(a, 0)
	special(r.sep, 0)
	if b != nil {
		special(r.sep, 1)
		out.appendEncoding(b, 1)
		special(r.sep, 1)
	}
	return out
}

// trimByteLevelOffsets is Hugging Face's process_offsets: the offsets of a
// token that starts or ends with spaces (byte-level "Ġ", or white space)
// leave them out, but for the one space add_prefix_space put before the
// first token.
func trimByteLevelOffsets(e *Encoding, addPrefixSpace bool) {
	isSpace := func(r rune) bool { return r == 'Ġ' || unicode.IsSpace(r) }
	for i, tok := range e.Tokens {
		lead, trail := 0, 0
		for _, r := range tok {
			if !isSpace(r) {
				break
			}
			lead++
		}
		for j := len(tok); j > 0; {
			r, size := utf8.DecodeLastRuneInString(tok[:j])
			if !isSpace(r) {
				break
			}
			trail++
			j -= size
		}
		o := &e.Offsets[i]
		if lead > 0 {
			if (i == 0 || o[0] == 0) && addPrefixSpace && lead == 1 {
				lead = 0
			}
			o[0] = min(o[0]+lead, o[1])
		}
		if trail > 0 && o[1] >= trail {
			o[1] = max(o[1]-trail, o[0])
		}
	}
}

// perSequence is implemented by the post-processors that adjust each
// text's encoding on its own and add no tokens (ByteLevel's offset
// trimming); a Sequence applies them before the one that merges the texts.
type perSequence interface {
	processEach(e *Encoding)
}

// postProcessorSequence applies post-processors in order, as Hugging
// Face's Sequence: those that work on each text's encoding (perSequence)
// to each, until one merges the texts; those after it to the merged
// encoding as a single one.
type postProcessorSequence []postProcessor

func newPostProcessorSequence(c *component) (postProcessor, error) {
	items, path, err := c.list("processors")
	if err != nil {
		return nil, err
	}
	var seq postProcessorSequence
	for i, raw := range items {
		if isNull(raw) {
			continue
		}
		pp, err := c.l.postProcessor(path+"["+itoa(i)+"]", raw)
		if err != nil {
			return nil, err
		}
		seq = append(seq, pp)
	}
	return seq, nil
}

func (seq postProcessorSequence) addedTokens(pair bool) int {
	n := 0
	for _, pp := range seq {
		n += pp.addedTokens(pair)
	}
	return n
}

func (seq postProcessorSequence) process(a, b *Encoding, addSpecial bool) *Encoding {
	merged := false
	for _, pp := range seq {
		if each, ok := pp.(perSequence); ok && !merged {
			each.processEach(a)
			if b != nil {
				each.processEach(b)
			}
			continue
		}
		a = pp.process(a, b, addSpecial)
		b = nil
		merged = true
	}
	if !merged {
		// Only per-text processors: merge as without a post-processor.
		n := a.Len()
		if b != nil {
			n += b.Len()
		}
		out := newEncoding(n)
		out.appendEncoding(a, -1)
		out.appendEncoding(b, -1)
		return out
	}
	return a
}
