package tokenizer

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pieces(ns []NormalizedString) []string {
	out := make([]string, len(ns))
	for i := range ns {
		out[i] = ns[i].String()
	}
	return out
}

// The behaviours as Hugging Face documents them on "the-final--countdown".
func TestSplitBehaviors(t *testing.T) {
	text := "the-final--countdown"
	n := newNormalized(text, 0, len(text))
	isDash := func(r rune) bool { return r == '-' }
	for b, want := range map[SplitBehavior][]string{
		Removed:            {"the", "final", "countdown"},
		Isolated:           {"the", "-", "final", "-", "-", "countdown"},
		MergedWithPrevious: {"the-", "final-", "-", "countdown"},
		MergedWithNext:     {"the", "-final", "-", "-countdown"},
		Contiguous:         {"the", "-", "final", "--", "countdown"},
	} {
		assert.Equal(t, want, pieces(n.SplitFunc(isDash, b, nil)), "behaviour %d", b)
	}
	// Invert: the matches are the pieces, the rest the delimiters.
	m := pattern{literal: "-"}.find(text, nil)
	assert.Equal(t, []string{"-", "-", "-"}, pieces(n.splitEntries(matchEntries(m, n.Len(), true), Removed, nil)))
	// (Merged: the text between the matches joins the match after it.)
	assert.Equal(t, []string{"the-", "final-", "-", "countdown"}, pieces(n.splitEntries(matchEntries(m, n.Len(), true), MergedWithNext, nil)))
	assert.Equal(t, []string{"the", "-", "final", "-", "-", "countdown"}, pieces(n.splitEntries(matchEntries(m, n.Len(), true), Isolated, nil)))
	// Pieces keep their place in the original.
	ps := n.SplitFunc(isDash, Removed, nil)
	s, e := ps[2].Original(0, ps[2].Len())
	assert.Equal(t, "countdown", text[s:e])
}

// preTokenize runs the pre-tokenizer of a JSON component on text.
func preTokenize(t *testing.T, js, text string) []string {
	t.Helper()
	l := &loader{name: "test.json"}
	pt, err := l.preTokenizer("pre_tokenizer", json.RawMessage(js))
	require.NoError(t, err)
	p := &preTokenized{splits: []NormalizedString{newNormalized(text, 0, len(text))}}
	pt.preTokenize(p)
	return pieces(p.splits)
}

func TestPreTokenizers(t *testing.T) {
	for _, c := range []struct {
		js, text string
		want     []string
	}{
		{`{"type": "BertPreTokenizer"}`, " Hi,  there!\u3000ok ", []string{"Hi", ",", "there", "!", "ok"}},
		{`{"type": "Whitespace"}`, "café's 3.14  x", []string{"café", "'", "s", "3", ".", "14", "x"}},
		{`{"type": "WhitespaceSplit"}`, " a\u00a0b\tc\u0085d ", []string{"a", "b", "c", "d"}},
		{`{"type": "Punctuation"}`, "a...b", []string{"a", ".", ".", ".", "b"}},
		{`{"type": "Punctuation", "behavior": "Contiguous"}`, "a...b", []string{"a", "...", "b"}},
		{`{"type": "Digits", "individual_digits": true}`, "ab123c", []string{"ab", "1", "2", "3", "c"}},
		{`{"type": "Digits", "individual_digits": false}`, "ab123c", []string{"ab", "123", "c"}},
		{`{"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "MergedWithPrevious", "invert": false}`, "a  b c", []string{"a  ", "b ", "c"}},
		{`{"type": "Split", "pattern": {"String": "ab"}, "behavior": "Isolated", "invert": false}`, "xabyab", []string{"x", "ab", "y", "ab"}},
		{`{"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Removed", "invert": true}`, "a12b3", []string{"12", "3"}},
		{`{"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Digits", "individual_digits": true}]}`, "a1 22", []string{"a", "1", "2", "2"}},
	} {
		assert.Equal(t, c.want, preTokenize(t, c.js, c.text), c.js)
	}
}

// normalize runs the normalizer of a JSON component on text and returns
// the normalized text and the original span of each of the normalized
// pieces cut at spaces.
func normalize(t *testing.T, js, text string) (string, []string) {
	t.Helper()
	l := &loader{name: "test.json"}
	nz, err := l.normalizer("normalizer", json.RawMessage(js))
	require.NoError(t, err)
	n := newNormalized(text, 0, len(text))
	nz.normalize(&n)
	var spans []string
	for _, p := range n.SplitFunc(func(r rune) bool { return r == ' ' }, Removed, nil) {
		s, e := p.Original(0, p.Len())
		spans = append(spans, text[s:e])
	}
	return n.String(), spans
}

func TestNormalizers(t *testing.T) {
	for _, c := range []struct {
		js, text, want string
		spans          []string
	}{
		{`{"type": "BertNormalizer", "lowercase": true}`, "Ünï\x00 中文\tX", "uni  中  文  x", []string{"Ünï", "中", "文", "X"}},
		{`{"type": "BertNormalizer", "lowercase": false, "strip_accents": true}`, "Ünï", "Uni", []string{"Ünï"}},
		{`{"type": "BertNormalizer", "lowercase": true, "strip_accents": false}`, "ÜNÏ", "ünï", []string{"ÜNÏ"}},
		{`{"type": "NFC"}`, "e\u0301 x", "é x", []string{"e\u0301", "x"}},
		{`{"type": "NFD"}`, "é x", "e\u0301 x", []string{"é", "x"}},
		{`{"type": "NFKC"}`, "ﬁ ①", "fi 1", []string{"ﬁ", "①"}},
		{`{"type": "NFKD"}`, "ﬁ", "fi", []string{"ﬁ"}},
		{`{"type": "Lowercase"}`, "İ ΟΔΟΣ Σ", "i̇ οδος σ", []string{"İ", "ΟΔΟΣ", "Σ"}},
		{`{"type": "StripAccents"}`, "e\u0301e", "ee", []string{"e\u0301e"}},
		{`{"type": "Strip", "strip_left": true, "strip_right": true}`, "  a b\t", "a b", []string{"a", "b"}},
		{`{"type": "Strip", "strip_left": false, "strip_right": true}`, "  a ", "  a", []string{"a"}},
		{`{"type": "Prepend", "prepend": "▁"}`, "ab c", "▁ab c", []string{"ab", "c"}},
		{`{"type": "Replace", "pattern": {"String": "a"}, "content": "xyz"}`, "bab a", "bxyzb xyz", []string{"bab", "a"}},
		{`{"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "}`, "a \t\u3000b", "a b", []string{"a", "b"}},
		{`{"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}, {"type": "Lowercase"}]}`, "Ém", "em", []string{"Ém"}},
	} {
		got, spans := normalize(t, c.js, c.text)
		assert.Equal(t, c.want, got, c.js)
		assert.Equal(t, c.spans, spans, c.js)
	}
}

// Every bad component names the file, the JSON path and the reason.
func TestBadComponents(t *testing.T) {
	data, err := os.ReadFile(bertUncased)
	require.NoError(t, err)
	set := func(path string, v any) func(map[string]any) {
		return func(j map[string]any) {
			keys := strings.Split(path, ".")
			m := j
			for _, k := range keys[:len(keys)-1] {
				m = m[k].(map[string]any)
			}
			m[keys[len(keys)-1]] = v
		}
	}
	for _, c := range []struct {
		edit func(map[string]any)
		want string
	}{
		{set("normalizer.lowercase", "yes"), `b.json: normalizer (BertNormalizer): field "lowercase": string in JSON, want bool`},
		{set("pre_tokenizer", obj("Split", "pattern", map[string]any{"Regex": "(?=x)"}, "behavior", "Removed")), `b.json: pre_tokenizer (Split): pre_tokenizer.pattern: regex "(?=x)" is not one Go's regexp (RE2) takes`},
		{set("pre_tokenizer", obj("Split", "pattern", map[string]any{"String": "x"}, "behavior", "Sideways")), `b.json: pre_tokenizer (Split): behavior "Sideways"`},
		{set("pre_tokenizer", seq("pretokenizers", obj("WhitespaceSplit"), obj("ByteLevelish"))), `b.json: pre_tokenizer.pretokenizers[1].type: unsupported component: pre-tokenizer "ByteLevelish"`},
		{set("model.type", "Word"), `b.json: model.type: unsupported component: model "Word"`},
		{set("post_processor.type", "Fancy"), `b.json: post_processor.type: unsupported component: post-processor "Fancy"`},
		{set("decoder.type", "Nope"), `b.json: decoder.type: unsupported component: decoder "Nope"`},
		{set("post_processor.special_tokens", map[string]any{"[CLS]": map[string]any{"id": "[CLS]", "ids": []int{101, 102}, "tokens": []string{"[CLS]"}}}), `special_tokens["[CLS]"]: 2 ids for 1 tokens`},
		{set("post_processor.pair", []any{map[string]any{"Sequence": map[string]any{"id": "C", "type_id": 0}}}), `b.json: post_processor (TemplateProcessing): pair[0]: sequence "C", want A or B`},
		{set("model.vocab", map[string]any{"[UNK]": 0, "a": -1}), `b.json: model (WordPiece): vocab: token "a" has id -1`},
		{set("model.vocab", map[string]any{"[UNK]": 0, "a": 0}), `b.json: model (WordPiece): vocab: id 0 is both`},
		{set("post_processor", obj("BertProcessing", "cls", []any{"[CLS]"}, "sep", []any{"[SEP]", 102})), `b.json: post_processor (BertProcessing): cls: want [token, id]`},
		{set("added_tokens", []any{map[string]any{"content": "x"}}), `b.json: added_tokens[0]: no id`},
	} {
		var j map[string]any
		require.NoError(t, json.Unmarshal(data, &j))
		c.edit(j)
		js, err := json.Marshal(j)
		require.NoError(t, err)
		_, err = Read("b.json", strings.NewReader(string(js)), nil)
		if assert.Error(t, err, c.want) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
}

func TestDecode(t *testing.T) {
	tk := loadBERT(t)
	e, err := tk.Encode("Hello, strawberries! Don't.")
	require.NoError(t, err)
	s, err := tk.Decode(e.IDs, true)
	require.NoError(t, err)
	assert.Equal(t, "hello, strawberries! don't.", s)
	s, err = tk.Decode(e.IDs, false)
	require.NoError(t, err)
	assert.Equal(t, "[CLS] hello, strawberries! don't. [SEP]", s)
	_, err = tk.Decode([]int{1 << 20}, false)
	assert.ErrorContains(t, err, "id 1048576 is not in the vocabulary")
}
