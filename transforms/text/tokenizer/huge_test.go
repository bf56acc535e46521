package tokenizer

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A 10 MB line is encoded in bounded memory. Truncated to the model's max
// length anyway, BERT's text is normalized and pre-tokenized a chunk at a
// time (cut at white space, punctuation, CJK ideographs) until the limit:
// next to nothing is allocated. A 10 MB word cannot be cut: the normalizer
// aligns all of it (NFD makes each É three bytes, each with its 8-byte
// original span), a few tens of bytes per byte of text.
func TestHugeLine(t *testing.T) {
	tk := loadBERT(t)
	var b strings.Builder
	for _, s := range benchProse(64) {
		b.WriteString(s)
	}
	unit := strings.ReplaceAll(b.String(), "\n", " ")
	text := strings.Repeat(unit, 10<<20/len(unit)+1)[:10<<20]
	for cut := len(text); ; cut-- { // end on a rune boundary
		if strings.ToValidUTF8(text[:cut], "") == text[:cut] {
			text = text[:cut]
			break
		}
	}
	for _, c := range []struct {
		name    string
		text    string
		perByte float64 // the most bytes allocated per byte of text
		tokens  int
	}{
		{"prose", text, 1, 512},
		{"one word", strings.Repeat("É", 5<<20), 64, 3}, // [CLS] [UNK] [SEP]
		{"punctuation", strings.Repeat("!", 10<<20), 1, 512},
		{"CJK", strings.Repeat("中", 10<<20/3), 1, 512},
	} {
		t.Run(c.name, func(t *testing.T) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			e, err := tk.Encode(c.text)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			require.NoError(t, err)
			assert.Equal(t, c.tokens, e.Len())
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes in %v, %.1f bytes allocated per byte of text", len(c.text), took, float64(alloc)/float64(len(c.text)))
			assert.Less(t, float64(alloc), c.perByte*float64(len(c.text)), "allocated %d bytes for a %d-byte text", alloc, len(c.text))
		})
	}
}

// Encoding a long text a chunk at a time gives the tokens and offsets of
// encoding it whole.
func TestChunkedEqualsWhole(t *testing.T) {
	tk := loadBERT(t)
	require.True(t, tk.chunkable)
	whole, err := tk.WithTruncation(nil)
	require.NoError(t, err)
	r := referenceCorpus(4000, 11)
	seps := []string{" ", "", "\n", "!", "中", "ΣΑΣ", "'", "é"}
	for k := range 30 {
		var b strings.Builder
		for i := k; b.Len() < 3*chunkBytes; i = (i + 7) % len(r) {
			b.WriteString(r[i].A)
			b.WriteString(seps[(i+k)%len(seps)])
		}
		text := b.String()
		want, err := whole.Encode(text)
		require.NoError(t, err)
		limit := want.Len() - 10
		if k%3 == 0 {
			limit = want.Len() + 10 // no truncation: every chunk
		}
		chunked, err := tk.WithTruncation(&Truncation{MaxLength: limit})
		require.NoError(t, err)
		got, err := chunked.Encode(text)
		require.NoError(t, err)
		n := min(limit, want.Len()) - 1
		require.Equal(t, want.IDs[:n], got.IDs[:n], "text %d", k)
		require.Equal(t, want.Offsets[:n], got.Offsets[:n], "text %d", k)
		require.Equal(t, want.WordIDs[:n], got.WordIDs[:n], "text %d", k)
	}
}
