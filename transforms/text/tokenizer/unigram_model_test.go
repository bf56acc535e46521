package tokenizer

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type spmFile struct {
	Normalizer struct {
		Charsmap string `json:"precompiled_charsmap"`
	} `json:"normalizer"`
	Model struct {
		UnkID *int    `json:"unk_id"`
		Vocab [][]any `json:"vocab"`
	} `json:"model"`
}

// loadSPM builds the charsmap and Unigram model of a converted SentencePiece model.
func loadSPM(t testing.TB, path string) (*precompiledMap, *unigramModel) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var f spmFile
	require.NoError(t, json.Unmarshal(raw, &f))
	pm, err := newPrecompiledMap(f.Normalizer.Charsmap)
	require.NoError(t, err)
	c := unigramConfig{unkID: f.Model.UnkID}
	for _, v := range f.Model.Vocab {
		c.pieces = append(c.pieces, v[0].(string))
		c.scores = append(c.scores, v[1].(float64))
	}
	m, err := newUnigram(c)
	require.NoError(t, err)
	return pm, m
}

// spmIDs encodes text as the converted tokenizer.json describes, without the tokenizer's
// plumbing: Precompiled, then Metaspace (spaces to ▁, ▁ prepended, split before each ▁),
// then Unigram on each piece.
func spmIDs(pm *precompiledMap, m *unigramModel, text string) []int32 {
	n := newNormalized(text, 0, len(text))
	precompiledNormalizer{pm}.normalize(&n)
	text = n.String()
	text = strings.ReplaceAll(text, " ", "▁")
	if !strings.HasPrefix(text, "▁") {
		text = "▁" + text
	}
	var ids []int32
	for len(text) > 0 {
		next := strings.Index(text[len("▁"):], "▁")
		word := text
		if next >= 0 {
			word = text[:next+len("▁")]
		}
		for _, t := range m.wordTokens(word) {
			ids = append(ids, t.id)
		}
		text = text[len(word):]
	}
	return ids
}

func TestUnigramMatchesSentencePiece(t *testing.T) {
	// Expected ids from SentencePiece itself (Debian's python3-sentencepiece 0.1.97,
	// SentencePieceProcessor.encode) on the original .model files.
	cases := []struct {
		model, text string
		want        []int32
	}{
		{"test_model", "I saw a girl with a telescope.", []int32{9, 459, 11, 939, 44, 11, 4, 142, 82, 8, 28, 21, 132, 6}},
		{"test_model", "Hello world", []int32{151, 88, 21, 887}},
		{"test_model", "ｈｅｌｌｏ\u3000ｗｏｒｌｄ ①②", []int32{39, 88, 21, 887, 4, 357, 596}},
		{"test_model", "naïve café déjà vu", []int32{4, 24, 19, 0, 125, 78, 19, 57, 0, 275, 0, 999, 0, 4, 87, 53}},
		{"test_model", "日本語のテキストです。", []int32{4, 0}},
		{"test_model", "emoji 🤗 x", []int32{250, 26, 21, 999, 25, 4, 0, 4, 297}},
		{"test_model", "tab\there", []int32{4, 281, 66, 0, 251, 56}},
		{"test_ja_model", "日本語のテキストです。", []int32{6, 4371, 4, 1194, 510, 1165, 16, 94, 5}},
		{"test_ja_model", "ｈｅｌｌｏ\u3000ｗｏｒｌｄ ①②", []int32{6, 1895, 1129, 2123, 2123, 1477, 6, 5808, 1477, 2366, 2123, 2453, 1847}},
		{"test_ja_model", "naïve café déjà vu", []int32{6, 3902, 931, 0, 5588, 1129, 6, 2355, 931, 5642, 7592, 6, 2453, 7592, 6346, 7838, 6, 5588, 1846}},
	}
	loaded := map[string][2]any{}
	for _, c := range cases {
		if _, ok := loaded[c.model]; !ok {
			pm, m := loadSPM(t, "testdata/spm/"+c.model+".tokenizer.json")
			loaded[c.model] = [2]any{pm, m}
		}
		l := loaded[c.model]
		assert.Equal(t, c.want, spmIDs(l[0].(*precompiledMap), l[1].(*unigramModel), c.text), "%s %q", c.model, c.text)
	}
}

func TestUnigramLattice(t *testing.T) {
	unk := 0
	m, err := newUnigram(unigramConfig{
		pieces: []string{"<unk>", "a", "b", "ab", "abc", "c", "<0x78>", "<0xC3>", "<0xA9>", "qb"},
		scores: []float64{0, -1, -1, -3, -10, -1, -1, -1, -1, -5},
		unkID:  &unk,
	})
	require.NoError(t, err)
	// ab (-3) beats a+b (-2)? No: -2 > -3, so a, b.
	assert.Equal(t, []unigramToken{{1, 0, 1}, {2, 1, 2}}, m.wordTokens("ab"))
	// abc (-10) loses to a+b+c (-3).
	assert.Equal(t, []unigramToken{{1, 0, 1}, {2, 1, 2}, {5, 2, 3}}, m.wordTokens("abc"))
	// An unknown character costs the lowest score less 10: qb (-5) beats <unk> b (-21).
	assert.Equal(t, []unigramToken{{9, 0, 2}}, m.wordTokens("qb"))
	// Unknown characters fuse into one unknown token covering them.
	assert.Equal(t, []unigramToken{{1, 0, 1}, {0, 1, 4}, {2, 4, 5}}, m.wordTokens("axyzb"))
	assert.Equal(t, []unigramToken{{0, 0, 6}}, m.wordTokens("日本"))
	// Byte fallback: an unknown piece whose bytes all have tokens becomes them, each
	// covering the piece.
	m.byteFallback = true
	m.cache = newWordCache[[]unigramToken]()
	assert.Equal(t, []unigramToken{{1, 0, 1}, {6, 1, 2}}, m.wordTokens("ax"))
	assert.Equal(t, []unigramToken{{7, 0, 2}, {8, 0, 2}}, m.wordTokens("é"))
	assert.Equal(t, []unigramToken{{0, 0, 1}}, m.wordTokens("y"), "a byte without a token: the unknown token")
}

func TestUnigramLoadErrors(t *testing.T) {
	_, err := newUnigram(unigramConfig{pieces: []string{"a"}, scores: []float64{-1}})
	assert.ErrorContains(t, err, "no unk_id")
	bad := 5
	_, err = newUnigram(unigramConfig{pieces: []string{"a"}, scores: []float64{-1}, unkID: &bad})
	assert.ErrorContains(t, err, "unk_id 5 is outside the vocabulary of 1 pieces")
	_, err = newUnigram(unigramConfig{unkID: &bad})
	assert.ErrorContains(t, err, "empty")
}

func TestPrecompiledCharsmap(t *testing.T) {
	pm, _ := loadSPM(t, "testdata/spm/test_model.tokenizer.json")
	norm := func(s string) string {
		n := newNormalized(s, 0, len(s))
		precompiledNormalizer{pm}.normalize(&n)
		return n.String()
	}
	assert.Equal(t, "hello world 12", norm("ｈｅｌｌｏ\u3000ｗｏｒｌｄ ①②"))
	assert.Equal(t, "plain ascii", norm("plain ascii"))
	// NFKC composes e + combining acute (one grapheme, looked up whole).
	assert.Equal(t, "é", norm("e\u0301"))
	assert.Equal(t, "fi", norm("ﬁ"))
	// Alignment: ﬁ becomes f and an inserted i, both from ﬁ; e + U+0301 becomes é from e
	// alone (the Rust library pairs characters in order), the accent removed.
	n := newNormalized("aﬁx", 0, len("aﬁx"))
	precompiledNormalizer{pm}.normalize(&n)
	require.Equal(t, "afix", n.String())
	for i, want := range [][2]int{{0, 1}, {1, 4}, {1, 4}, {4, 5}} {
		s, e := n.Original(i, i+1)
		assert.Equal(t, want, [2]int{s, e}, "byte %d", i)
	}
	n = newNormalized("e\u0301!", 0, len("e\u0301!"))
	precompiledNormalizer{pm}.normalize(&n)
	require.Equal(t, "é!", n.String())
	s, e := n.Original(0, 2)
	assert.Equal(t, [2]int{0, 1}, [2]int{s, e})
	s, e = n.Original(2, 3)
	assert.Equal(t, [2]int{3, 4}, [2]int{s, e})

	for _, bad := range []struct{ in, msg string }{
		{"not base64!", "not base64"},
		{"AAA=", "fewer than its 4-byte header"},
		{"CAAAAAAAAAA=", "does not fit"},
		{"AAAAAA==", "empty trie"},
		{"BAAAAAAAAAD/", "not valid UTF-8"},
	} {
		_, err := newPrecompiledMap(bad.in)
		assert.ErrorContains(t, err, bad.msg, bad.in)
	}
	// A trie whose units point outside it matches nothing rather than panicking.
	junk := &precompiledMap{units: []uint32{0xFFFFFFFF, 0x12345678}, normalized: "x"}
	_, ok := junk.lookup("abc")
	assert.False(t, ok)
}
