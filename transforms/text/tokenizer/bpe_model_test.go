package tokenizer

import (
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadGPT2Model builds the BPE model of the committed GPT-2 tokenizer.json directly.
func loadGPT2Model(t testing.TB) *bpeModel {
	t.Helper()
	raw, err := os.ReadFile("testdata/gpt2/tokenizer.json")
	require.NoError(t, err)
	var f struct {
		Model struct {
			Vocab  map[string]int32 `json:"vocab"`
			Merges []any            `json:"merges"`
		} `json:"model"`
	}
	require.NoError(t, json.Unmarshal(raw, &f))
	merges, err := parseMerges(f.Model.Merges)
	require.NoError(t, err)
	m, err := newBPE(bpeConfig{vocab: f.Model.Vocab, merges: merges})
	require.NoError(t, err)
	return m
}

// byteLevelIDs encodes text as GPT-2 does without the tokenizer's plumbing: the split
// pattern, the byte-to-character map, then BPE on each piece.
func byteLevelIDs(m *bpeModel, text string) []int32 {
	var ids []int32
	gpt2Split(text, func(s, e int) {
		var b strings.Builder
		for i := s; i < e; i++ {
			b.WriteString(byteLevelEncoded[text[i]])
		}
		for _, t := range m.wordTokens(b.String()) {
			ids = append(ids, t.id)
		}
	})
	return ids
}

func TestBPEGPT2KnownIDs(t *testing.T) {
	m := loadGPT2Model(t)
	// Ids as the published GPT-2 tokenizer gives them.
	assert.Equal(t, []int32{15496, 995}, byteLevelIDs(m, "Hello world"))
	assert.Equal(t, []int32{15496, 11, 616, 3290, 318, 13779}, byteLevelIDs(m, "Hello, my dog is cute"))
	assert.Empty(t, byteLevelIDs(m, ""))
	// Every byte has a token, so any text round-trips through the ids.
	for _, text := range []string{"naïve café", "日本語のテキスト", "emoji 🤗👩‍👩‍👧", "tab\tnew\nline  two  spaces", "\x00\x01\u0085"} {
		ids := byteLevelIDs(m, text)
		var b strings.Builder
		for _, id := range ids {
			for _, r := range m.vocabR[id] {
				b.WriteByte(byteLevelBytes[r])
			}
		}
		assert.Equal(t, text, b.String())
	}
}

func TestGPT2Split(t *testing.T) {
	split := func(s string) []string {
		var out []string
		gpt2Split(s, func(a, b int) { out = append(out, s[a:b]) })
		return out
	}
	assert.Equal(t, []string{"Hello", ",", " world", "!"}, split("Hello, world!"))
	assert.Equal(t, []string{"I", "'m", " here", "'s", " it", "'ll", " go", "'d", " ok", "'re", " we", "'ve", " '", "S"}, split("I'm here's it'll go'd ok're we've 'S"))
	// \s+(?!\S): a run of spaces before a word leaves its last space to the word.
	assert.Equal(t, []string{"a", "  ", " b", "   "}, split("a   b   "))
	assert.Equal(t, []string{"a", "\t", "\t", "b"}, split("a\t\tb"))
	assert.Equal(t, []string{"x", "\n\n", " y"}, split("x\n\n y"))
	assert.Equal(t, []string{" 123", " abc", "45", " ...!?", "日本"}, split(" 123 abc45 ...!?日本"))
	assert.Equal(t, []string{" \u0085", "x"}, split(" \u0085x"), "U+0085 is not a space to JavaScript")
	assert.Equal(t, []string{"'", "x"}, split("'x"))
	assert.Equal(t, []string{" "}, split(" "))
	assert.Equal(t, []string(nil), split(""))
	assert.Equal(t, []string{"ab", "\ufeff", "c"}, split("ab\ufeffc"), "U+FEFF is a space to JavaScript")
	assert.Equal(t, []string{"ab", " \ufeff", "\ufeff", "c"}, split("ab \ufeff\ufeffc"))
}

func TestBPEMergesAndOptions(t *testing.T) {
	vocab := map[string]int32{"<unk>": 0, "a": 1, "b": 2, "c": 3, "ab": 4, "abc": 5, "##b": 6, "##c": 7, "a##b": 8, "<0x64>": 9, "c</w>": 10, "bc</w>": 11, "b##b": 12}
	unk := "<unk>"
	ids := func(m *bpeModel, w string) (out []int32) {
		for _, t := range m.wordTokens(w) {
			out = append(out, t.id)
		}
		return out
	}
	m, err := newBPE(bpeConfig{vocab: vocab, merges: [][2]string{{"a", "b"}, {"ab", "c"}}, unkToken: &unk})
	require.NoError(t, err)
	assert.Equal(t, []int32{5}, ids(m, "abc"))
	assert.Equal(t, []int32{4, 0, 0, 3}, ids(m, "abxyc"), "unknown characters each an <unk> without fuse_unk")
	toks := m.wordTokens("abxyc")
	assert.Equal(t, []bpeToken{{4, 0, 2}, {0, 2, 3}, {0, 3, 4}, {3, 4, 5}}, toks)
	m.fuseUnk = true
	m.cache = newWordCache[[]bpeToken]()
	assert.Equal(t, []bpeToken{{4, 0, 2}, {0, 2, 4}, {3, 4, 5}}, m.wordTokens("abxyc"), "fused unknowns")
	assert.Equal(t, []bpeToken{{0, 0, 4}}, m.wordTokens("éé"), "fused unknown covers the bytes")

	// The continuing-subword prefix: symbols after the first carry it, merges drop it from b.
	p, err := newBPE(bpeConfig{vocab: vocab, merges: [][2]string{{"a", "##b"}}, continuingSubwordPrefix: "##"})
	require.NoError(t, err)
	assert.Equal(t, []int32{4, 7}, ids(p, "abc"))
	// Without an unknown token an unknown character is dropped; its neighbours then merge.
	assert.Equal(t, []int32{4}, ids(p, "axb"))

	// The end-of-word suffix goes on the last symbol.
	s, err := newBPE(bpeConfig{vocab: vocab, merges: [][2]string{{"b", "c</w>"}}, endOfWordSuffix: "</w>"})
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 11}, ids(s, "abc"))

	// Byte fallback: an unknown character becomes its bytes' <0xNN> tokens where all exist.
	f, err := newBPE(bpeConfig{vocab: vocab, byteFallback: true, unkToken: &unk})
	require.NoError(t, err)
	assert.Equal(t, []bpeToken{{1, 0, 1}, {9, 1, 2}, {0, 2, 3}}, f.wordTokens("adz"))
	// Each byte token of a character covers the whole character.
	vocab2 := map[string]int32{"a": 0, "<0xC3>": 1, "<0xA9>": 2}
	f2, err := newBPE(bpeConfig{vocab: vocab2, byteFallback: true})
	require.NoError(t, err)
	assert.Equal(t, []bpeToken{{0, 0, 1}, {1, 1, 3}, {2, 1, 3}}, f2.wordTokens("aé"))

	// ignore_merges: a word in the vocabulary is one token even where merges would differ.
	g, err := newBPE(bpeConfig{vocab: vocab, merges: [][2]string{{"a", "b"}}, ignoreMerges: true})
	require.NoError(t, err)
	assert.Equal(t, []int32{8}, ids(g, "a##b"))
	g.ignoreMerges = false
	assert.NotEqual(t, []int32{8}, ids(g, "a##b"))
}

func TestBPEMergeOrderLowestRankLeftmost(t *testing.T) {
	vocab := map[string]int32{"a": 0, "aa": 1, "aaa": 2, "b": 3, "ab": 4, "ba": 5}
	m, err := newBPE(bpeConfig{vocab: vocab, merges: [][2]string{{"a", "a"}, {"aa", "a"}, {"b", "a"}, {"a", "b"}}})
	require.NoError(t, err)
	ids := func(w string) (out []int32) {
		for _, t := range m.wordTokens(w) {
			out = append(out, t.id)
		}
		return out
	}
	assert.Equal(t, []int32{2}, ids("aaa"), "aa first (leftmost), then aa+a")
	assert.Equal(t, []int32{1, 1}, ids("aaaa"))
	assert.Equal(t, []int32{3, 1}, ids("baa"), "a+a ranks before b+a")
	assert.Equal(t, []int32{4, 5}, ids("abba"), "b+a ranks before a+b")
	// The heap path (more than 12 symbols) agrees with the scanning path.
	long := strings.Repeat("aab", 9)
	var want []int32
	for i := 0; i < 9; i++ {
		want = append(want, ids("aab")...)
	}
	assert.Equal(t, want, ids(long))
}

func TestBPEHeapMatchesScan(t *testing.T) {
	m := loadGPT2Model(t)
	words := []string{"Ġantidisestablishmentarianism", "ĠPneumonoultramicroscopicsilicovolcanoconiosis", "abcdefghijklmnopqrstuvwxyz", strings.Repeat("ab", 40), strings.Repeat("Ġthe", 20)}
	for _, w := range words {
		syms1 := m.initialSymbols(w)
		syms2 := append([]bpeSymbol(nil), syms1...)
		m.mergeScan(syms1)
		m.mergeAll(syms2)
		assert.Equal(t, linked(syms1), linked(syms2), w)
	}
}

// initialSymbols is mergeWord's first half, for comparing the two merge paths.
func (m *bpeModel) initialSymbols(word string) []bpeSymbol {
	var syms []bpeSymbol
	for i, r := range word {
		id := m.vocab[string(r)]
		p := int32(len(syms) - 1)
		syms = append(syms, bpeSymbol{id: id, prev: p, next: -1, start: int32(i), len: int32(len(string(r)))})
		if p >= 0 {
			syms[p].next = p + 1
		}
	}
	return syms
}

func linked(syms []bpeSymbol) (out []bpeToken) {
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, bpeToken{syms[i].id, syms[i].start, syms[i].start + syms[i].len})
	}
	return out
}

func TestBPELoadErrors(t *testing.T) {
	vocab := map[string]int32{"a": 0, "b": 1, "ab": 2}
	_, err := newBPE(bpeConfig{vocab: vocab, merges: [][2]string{{"a", "b"}, {"a", "c"}}})
	assert.ErrorContains(t, err, `BPE merge 1 ("a" "c"): "c" is not in the vocabulary`)
	_, err = newBPE(bpeConfig{vocab: vocab, merges: [][2]string{{"b", "a"}}})
	assert.ErrorContains(t, err, `BPE merge 0 ("b" "a"): the merged token "ba" is not in the vocabulary`)
	unk := "<unk>"
	_, err = newBPE(bpeConfig{vocab: vocab, unkToken: &unk})
	assert.ErrorContains(t, err, `unk_token "<unk>" is not in the vocabulary`)
	_, err = newBPE(bpeConfig{vocab: map[string]int32{"a": 0, "b": 0}})
	assert.ErrorContains(t, err, "gives id 0 to both")
	_, err = newBPE(bpeConfig{})
	assert.ErrorContains(t, err, "empty")
	_, err = parseMerges([]any{"a b", "a b c"})
	assert.ErrorContains(t, err, `BPE merge 1 "a b c"`)
	_, err = parseMerges([]any{[]any{"a"}})
	assert.ErrorContains(t, err, "BPE merge 0 has 1 parts")
	got, err := parseMerges([]any{"a b", []any{"a b", "c"}})
	require.NoError(t, err)
	assert.Equal(t, [][2]string{{"a", "b"}, {"a b", "c"}}, got)
}

func TestBPECacheConcurrentAndBounded(t *testing.T) {
	m := loadGPT2Model(t)
	want := byteLevelIDs(m, "The quick brown fox jumps over the lazy dog")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 3000; i++ {
				// Many distinct words to churn the cache while the fixed sentence is checked.
				byteLevelIDs(m, strings.Repeat("x", g+1)+string(rune('a'+i%26))+string(rune('a'+(i/26)%26))+string(rune('a'+i/676)))
				if i%100 == 0 {
					assert.Equal(t, want, byteLevelIDs(m, "The quick brown fox jumps over the lazy dog"))
				}
			}
		}(g)
	}
	wg.Wait()
	assert.LessOrEqual(t, m.cache.len(), wordCacheShards*wordCacheShardSize)
	// A word of 256 bytes or more is not cached.
	before := m.cache.len()
	m.wordTokens(strings.Repeat("z", 300))
	assert.Equal(t, before, m.cache.len())
}
