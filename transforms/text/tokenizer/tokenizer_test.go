package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const bertUncased = "testdata/bert/uncased/tokenizer.json"

func loadBERT(t testing.TB) *Tokenizer {
	t.Helper()
	tk, err := LoadFile(bertUncased)
	require.NoError(t, err)
	return tk
}

// The expected values are the reference's (tokenizers.js 0.2.0) for the
// same text and file; the offsets are checked against the text.
func TestEncodeBERT(t *testing.T) {
	tk := loadBERT(t)
	text := "Hello, world! I like strawberries. Ünïcödé 中文 [SEP] x"
	e, err := tk.Encode(text)
	require.NoError(t, err)
	assert.Equal(t, []int{101, 7592, 1010, 2088, 999, 1045, 2066, 13137, 20968, 1012, 27260, 1746, 1861, 102, 1060, 102}, e.IDs)
	assert.Equal(t, []string{"[CLS]", "hello", ",", "world", "!", "i", "like", "straw", "##berries", ".", "unicode", "中", "文", "[SEP]", "x", "[SEP]"}, e.Tokens)
	assert.Equal(t, make([]int, 16), e.TypeIDs)
	for i := range e.IDs {
		assert.Equal(t, 1, e.AttentionMask[i])
	}
	var got []string
	for _, o := range e.Offsets {
		got = append(got, text[o[0]:o[1]])
	}
	assert.Equal(t, []string{"", "Hello", ",", "world", "!", "I", "like", "straw", "berries", ".", "Ünïcödé", "中", "文", "[SEP]", "x", ""}, got)
	assert.Equal(t, []int{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1}, e.SpecialTokensMask)
	assert.Equal(t, []int{-1, 0, 1, 2, 3, 4, 5, 6, 6, 7, 8, 9, 10, 11, 12, -1}, e.WordIDs)
}

func TestEncodePairBERT(t *testing.T) {
	tk := loadBERT(t)
	e, err := tk.EncodePair("a question", "the passage")
	require.NoError(t, err)
	assert.Equal(t, []int{101, 1037, 3160, 102, 1996, 6019, 102}, e.IDs)
	assert.Equal(t, []int{0, 0, 0, 0, 1, 1, 1}, e.TypeIDs)
	assert.Equal(t, []int{-1, 0, 0, -1, 1, 1, -1}, e.SequenceIDs)
	assert.Equal(t, [][2]int{{0, 0}, {0, 1}, {2, 10}, {0, 0}, {0, 3}, {4, 11}, {0, 0}}, e.Offsets)
}

func TestUnknownComponent(t *testing.T) {
	data, err := os.ReadFile(bertUncased)
	require.NoError(t, err)
	bad := strings.Replace(string(data), `"type": "BertNormalizer"`, `"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "NFD"}, {"type": "Fancy"}]`, 1)
	require.NotEqual(t, string(data), bad)
	_, err = Read("x/tokenizer.json", strings.NewReader(bad), nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrUnsupported))
	assert.Contains(t, err.Error(), "x/tokenizer.json: normalizer.normalizers[2].type")
	assert.Contains(t, err.Error(), `"Fancy"`)
}

func TestVocabWithoutUnk(t *testing.T) {
	data, err := os.ReadFile(bertUncased)
	require.NoError(t, err)
	bad := strings.Replace(string(data), `"unk_token": "[UNK]"`, `"unk_token": "<unk>"`, 1)
	_, err = Read("y.json", strings.NewReader(bad), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `y.json: model (WordPiece): unk_token "<unk>" is not in the vocab (30522 tokens)`)
}

func TestMalformedJSON(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tokenizer.json")
	require.NoError(t, os.WriteFile(p, []byte("{\n \"version\": \"1.0\",\n \"model\": {\"type\": \"WordPiece\",, }\n}\n"), 0o644))
	_, err := LoadFile(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), p+":3:")
	assert.Contains(t, err.Error(), "invalid JSON")
}

func TestMalformedConfig(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(bertUncased)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644))
	cfg := filepath.Join(dir, "tokenizer_config.json")
	require.NoError(t, os.WriteFile(cfg, []byte("{\n  \"model_max_length\": 512\n  \"x\": 1\n}"), 0o644))
	_, err = LoadFile(filepath.Join(dir, "tokenizer.json"))
	assert.ErrorContains(t, err, cfg+":3:")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"model_max_length": "long"}`), 0o644))
	_, err = LoadFile(filepath.Join(dir, "tokenizer.json"))
	assert.ErrorContains(t, err, cfg+": model_max_length:")
	// Without "type", a model is told apart by its fields.
	untyped := strings.Replace(string(data), `"type": "WordPiece",
  "unk_token"`, `"unk_token"`, 1)
	require.NotEqual(t, len(data), len(untyped))
	tk, err := Read("untyped.json", strings.NewReader(untyped), nil)
	require.NoError(t, err)
	e, err := tk.Encode("hello")
	require.NoError(t, err)
	assert.Equal(t, []int{101, 7592, 102}, e.IDs)
}

func TestInvalidUTF8(t *testing.T) {
	tk := loadBERT(t)
	_, err := tk.Encode("ok \xff bad")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not valid UTF-8 (byte 3 is 0xff)")
}

// One Tokenizer encodes from many goroutines at once (run with -race):
// short and long texts (the pooled buffers, the chunked path), pairs.
func TestConcurrentEncode(t *testing.T) {
	tk := loadBERT(t)
	inputs := referenceCorpus(200, 9)
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 3000)
	inputs = append(inputs, refInput{A: long}, refInput{A: long, B: &long})
	encode := func(in refInput) (*Encoding, error) {
		if in.B != nil {
			return tk.EncodePair(in.A, *in.B)
		}
		return tk.Encode(in.A)
	}
	want := make([]*Encoding, len(inputs))
	for i, in := range inputs {
		e, err := encode(in)
		require.NoError(t, err)
		want[i] = e
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 3 * len(inputs) {
				i := (g*37 + k) % len(inputs)
				e, err := encode(inputs[i])
				if !assert.NoError(t, err) || !assert.Equal(t, want[i], e, "input %d", i) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Every token of the BERT tokenizer (but [UNK] and the special tokens)
// is in the normalized text its offsets cover: the offsets survive the
// normalizer's changes of length (NFD, removed characters, CJK spacing).
func TestOffsetsBERT(t *testing.T) {
	tk := loadBERT(t)
	checked := 0
	for i, in := range referenceCorpus(3000, 7) {
		e, err := tk.Encode(in.A)
		require.NoError(t, err)
		for k, o := range e.Offsets {
			if e.SpecialTokensMask[k] == 1 || e.Tokens[k] == "[UNK]" {
				continue
			}
			n := newNormalized(in.A, o[0], o[1])
			tk.normalizer.normalize(&n)
			// (A final sigma depends on the text around it: ς and σ are one.)
			sigma := strings.NewReplacer("ς", "σ")
			want := sigma.Replace(strings.TrimPrefix(e.Tokens[k], "##"))
			got := sigma.Replace(strings.TrimSpace(n.String()))
			// A token cut from one decomposed character (a Hangul
			// syllable's jamo) covers the whole character, with the
			// marks that follow it (one normalization segment).
			if seg := in.A[o[0]:o[1]]; norm.NFD.NextBoundaryInString(seg, true) == len(seg) && strings.Contains(got, want) {
				got = want
			}
			if !assert.Equal(t, want, got, "text %d %q token %d offsets %v", i, in.A, k, o) {
				return
			}
			checked++
		}
	}
	t.Logf("%d tokens checked", checked)
}

func TestAddedTokenOptions(t *testing.T) {
	data, err := os.ReadFile(bertUncased)
	require.NoError(t, err)
	var j map[string]any
	require.NoError(t, json.Unmarshal(data, &j))
	j["added_tokens"] = append(j["added_tokens"].([]any),
		map[string]any{"id": 30522, "content": "<x>", "single_word": true, "lstrip": false, "rstrip": false, "normalized": false, "special": false},
		map[string]any{"id": 30523, "content": "<m>", "single_word": false, "lstrip": true, "rstrip": true, "normalized": false, "special": true},
		map[string]any{"id": 30524, "content": "Big Cat", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false},
	)
	out, err := json.Marshal(j)
	require.NoError(t, err)
	tk, err := Read("added.json", bytes.NewReader(out), nil)
	require.NoError(t, err)
	for _, c := range []struct {
		text   string
		tokens []string
		offs   [][2]int
	}{
		// single_word: only where no word character touches it.
		{"a <x> b", []string{"a", "<x>", "b"}, [][2]int{{0, 1}, {2, 5}, {6, 7}}},
		{"a<x> b", []string{"a", "<", "x", ">", "b"}, nil},
		{"(<x>)", []string{"(", "<x>", ")"}, nil},
		// lstrip and rstrip take the white space around the token.
		{"hi  <m>  there", []string{"hi", "<m>", "there"}, [][2]int{{0, 2}, {2, 9}, {9, 14}}},
		// A normalized token is found in the normalized text.
		{"my BIG cat", []string{"my", "big cat"}, [][2]int{{0, 2}, {3, 10}}},
	} {
		e, err := tk.Encode(c.text)
		require.NoError(t, err)
		assert.Equal(t, c.tokens, e.Tokens[1:e.Len()-1], c.text)
		if c.offs != nil {
			assert.Equal(t, c.offs, e.Offsets[1:e.Len()-1], c.text)
		}
	}
}

func TestTruncationAndPadding(t *testing.T) {
	tk := loadBERT(t)
	a := "one two three four five six seven" // 7 tokens
	b := "eight nine ten"                    // 3 tokens
	ids := func(tk *Tokenizer, a string, b *string) []int {
		var e *Encoding
		var err error
		if b == nil {
			e, err = tk.Encode(a)
		} else {
			e, err = tk.EncodePair(a, *b)
		}
		require.NoError(t, err)
		return e.IDs
	}
	words := map[string]int{}
	for _, w := range strings.Fields(a + " " + b) {
		id, ok := tk.TokenToID(w)
		require.True(t, ok, w)
		words[w] = id
	}
	seq := func(ws ...string) []int {
		var out []int
		for _, w := range ws {
			switch w {
			case "C":
				out = append(out, 101)
			case "S":
				out = append(out, 102)
			case "P":
				out = append(out, 0)
			default:
				out = append(out, words[w])
			}
		}
		return out
	}
	with := func(tr *Truncation, p *Padding) *Tokenizer {
		t2, err := tk.WithTruncation(tr)
		require.NoError(t, err)
		t2, err = t2.WithPadding(p)
		require.NoError(t, err)
		return t2
	}
	// Single text: room for 4 of its tokens.
	assert.Equal(t, seq("C", "one", "two", "three", "four", "S"), ids(with(&Truncation{MaxLength: 6}, nil), a, nil))
	assert.Equal(t, seq("C", "four", "five", "six", "seven", "S"), ids(with(&Truncation{MaxLength: 6, Left: true}, nil), a, nil))
	// Pairs: 7 + 3 tokens, room for 6.
	assert.Equal(t, seq("C", "one", "two", "three", "S", "eight", "nine", "ten", "S"), ids(with(&Truncation{MaxLength: 9}, nil), a, &b))
	assert.Equal(t, seq("C", "one", "two", "three", "S", "eight", "nine", "ten", "S"), ids(with(&Truncation{MaxLength: 9, Strategy: OnlyFirst}, nil), a, &b))
	assert.Equal(t, seq("C", "one", "two", "S", "eight", "S"), ids(with(&Truncation{MaxLength: 6, Strategy: LongestFirst}, nil), a, &b))
	long := "eight nine ten eight nine ten" // 6 tokens: both longer than half
	assert.Equal(t, seq("C", "one", "two", "S", "eight", "nine", "S"), ids(with(&Truncation{MaxLength: 7}, nil), a, &long))
	assert.Equal(t, seq("C", "one", "two", "three", "four", "five", "six", "seven", "S", "eight", "S"), ids(with(&Truncation{MaxLength: 11, Strategy: OnlySecond}, nil), a, &long))
	_, err := with(&Truncation{MaxLength: 6, Strategy: OnlySecond}, nil).EncodePair(a, b)
	assert.ErrorContains(t, err, "only_second")
	_, err = with(&Truncation{MaxLength: 6, Strategy: OnlySecond}, nil).Encode(a)
	assert.ErrorContains(t, err, "no second text")
	_, err = with(&Truncation{MaxLength: 2}, nil).EncodePair(a, b)
	assert.ErrorContains(t, err, "truncation to 2 tokens leaves no room for the 3 special tokens")
	assert.Equal(t, seq("C", "S"), ids(with(&Truncation{MaxLength: 2}, nil), a, nil))
	// Padding: fixed, to a multiple, on the left, batch longest.
	fixed := with(nil, &Padding{Length: 8, PadToken: "[PAD]"})
	e, err := fixed.Encode("one two")
	require.NoError(t, err)
	assert.Equal(t, seq("C", "one", "two", "S", "P", "P", "P", "P"), e.IDs)
	assert.Equal(t, []int{1, 1, 1, 1, 0, 0, 0, 0}, e.AttentionMask)
	assert.Equal(t, []int{1, 0, 0, 1, 1, 1, 1, 1}, e.SpecialTokensMask)
	assert.Equal(t, []string{"[CLS]", "one", "two", "[SEP]", "[PAD]", "[PAD]", "[PAD]", "[PAD]"}, e.Tokens)
	left := with(nil, &Padding{PadToMultipleOf: 3, Left: true, PadID: 7, PadTypeID: 1, PadToken: "[PAD]"})
	encs, err := left.EncodeBatch([]string{"one", "one two three"})
	require.NoError(t, err)
	assert.Equal(t, []int{7, 7, 7, 101, words["one"], 102}, encs[0].IDs)
	assert.Equal(t, []int{1, 1, 1, 0, 0, 0}, encs[0].TypeIDs)
	assert.Equal(t, [][2]int{{}, {}, {}, {}, {0, 3}, {}}, encs[0].Offsets)
	assert.Len(t, encs[1].IDs, 6)
	// Both: truncation first, padding after.
	both := with(&Truncation{MaxLength: 4}, &Padding{Length: 5})
	assert.Equal(t, seq("C", "one", "two", "S", "P"), ids(both, a, nil))
	// Settings from tokenizer.json.
	data, err := os.ReadFile(bertUncased)
	require.NoError(t, err)
	js := strings.Replace(string(data), `"truncation": null`, `"truncation": {"direction": "Left", "max_length": 5, "strategy": "OnlyFirst", "stride": 0}`, 1)
	js = strings.Replace(js, `"padding": null`, `"padding": {"strategy": {"Fixed": 6}, "direction": "Right", "pad_to_multiple_of": null, "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"}`, 1)
	fromFile, err := Read("t.json", strings.NewReader(js), nil)
	require.NoError(t, err)
	assert.Equal(t, &Truncation{MaxLength: 5, Strategy: OnlyFirst, Left: true}, fromFile.Truncation())
	assert.Equal(t, &Padding{Length: 6, PadToken: "[PAD]"}, fromFile.Padding())
	assert.Equal(t, seq("C", "five", "six", "seven", "S", "P"), ids(fromFile, a, nil))
	// tokenizer_config.json's model_max_length and pad_token.
	assert.Equal(t, 512, tk.ModelMaxLength())
	tok, id, ok := tk.PadToken()
	assert.True(t, ok)
	assert.Equal(t, "[PAD]", tok)
	assert.Equal(t, 0, id)
	tok, id, ok = left.PadToken()
	assert.Equal(t, []any{"[PAD]", 7, true}, []any{tok, id, ok})
	assert.Equal(t, &Truncation{MaxLength: 512}, tk.Truncation())
	bad := strings.Replace(string(data), `"padding": null`, `"padding": {"strategy": "Longest"}`, 1)
	_, err = Read("t.json", strings.NewReader(bad), nil)
	assert.ErrorContains(t, err, `t.json: padding.strategy: unknown strategy "Longest"`)
}

// Overflowing tokens come back in windows of the same length, each Stride
// tokens into the one before, each with its special tokens and padding.
func TestOverflowing(t *testing.T) {
	tk := loadBERT(t)
	words := strings.Fields("one two three four five six seven eight nine ten")
	text := strings.Join(words, " ")
	id := func(ws ...string) []int {
		out := []int{101}
		for _, w := range ws {
			i, ok := tk.TokenToID(w)
			require.True(t, ok)
			out = append(out, i)
		}
		return append(out, 102)
	}
	right, err := tk.WithTruncation(&Truncation{MaxLength: 6, Stride: 1, Overflowing: true})
	require.NoError(t, err)
	e, err := right.Encode(text)
	require.NoError(t, err)
	assert.Equal(t, id(words[0:4]...), e.IDs)
	require.Len(t, e.Overflowing, 2)
	assert.Equal(t, id(words[3:7]...), e.Overflowing[0].IDs)
	assert.Equal(t, id(words[6:10]...), e.Overflowing[1].IDs)
	assert.Equal(t, [2]int{strings.Index(text, "four"), strings.Index(text, "four") + 4}, e.Overflowing[0].Offsets[1])

	left, err := tk.WithTruncation(&Truncation{MaxLength: 6, Stride: 2, Overflowing: true, Left: true})
	require.NoError(t, err)
	left, err = left.WithPadding(&Padding{Length: 6, PadToken: "[PAD]"})
	require.NoError(t, err)
	text9 := strings.Join(words[:9], " ")
	e, err = left.Encode(text9)
	require.NoError(t, err)
	assert.Equal(t, id(words[5:9]...), e.IDs)
	require.Len(t, e.Overflowing, 3)
	assert.Equal(t, id(words[3:7]...), e.Overflowing[0].IDs)
	assert.Equal(t, id(words[1:5]...), e.Overflowing[1].IDs)
	assert.Equal(t, append(id(words[0:3]...), 0), e.Overflowing[2].IDs)
	assert.Equal(t, []int{1, 1, 1, 1, 1, 0}, e.Overflowing[2].AttentionMask)

	// A text that fits has none; a stride as long as the window and pairs
	// are errors.
	e, err = right.Encode("one two")
	require.NoError(t, err)
	assert.Nil(t, e.Overflowing)
	bad, err := tk.WithTruncation(&Truncation{MaxLength: 6, Stride: 4, Overflowing: true})
	require.NoError(t, err)
	_, err = bad.Encode(text)
	assert.ErrorContains(t, err, "want 0 <= stride < 4")
	_, err = right.EncodePair(text, text)
	assert.ErrorContains(t, err, "not pairs")
}
