package tokenizer

import (
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

func TestInvalidUTF8(t *testing.T) {
	tk := loadBERT(t)
	_, err := tk.Encode("ok \xff bad")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not valid UTF-8 (byte 3 is 0xff)")
}

func TestConcurrentEncode(t *testing.T) {
	tk := loadBERT(t)
	texts := []string{"Hello, world!", "Ünïcödé 中文", "The quick brown fox jumps over the lazy dog.", ""}
	want := make([][]int, len(texts))
	for i, s := range texts {
		e, err := tk.Encode(s)
		require.NoError(t, err)
		want[i] = e.IDs
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 200 {
				i := (g + k) % len(texts)
				e, err := tk.Encode(texts[i])
				if !assert.NoError(t, err) || !assert.Equal(t, want[i], e.IDs) {
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
