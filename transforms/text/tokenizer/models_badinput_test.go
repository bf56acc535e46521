package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// editJSON writes a copy of a tokenizer.json with edit applied to its decoded
// object and returns the copy's path.
func editJSON(t *testing.T, file string, edit func(m map[string]any)) string {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	edit(m)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	require.NoError(t, os.WriteFile(path, out, 0o644))
	return path
}

func TestModelFileErrors(t *testing.T) {
	gpt2 := "testdata/gpt2/tokenizer.json"
	spm := "testdata/spm/test_model.tokenizer.json"
	model := func(m map[string]any) map[string]any { return m["model"].(map[string]any) }
	cases := []struct {
		name, file string
		edit       func(m map[string]any)
		want       []string
	}{
		{"merge naming an unknown token", gpt2, func(m map[string]any) {
			mm := model(m)
			mm["merges"] = append(mm["merges"].([]any), "Ġthe zzzqqq")
		}, []string{"model (BPE)", `BPE merge 50000 ("Ġthe" "zzzqqq"): "zzzqqq" is not in the vocabulary`}},
		{"merge whose result is not in the vocabulary", gpt2, func(m map[string]any) {
			mm := model(m)
			mm["merges"] = append([]any{[]any{"q", "z"}}, mm["merges"].([]any)...)
		}, []string{`BPE merge 0 ("q" "z"): the merged token "qz" is not in the vocabulary`}},
		{"merge that is not two tokens", gpt2, func(m map[string]any) {
			mm := model(m)
			mm["merges"].([]any)[7] = "Ġ t h"
		}, []string{`merges: BPE merge 7 "Ġ t h" is not two tokens separated by a space`}},
		{"unk_token outside the vocabulary", gpt2, func(m map[string]any) {
			model(m)["unk_token"] = "<unk>"
		}, []string{`unk_token "<unk>" is not in the vocabulary`}},
		{"dropout", gpt2, func(m map[string]any) {
			model(m)["dropout"] = 0.1
		}, []string{"dropout 0.1", "random"}},
		{"Unigram without unk_id", spm, func(m map[string]any) {
			model(m)["unk_id"] = nil
		}, []string{"model (Unigram)", "no unk_id"}},
		{"Unigram unk_id outside the vocabulary", spm, func(m map[string]any) {
			model(m)["unk_id"] = 1000
		}, []string{"unk_id 1000 is outside the vocabulary of 1000 pieces"}},
		{"Unigram piece without a score", spm, func(m map[string]any) {
			model(m)["vocab"].([]any)[5] = []any{"x"}
		}, []string{"vocab[5] has 1 items"}},
		{"charsmap not base64", spm, func(m map[string]any) {
			m["normalizer"].(map[string]any)["precompiled_charsmap"] = "%%%"
		}, []string{"normalizer (Precompiled)", "precompiled_charsmap is not base64"}},
		{"charsmap cut short", spm, func(m map[string]any) {
			n := m["normalizer"].(map[string]any)
			n["precompiled_charsmap"] = n["precompiled_charsmap"].(string)[:400]
		}, []string{"normalizer (Precompiled)", "trie size"}},
		{"Metaspace prepend_scheme", spm, func(m map[string]any) {
			m["pre_tokenizer"].(map[string]any)["prepend_scheme"] = "sometimes"
		}, []string{"pre_tokenizer (Metaspace)", `prepend_scheme "sometimes"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := editJSON(t, c.file, c.edit)
			_, err := LoadFile(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path, "the error names the file")
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestModelsBadText(t *testing.T) {
	for _, file := range []string{"testdata/gpt2/tokenizer.json", "testdata/spm/test_model.tokenizer.json"} {
		tk, err := LoadFile(file)
		require.NoError(t, err)
		_, err = tk.Encode("ok \xff\xfe bad")
		assert.ErrorContains(t, err, "not valid UTF-8 (byte 3", file)
		_, err = tk.EncodePair("fine", "bad \xc3")
		assert.ErrorContains(t, err, "second text", file)

		// A 10 MB line of prose: words repeat, so it costs what its words cost; the
		// encoding stops at the model's maximum length (GPT-2's 1024; the converted
		// SentencePiece model has none and keeps every token).
		prose, err := os.ReadFile("testdata/prose/botchan.txt")
		require.NoError(t, err)
		line := strings.ReplaceAll(string(prose), "\n", " ")
		line = strings.Repeat(line, 10<<20/len(line)+1)[:10<<20]
		e, err := tk.Encode(line)
		require.NoError(t, err, file)
		if n := tk.ModelMaxLength(); n > 0 {
			assert.Equal(t, n, e.Len(), file)
		} else {
			assert.Greater(t, e.Len(), 1<<20, file)
			assert.Equal(t, len(line), e.Offsets[e.Len()-2][1], "the last token before </s> ends the line")
		}
	}
}

// TestBPEHugeWord encodes one 2 MB word (no space, no punctuation: one piece
// for the pre-tokenizer) with GPT-2: the merging is O(n log n) in the word's
// length (BenchmarkBPELongWord), and the result is the same as merging its
// halves where they cannot interact (a run of one repeated letter pair).
func TestBPEHugeWord(t *testing.T) {
	m := loadGPT2Model(t)
	if testing.Short() {
		t.Skip("a 2 MB word takes a few seconds")
	}
	word := strings.Repeat("ab", 1<<20)
	toks := m.wordTokens(word)
	require.NotEmpty(t, toks)
	assert.Equal(t, int32(0), toks[0].start)
	assert.Equal(t, int32(len(word)), toks[len(toks)-1].end)
	for i := 1; i < len(toks); i++ {
		require.Equal(t, toks[i-1].end, toks[i].start, "tokens cover the word without gaps")
	}
	// The merges of "abab..." are the same for every 2^k copies: the tokens of the
	// whole are those of a 4096-byte piece, repeated.
	piece := m.wordTokens(strings.Repeat("ab", 2048))
	require.Equal(t, 0, len(toks)%len(piece))
	for i, tk := range toks {
		p := piece[i%len(piece)]
		require.Equal(t, p.id, tk.id, "token %d", i)
	}
}

// BenchmarkBPELongWord merges one word of random letters of 256 KB, 1 MB and
// 4 MB: time per byte grows with log n, not n (no quadratic merging).
func BenchmarkBPELongWord(b *testing.B) {
	m := loadGPT2Model(b)
	for _, n := range []int{256 << 10, 1 << 20, 4 << 20} {
		var sb strings.Builder
		x := uint32(12345)
		for sb.Len() < n {
			x = x*1664525 + 1013904223
			sb.WriteByte(byte('a' + (x>>24)%26))
		}
		word := sb.String()
		b.Run(byteSize(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				m.wordTokens(word)
			}
		})
	}
}

func byteSize(n int) string {
	if n >= 1<<20 {
		return strconv.Itoa(n>>20) + "MB"
	}
	return strconv.Itoa(n>>10) + "KB"
}

// TestUnigramHugeWord encodes one 2 MB word with the SentencePiece model: the
// lattice is linear in the word's length (each position tries the pieces
// that start there, at most the longest piece's length).
func TestUnigramHugeWord(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2 MB word takes a second")
	}
	_, m := loadSPM(t, "testdata/spm/test_model.tokenizer.json")
	word := "▁" + strings.Repeat("ab", 1<<20)
	toks := m.wordTokens(word)
	require.NotEmpty(t, toks)
	assert.Equal(t, int32(0), toks[0].start)
	assert.Equal(t, int32(len(word)), toks[len(toks)-1].end)
	for i := 1; i < len(toks); i++ {
		require.Equal(t, toks[i-1].end, toks[i].start, "tokens cover the word without gaps")
	}
}
