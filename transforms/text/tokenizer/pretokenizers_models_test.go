package tokenizer

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// preTokenizeWith builds the pre-tokenizer of JSON js and returns the pieces
// of text (one section, index section) with their original offsets.
func preTokenizeWith(t *testing.T, js, text string, section int) ([]string, [][2]int) {
	t.Helper()
	var head struct{ Type string }
	require.NoError(t, json.Unmarshal([]byte(js), &head))
	c := &component{l: &loader{name: "test.json"}, path: "pre_tokenizer", raw: json.RawMessage(js), typ: head.Type}
	pt, err := preTokenizers[head.Type](c)
	require.NoError(t, err)
	p := &preTokenized{splits: []NormalizedString{newNormalized(text, 0, len(text))}, section: section}
	pt.preTokenize(p)
	var pieces []string
	var offs [][2]int
	for i := range p.splits {
		pieces = append(pieces, p.splits[i].String())
		s, e := p.splits[i].Original(0, p.splits[i].Len())
		offs = append(offs, [2]int{s, e})
	}
	return pieces, offs
}

func TestMetaspaceOptions(t *testing.T) {
	pieces, offs := preTokenizeWith(t, `{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}`, "Hey  friend", 0)
	assert.Equal(t, []string{"▁Hey", "▁", "▁friend"}, pieces)
	assert.Equal(t, [][2]int{{0, 3}, {3, 4}, {4, 11}}, offs)

	pieces, _ = preTokenizeWith(t, `{"type": "Metaspace", "prepend_scheme": "always", "split": false}`, "Hey friend", 0)
	assert.Equal(t, []string{"▁Hey▁friend"}, pieces)

	// first: only the first section of the input gets the ▁.
	js := `{"type": "Metaspace", "prepend_scheme": "first"}`
	pieces, _ = preTokenizeWith(t, js, "Hey", 0)
	assert.Equal(t, []string{"▁Hey"}, pieces)
	pieces, _ = preTokenizeWith(t, js, "Hey", 2)
	assert.Equal(t, []string{"Hey"}, pieces)

	pieces, _ = preTokenizeWith(t, `{"type": "Metaspace", "prepend_scheme": "never"}`, "Hey you", 0)
	assert.Equal(t, []string{"Hey", "▁you"}, pieces)
	// The legacy add_prefix_space: false is never, true (or absent) always.
	pieces, _ = preTokenizeWith(t, `{"type": "Metaspace", "replacement": "▁", "add_prefix_space": false}`, "Hey you", 0)
	assert.Equal(t, []string{"Hey", "▁you"}, pieces)
	pieces, _ = preTokenizeWith(t, `{"type": "Metaspace", "replacement": "▁", "add_prefix_space": true}`, "Hey", 0)
	assert.Equal(t, []string{"▁Hey"}, pieces)
	// A text that starts with a space gets no second ▁; a multi-byte first
	// character carries the prepended ▁'s offsets.
	pieces, _ = preTokenizeWith(t, js, " Hey", 0)
	assert.Equal(t, []string{"▁Hey"}, pieces)
	pieces, offs = preTokenizeWith(t, js, "日本", 0)
	assert.Equal(t, []string{"▁日本"}, pieces)
	assert.Equal(t, [][2]int{{0, 6}}, offs)
}

func TestByteLevelOptions(t *testing.T) {
	pieces, offs := preTokenizeWith(t, `{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}`, "héllo world", 0)
	assert.Equal(t, []string{"ĠhÃ©llo", "Ġworld"}, pieces)
	assert.Equal(t, [][2]int{{0, 6}, {6, 12}}, offs)

	// The added space aligns to the empty range before the text: a token of it
	// alone has offsets (0, 0).
	c := &component{l: &loader{name: "test.json"}, raw: json.RawMessage(`{"add_prefix_space": true}`), typ: "ByteLevel"}
	bl, err := newByteLevelPreTokenizer(c)
	require.NoError(t, err)
	p := &preTokenized{splits: []NormalizedString{newNormalized("日", 0, len("日"))}}
	bl.preTokenize(p)
	require.Len(t, p.splits, 1)
	assert.Equal(t, "ĠæĹ¥", p.splits[0].String())
	s, e := p.splits[0].Original(0, len("Ġ"))
	assert.Equal(t, [2]int{0, 0}, [2]int{s, e})
	s, e = p.splits[0].Original(len("Ġ"), len("Ġæ"))
	assert.Equal(t, [2]int{0, 3}, [2]int{s, e}, "a byte of 日 maps to all of it")

	pieces, _ = preTokenizeWith(t, `{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}`, "a b\tc", 0)
	assert.Equal(t, []string{"aĠbĉc"}, pieces)

	d, err := newByteLevelDecoder(&component{l: &loader{name: "x"}, raw: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, []string{" héllo world"}, d.decodeChain([]string{"Ġh", "Ã", "©llo", "Ġworld"}))
	// A byte sequence cut short decodes to U+FFFD (one per maximal invalid part).
	assert.Equal(t, []string{"a\ufffdb\ufffd\ufffd"}, d.decodeChain([]string{"a", "æ", "Ĺ", "b", "ÿ", "ÿ"}))
}
