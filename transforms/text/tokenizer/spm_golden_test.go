package tokenizer

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var spmTexts = flag.String("spm-texts", "", "TestWriteSPMTexts writes the texts of the SentencePiece golden files here")

// spmGoldenTexts are the texts TestWriteSPMTexts writes for the golden files
// (the reference corpus's first texts); the files keep them, so a change to
// the corpus leaves them as they are.
func spmGoldenTexts() []string {
	var out []string
	for _, in := range referenceCorpus(1000, 6) {
		out = append(out, in.A)
	}
	return out
}

// TestWriteSPMTexts writes the golden files' texts for testdata/spm/golden.py.
func TestWriteSPMTexts(t *testing.T) {
	if *spmTexts == "" {
		t.Skip("-spm-texts not given")
	}
	f, err := os.Create(*spmTexts)
	require.NoError(t, err)
	enc := json.NewEncoder(f)
	for _, s := range spmGoldenTexts() {
		require.NoError(t, enc.Encode(map[string]string{"text": s}))
	}
	require.NoError(t, f.Close())
}

// TestPrecompiledMatchesSentencePiece holds the Precompiled normalizer and
// the Unigram model to SentencePiece itself (testdata/spm/golden.py), which
// tokenizers.js cannot be held to: it approximates Precompiled with NFKC.
// Where this package's normalized text (the tokens joined) equals
// SentencePiece's, the ids must be equal. The Rust library, which this
// package follows, differs from SentencePiece by design in two ways, and
// texts that differ only so are counted, not failed: SentencePiece strips
// and collapses white space (remove_extra_whitespaces) where the
// tokenizer.json has no such step, and the Rust library looks a grapheme
// cluster of under 6 bytes up whole, replacing all of it when a charsmap key
// is a prefix of it (ℾ + U+0356 becomes Γ; SentencePiece gives Γ + U+0356).
func TestPrecompiledMatchesSentencePiece(t *testing.T) {
	for _, model := range []string{"test_model", "test_ja_model"} {
		t.Run(model, func(t *testing.T) {
			tk, err := LoadFile("testdata/spm/" + model + ".tokenizer.json")
			require.NoError(t, err)
			f, err := os.Open("testdata/spm/" + model + ".golden.jsonl")
			require.NoError(t, err)
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<24)
			um := tk.model.(*unigramModel)
			pm := tk.normalizer.(precompiledNormalizer).m
			same, ties, space, grapheme := 0, 0, 0, 0
			var diffs []string
			i := 0
			for ; sc.Scan(); i++ {
				var g struct {
					Text string `json:"text"`
					IDs  []int  `json:"ids"`
					Norm string `json:"norm"`
				}
				require.NoError(t, json.Unmarshal(sc.Bytes(), &g))
				text := g.Text
				e, err := tk.Encode(text)
				require.NoError(t, err)
				// An independent check of the charsmap reading: SentencePiece's own
				// normalization (longest key at each position, then white space) from
				// the same trie gives its normalized text exactly.
				if got := spmNormalize(um, pm, text); got != g.Norm && len(diffs) < 10 {
					diffs = append(diffs, fmt.Sprintf("SentencePiece normalization of %q\n    go  %q\n    spm %q", text, got, g.Norm))
				}
				ids := e.IDs[1 : len(e.IDs)-1] // without <s> and </s>
				norm := strings.Join(e.Tokens[1:len(e.Tokens)-1], "")
				switch {
				case norm == g.Norm:
					switch {
					case equalInts(ids, g.IDs):
						same++
					case math.Abs(pathScore(um, ids)-pathScore(um, g.IDs)) < 1e-3:
						// SentencePiece adds float32 scores, the Rust library (and this
						// package, and tokenizers.js) float64: two segmentations of
						// the same score may round apart and tie-break differently.
						ties++
					case len(diffs) < 10:
						diffs = append(diffs, fmt.Sprintf("%q\n    go  %v %q\n    spm %v", text, ids, e.Tokens, g.IDs))
					}
				case collapseMeta(norm) == g.Norm || (g.Norm == "" && collapseMeta(norm) == "▁"):
					space++
				case hasPrefixGrapheme(text) && spmNormalize(um, pm, text) == g.Norm:
					grapheme++
				default:
					if len(diffs) < 10 {
						diffs = append(diffs, text+"\n    go  "+norm+"\n    spm "+g.Norm)
					}
				}
			}
			require.NoError(t, sc.Err())
			require.Equal(t, 1000, i)
			t.Logf("%s: %d of %d texts identical to SentencePiece; %d differ in how a tie of scores breaks, %d only in white space, %d in a grapheme cluster", model, same, i, ties, space, grapheme)
			assert.Empty(t, diffs)
			assert.Greater(t, same, i*3/4)
		})
	}
}

// spmNormalize is SentencePiece's normalizer (normalizer.cc) on the charsmap:
// at each position the longest key that matches (keys are short), else the
// character; spaces stripped and collapsed; ▁ for spaces and one before the
// text.
func spmNormalize(m *unigramModel, pm *precompiledMap, text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		best, bestLen := "", 0
		for n := 1; n <= len(text)-i && n <= 32; n++ {
			if r, ok := pm.lookupExact(text[i : i+n]); ok {
				best, bestLen = r, n
			}
		}
		if bestLen == 0 {
			_, w := utf8.DecodeRuneInString(text[i:])
			b.WriteString(text[i : i+w])
			i += w
			continue
		}
		b.WriteString(best)
		i += bestLen
	}
	// Only U+0020 is white space here, as in SentencePiece.
	f := strings.FieldsFunc(strings.ReplaceAll(b.String(), "\u2581", " "), func(r rune) bool { return r == ' ' })
	if len(f) == 0 {
		return ""
	}
	return "▁" + strings.Join(f, "▁")
}

// pathScore is the total score of a segmentation.
func pathScore(m *unigramModel, ids []int) float64 {
	total := 0.0
	for _, id := range ids {
		if int32(id) == m.unkID {
			total += m.unkScore
		} else {
			total += m.scores[id]
		}
	}
	return total
}

// collapseMeta is SentencePiece's remove_extra_whitespaces on text whose
// spaces are ▁: no ▁ at the end, no run of them, one at the start.
func collapseMeta(s string) string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == '▁' })
	if len(f) == 0 {
		return ""
	}
	return "▁" + strings.Join(f, "▁")
}

// hasPrefixGrapheme reports whether text has a character followed by a
// combining or joining character (a grapheme cluster the Rust library may
// replace whole).
func hasPrefixGrapheme(text string) bool {
	for _, r := range text {
		if (r >= 0x300 && r <= 0x36f) || r == 0x200d || r == 0x200c || (r >= 0xfe00 && r <= 0xfe0f) ||
			(r >= 0x1f3fb && r <= 0x1f3ff) || (r >= 0x900 && r <= 0xdff) || (r >= 0x1160 && r <= 0x11ff) {
			return true
		}
	}
	return false
}
