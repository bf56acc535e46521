package tokenizer

import "fmt"

// Encoding is the result of encoding one text or one pair of texts: one
// entry per token in every slice.
type Encoding struct {
	// IDs are the token ids, the model's input_ids.
	IDs []int
	// TypeIDs are the segment ids (token_type_ids): 0 for the first text,
	// 1 for the second of a pair, as the post-processor sets them.
	TypeIDs []int
	// Tokens are the tokens as text ("[CLS]", "hello", "##ing").
	Tokens []string
	// Offsets are the byte ranges [start, end) of the original text each
	// token came from; for a pair, of the text the token came from (see
	// SequenceIDs). Special tokens and padding have (0, 0). These are byte
	// offsets, as Hugging Face's Rust crate reports; its Python binding
	// reports character offsets instead (count the runes of text[:start]).
	Offsets [][2]int
	// SpecialTokensMask is 1 for the tokens the post-processor added, for
	// padding and for special added tokens found in the text; 0 otherwise.
	SpecialTokensMask []int
	// AttentionMask is 1 for real tokens and 0 for padding.
	AttentionMask []int
	// WordIDs is the index of the word (pre-token) each token came from
	// within its text, or -1 for special tokens and padding.
	WordIDs []int
	// SequenceIDs is 0 or 1 for the text of a pair each token came from,
	// -1 for special tokens and padding.
	SequenceIDs []int
	// Overflowing holds the windows of the tokens truncation cut off, when
	// Truncation.Overflowing is set; nil otherwise.
	Overflowing []*Encoding
}

// Len returns the number of tokens.
func (e *Encoding) Len() int { return len(e.IDs) }

// newEncoding returns an empty encoding with room for n tokens, its six
// int slices cut from one allocation.
func newEncoding(n int) *Encoding {
	ints := make([]int, 6*n)
	cut := func(i int) []int { return ints[i*n : i*n : (i+1)*n] }
	return &Encoding{
		IDs: cut(0), TypeIDs: cut(1), SpecialTokensMask: cut(2),
		AttentionMask: cut(3), WordIDs: cut(4), SequenceIDs: cut(5),
		Tokens:  make([]string, 0, n),
		Offsets: make([][2]int, 0, n),
	}
}

// reset empties e keeping its memory (for the pooled encodings of
// encodeSequence).
func (e *Encoding) reset() {
	e.IDs = e.IDs[:0]
	e.TypeIDs = e.TypeIDs[:0]
	clear(e.Tokens) // let the GC have the strings
	e.Tokens = e.Tokens[:0]
	e.Offsets = e.Offsets[:0]
	e.SpecialTokensMask = e.SpecialTokensMask[:0]
	e.AttentionMask = e.AttentionMask[:0]
	e.WordIDs = e.WordIDs[:0]
	e.SequenceIDs = e.SequenceIDs[:0]
}

// push appends one token.
func (e *Encoding) push(id, typeID int, token string, off [2]int, special, word, seq int) {
	e.IDs = append(e.IDs, id)
	e.TypeIDs = append(e.TypeIDs, typeID)
	e.Tokens = append(e.Tokens, token)
	e.Offsets = append(e.Offsets, off)
	e.SpecialTokensMask = append(e.SpecialTokensMask, special)
	e.AttentionMask = append(e.AttentionMask, 1)
	e.WordIDs = append(e.WordIDs, word)
	e.SequenceIDs = append(e.SequenceIDs, seq)
}

// appendEncoding appends all of o's tokens, setting their type id to typeID
// when typeID >= 0.
func (e *Encoding) appendEncoding(o *Encoding, typeID int) {
	if o == nil {
		return
	}
	e.IDs = append(e.IDs, o.IDs...)
	if typeID >= 0 {
		for range o.IDs {
			e.TypeIDs = append(e.TypeIDs, typeID)
		}
	} else {
		e.TypeIDs = append(e.TypeIDs, o.TypeIDs...)
	}
	e.Tokens = append(e.Tokens, o.Tokens...)
	e.Offsets = append(e.Offsets, o.Offsets...)
	e.SpecialTokensMask = append(e.SpecialTokensMask, o.SpecialTokensMask...)
	e.AttentionMask = append(e.AttentionMask, o.AttentionMask...)
	e.WordIDs = append(e.WordIDs, o.WordIDs...)
	e.SequenceIDs = append(e.SequenceIDs, o.SequenceIDs...)
}

// window returns a copy of the tokens [a, b).
func (e *Encoding) window(a, b int) *Encoding {
	w := newEncoding(b - a)
	w.IDs = append(w.IDs, e.IDs[a:b]...)
	w.TypeIDs = append(w.TypeIDs, e.TypeIDs[a:b]...)
	w.Tokens = append(w.Tokens, e.Tokens[a:b]...)
	w.Offsets = append(w.Offsets, e.Offsets[a:b]...)
	w.SpecialTokensMask = append(w.SpecialTokensMask, e.SpecialTokensMask[a:b]...)
	w.AttentionMask = append(w.AttentionMask, e.AttentionMask[a:b]...)
	w.WordIDs = append(w.WordIDs, e.WordIDs[a:b]...)
	w.SequenceIDs = append(w.SequenceIDs, e.SequenceIDs[a:b]...)
	return w
}

// windows returns the ranges Hugging Face's Encoding::truncate cuts a
// sequence of n tokens into, size tokens each, each stride tokens into the
// one before: from the start (right truncation) or from the end (left).
// The first range is what truncation keeps.
func windows(n, size, stride int, left bool) [][2]int {
	step := size - stride
	var out [][2]int
	if !left {
		for start := 0; start < n; start += step {
			stop := min(start+size, n)
			out = append(out, [2]int{start, stop})
			if stop == n {
				break
			}
		}
		return out
	}
	for stop := n; stop > 0; stop -= step {
		start := max(stop-size, 0)
		out = append(out, [2]int{start, stop})
		if start == 0 {
			break
		}
	}
	return out
}

// truncate keeps n tokens, the first ones or (left) the last ones.
func (e *Encoding) truncate(n int, left bool) {
	if n >= e.Len() {
		return
	}
	a, b := 0, n
	if left {
		a, b = e.Len()-n, e.Len()
	}
	e.IDs = e.IDs[a:b]
	e.TypeIDs = e.TypeIDs[a:b]
	e.Tokens = e.Tokens[a:b]
	e.Offsets = e.Offsets[a:b]
	e.SpecialTokensMask = e.SpecialTokensMask[a:b]
	e.AttentionMask = e.AttentionMask[a:b]
	e.WordIDs = e.WordIDs[a:b]
	e.SequenceIDs = e.SequenceIDs[a:b]
}

// TruncationStrategy says which text of a pair loses tokens.
type TruncationStrategy int

// The strategies of Hugging Face's tokenizers.
const (
	// LongestFirst removes tokens from the longer text of a pair first.
	LongestFirst TruncationStrategy = iota
	// OnlyFirst removes tokens from the first text only.
	OnlyFirst
	// OnlySecond removes tokens from the second text of a pair only.
	OnlySecond
)

func (s TruncationStrategy) String() string {
	switch s {
	case LongestFirst:
		return "longest_first"
	case OnlyFirst:
		return "only_first"
	case OnlySecond:
		return "only_second"
	}
	return fmt.Sprintf("TruncationStrategy(%d)", int(s))
}

// Truncation limits the length of an encoding, the special tokens
// included.
type Truncation struct {
	// MaxLength is the most tokens an encoding keeps (> 0).
	MaxLength int
	Strategy  TruncationStrategy
	// Left removes tokens from the start instead of the end.
	Left bool
	// Overflowing keeps the tokens truncation cuts off, as Hugging Face's
	// return_overflowing_tokens: Encoding.Overflowing holds them in windows
	// of the same length, each with its special tokens (and padding), one
	// window's start Stride tokens before the end of the one before. A
	// document then becomes overlapping chunks. Single texts only: a pair
	// with Overflowing set is an error.
	Overflowing bool
	// Stride is how many tokens each overflowing window repeats from the
	// one before (tokenizer.json's "stride"); less than MaxLength minus
	// the special tokens.
	Stride int
}

// Padding pads encodings with the pad token.
type Padding struct {
	// Length pads every encoding to this length (Hugging Face's Fixed
	// strategy); 0 pads a batch to its longest encoding (BatchLongest).
	Length int
	// PadToMultipleOf rounds the padded length up to a multiple of it
	// (0: no rounding).
	PadToMultipleOf int
	// Left pads at the start instead of the end.
	Left      bool
	PadID     int
	PadTypeID int
	PadToken  string
}

func (p *Padding) target(longest int) int {
	n := p.Length
	if n == 0 {
		n = longest
	}
	if m := p.PadToMultipleOf; m > 0 && n%m != 0 {
		n += m - n%m
	}
	return n
}

// pad pads e to n tokens.
func (p *Padding) pad(e *Encoding, n int) {
	k := n - e.Len()
	if k <= 0 {
		return
	}
	padInts := func(s []int, v int) []int {
		out := make([]int, 0, n)
		if p.Left {
			for range k {
				out = append(out, v)
			}
			return append(out, s...)
		}
		out = append(out, s...)
		for range k {
			out = append(out, v)
		}
		return out
	}
	e.IDs = padInts(e.IDs, p.PadID)
	e.TypeIDs = padInts(e.TypeIDs, p.PadTypeID)
	e.SpecialTokensMask = padInts(e.SpecialTokensMask, 1)
	e.AttentionMask = padInts(e.AttentionMask, 0)
	e.WordIDs = padInts(e.WordIDs, -1)
	e.SequenceIDs = padInts(e.SequenceIDs, -1)
	toks := make([]string, 0, n)
	offs := make([][2]int, 0, n)
	if !p.Left {
		toks = append(toks, e.Tokens...)
		offs = append(offs, e.Offsets...)
	}
	for range k {
		toks = append(toks, p.PadToken)
		offs = append(offs, [2]int{})
	}
	if p.Left {
		toks = append(toks, e.Tokens...)
		offs = append(offs, e.Offsets...)
	}
	e.Tokens, e.Offsets = toks, offs
}

// truncatePair truncates a and b (nil for a single text) so that together
// with added special tokens they have at most t.MaxLength tokens, as
// Hugging Face's truncate_encodings does.
func (t *Truncation) truncatePair(a, b *Encoding, added int) error {
	max := t.MaxLength - added
	if max < 0 {
		return fmt.Errorf("truncation to %d tokens leaves no room for the %d special tokens", t.MaxLength, added)
	}
	n1, n2 := a.Len(), 0
	if b != nil {
		n2 = b.Len()
	}
	if n1+n2 <= max {
		return nil
	}
	remove := n1 + n2 - max
	switch {
	case max == 0:
		a.truncate(0, t.Left)
		if b != nil {
			b.truncate(0, t.Left)
		}
	case t.Strategy == LongestFirst && b != nil:
		swap := false
		if n1 > n2 {
			swap = true
			n1, n2 = n2, n1
		}
		if n1 > max {
			n2 = n1
		} else {
			n2 = maxInt(n1, max-n1)
		}
		if n1+n2 > max {
			n1 = max / 2
			n2 = n1 + max%2
		}
		if swap {
			n1, n2 = n2, n1
		}
		a.truncate(n1, t.Left)
		b.truncate(n2, t.Left)
	case t.Strategy == LongestFirst:
		a.truncate(max, t.Left)
	case t.Strategy == OnlyFirst:
		if n1 <= remove {
			return fmt.Errorf("truncation only_first to %d tokens: the first text has %d tokens, too few to remove %d", t.MaxLength, n1, remove)
		}
		a.truncate(n1-remove, t.Left)
	case t.Strategy == OnlySecond:
		if b == nil {
			// Hugging Face truncates nothing and reports an error; a
			// single text cannot be cut "only in the second".
			return fmt.Errorf("truncation only_second to %d tokens: the text has %d tokens and there is no second text", t.MaxLength, n1+added)
		}
		if n2 <= remove {
			return fmt.Errorf("truncation only_second to %d tokens: the second text has %d tokens, too few to remove %d", t.MaxLength, n2, remove)
		}
		b.truncate(n2-remove, t.Left)
	}
	return nil
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
