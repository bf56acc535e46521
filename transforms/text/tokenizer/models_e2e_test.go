package tokenizer

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGPT2Tokenizer(t *testing.T) {
	tok, err := LoadFile("testdata/gpt2/tokenizer.json")
	require.NoError(t, err)
	e, err := tok.Encode("Hello, my dog is cute")
	require.NoError(t, err)
	assert.Equal(t, []int{15496, 11, 616, 3290, 318, 13779}, e.IDs)
	assert.Equal(t, []string{"Hello", ",", "Ġmy", "Ġdog", "Ġis", "Ġcute"}, e.Tokens)
	// GPT-2's ByteLevel post-processor has trim_offsets false: Ġmy covers " my".
	assert.Equal(t, [][2]int{{0, 5}, {5, 6}, {6, 9}, {9, 13}, {13, 16}, {16, 21}}, e.Offsets)
	// With trim_offsets (RoBERTa's) the spaces leave the offsets.
	trimByteLevelOffsets(e, false)
	assert.Equal(t, [][2]int{{0, 5}, {5, 6}, {7, 9}, {10, 13}, {14, 16}, {17, 21}}, e.Offsets)
	assert.Equal(t, []int{1, 1, 1, 1, 1, 1}, e.AttentionMask)

	// A multi-byte character split across tokens: each byte's token maps to the whole
	// character in the original.
	e, err = tok.Encode("naïve 🤗")
	require.NoError(t, err)
	s, err := tok.Decode(e.IDs, false)
	require.NoError(t, err)
	assert.Equal(t, "naïve 🤗", s)
	for i, off := range e.Offsets {
		assert.LessOrEqual(t, off[0], off[1], "token %d %q", i, e.Tokens[i])
	}
	last := e.Offsets[len(e.Offsets)-1]
	assert.Equal(t, [2]int{len("naïve "), len("naïve 🤗")}, last)

	// The special token is found in the text.
	e, err = tok.Encode("a<|endoftext|>b")
	require.NoError(t, err)
	assert.Equal(t, []int{64, 50256, 65}, e.IDs)
}

func TestTrimByteLevelOffsets(t *testing.T) {
	e := &Encoding{
		Tokens:  []string{"Ġhello", "ĠĠ", "Ġworld", "ĠĠĠ"},
		Offsets: [][2]int{{0, 6}, {6, 8}, {8, 14}, {14, 17}},
	}
	// add_prefix_space: the first token keeps the one space the pre-tokenizer added.
	trimByteLevelOffsets(e, true)
	assert.Equal(t, [][2]int{{0, 6}, {8, 8}, {9, 14}, {17, 17}}, e.Offsets)
}

func TestSentencePieceTokenizer(t *testing.T) {
	tok, err := LoadFile("testdata/spm/test_model.tokenizer.json")
	require.NoError(t, err)
	e, err := tok.Encode("I saw a girl with a telescope.")
	require.NoError(t, err)
	// SentencePiece's ids (see TestUnigramMatchesSentencePiece) inside <s> ... </s>.
	assert.Equal(t, []int{1, 9, 459, 11, 939, 44, 11, 4, 142, 82, 8, 28, 21, 132, 6, 2}, e.IDs)
	assert.Equal(t, "▁I", e.Tokens[1])
	assert.Equal(t, [2]int{0, 1}, e.Offsets[1])
	assert.Equal(t, [2]int{1, 5}, e.Offsets[2], "▁saw covers the space it replaced")
	s, err := tok.Decode(e.IDs, true)
	require.NoError(t, err)
	assert.Equal(t, "I saw a girl with a telescope.", s)

	// Precompiled's NFKC: full-width letters, offsets into the original.
	e, err = tok.Encode("ｈｅｌｌｏ")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 39, 88, 21, 2}, e.IDs)
	assert.Equal(t, [][2]int{{0, 0}, {0, 6}, {6, 12}, {12, 15}, {0, 0}}, e.Offsets)
}

// TestModelsConcurrent encodes the same texts from several goroutines with
// one tokenizer (the word caches shared) and requires the serial results.
func TestModelsConcurrent(t *testing.T) {
	for _, file := range []string{"testdata/gpt2/tokenizer.json", "testdata/spm/test_ja_model.tokenizer.json"} {
		tk, err := LoadFile(file)
		require.NoError(t, err)
		inputs := referenceCorpus(400, 11)
		want := make([][]int, len(inputs))
		for i, in := range inputs {
			e, err := tk.Encode(in.A)
			require.NoError(t, err)
			want[i] = e.IDs
		}
		var wg sync.WaitGroup
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for k := range inputs {
					i := (k*7 + g*13) % len(inputs)
					e, err := tk.Encode(inputs[i].A)
					if !assert.NoError(t, err) || !assert.Equal(t, want[i], e.IDs, "%s text %d", file, i) {
						return
					}
				}
			}(g)
		}
		wg.Wait()
	}
}
