package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bad lines fail alone, each naming its file and line, and the counts
// reconcile: in = embedded + failed, every failed text in failed.jsonl
// once, the good texts embedded in order with the reference's vectors.
// A text past the model's 128 positions (no --max_length: the tokenizer's
// model_max_length of 512 applies) fails in the model call, alone.
func TestBadLines(t *testing.T) {
	ref := readLines[refRow](t, corpusRef)
	good := strings.Split(strings.TrimSpace(string(must(os.ReadFile(corpus)))), "\n")
	long := ""
	for i, r := range ref {
		if r.Truncated && long == "" {
			long = good[i]
		}
	}
	type line struct {
		text   string
		reason string // "" for a good line (ref row), else a part of the failure
		ref    int
	}
	in := []line{
		{good[0], "", 0},
		{"\xff\xfe not UTF-8", "not valid UTF-8 (at byte 0)", 0},
		{good[1], "", 1},
		{`[1, 2, 3]`, "not a JSON object", 0},
		{`{"id": "x", "text": `, "not valid JSON", 0},
		{`{"id": "no text"}`, `field "text" missing`, 0},
		{`{"id": "n", "text": 42}`, `field "text" is not a string`, 0},
		{"", "", -1}, // blank: not a text
		{`{"id": "big", "text": "` + strings.Repeat("word ", 1300) + `"}`, "longer than 6000 bytes", 0},
		{good[2], "", 2},
		{strings.Replace(long, `"text": "`, `"text": "`+strings.Repeat("more words here ", 100), 1), "out of range for axis 0 of size 128", 0},
		{good[3], "", 3},
	}
	dir := t.TempDir()
	var text []string
	for _, l := range in {
		text = append(text, l.text)
	}
	path := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(text, "\n")+"\n"), 0o644))
	out := t.TempDir()
	code, _, err := runEmbed(t, "--model="+testModel, "--tokenizer="+testTok, "--input="+path, "--output="+out,
		"--max_line_bytes=6000", "--shard_rows=3", "--max_batch_tokens=2048")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	fails := readLines[step.Failure](t, filepath.Join(out, "failed.jsonl"))
	var want []refRow
	row, nFailed := 0, 0
	for k, l := range in {
		if l.ref < 0 {
			continue
		}
		if l.reason == "" {
			want = append(want, ref[l.ref])
		} else {
			nFailed++
			found := false
			for _, f := range fails {
				if f.Input == path+":"+itoa(k+1)+"["+itoa(row)+"]" {
					found = true
					assert.Contains(t, f.Reason, l.reason, "line %d", k+1)
				}
			}
			assert.True(t, found, "line %d (row %d) not in failed.jsonl: %v", k+1, row, fails)
		}
		row++
	}
	assert.Len(t, fails, nFailed)
	// The long text is embedded alone in the reference only truncated: its
	// row is checked by its failure; the others against the reference.
	checkAgainstRef(t, out, want, "bad lines")
	s := readSummary(t, out)
	assert.Equal(t, 11, s.TextsIn)
	assert.Equal(t, len(want), s.TextsEmbedded)
	assert.Equal(t, nFailed, s.TextsFailed)
	assert.Equal(t, s.TextsIn, s.TextsEmbedded+s.TextsFailed)

	code, _, err = runEmbed(t, "--model="+testModel, "--tokenizer="+testTok, "--input="+path, "--output="+t.TempDir(),
		"--max_line_bytes=6000", "--strict")
	assert.Error(t, err)
	assert.Equal(t, 1, code)
}

// Configuration errors are refused before anything runs, naming the flag
// and the reason.
func TestFlagErrors(t *testing.T) {
	dir := t.TempDir()
	badTok := filepath.Join(dir, "tokenizer.json")
	b := must(os.ReadFile(testTok))
	require.NoError(t, os.WriteFile(badTok, []byte(strings.Replace(string(b), `"BertPreTokenizer"`, `"NoSuchPreTokenizer"`, 1)), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--input=" + corpus}, "--model, --tokenizer and --input are required"},
		{[]string{"--model=" + testModel, "--tokenizer=" + testTok, "--input=" + corpus, "--pooling=max"}, "--pooling=max: want mean or cls"},
		{[]string{"--model=" + testModel, "--tokenizer=" + badTok, "--input=" + corpus}, "NoSuchPreTokenizer"},
		{[]string{"--model=" + testModel, "--tokenizer=" + testTok, "--input=" + corpus, "--max_length=1"}, "--max_length=1"},
		{[]string{"--model=" + testModel, "--tokenizer=" + testTok, "--input=" + corpus, "--token_output=pooler_output"}, "is not [batch, sequence, hidden]"},
		{[]string{"--model=" + testModel, "--tokenizer=" + testTok, "--input=" + corpus, "--token_output=nope"}, "has no such output"},
		{[]string{"--model=../fashion/data/cnn-fashion.onnx", "--tokenizer=" + testTok, "--input=" + corpus}, "has no such input"},
		{[]string{"--model=" + testModel, "--tokenizer=" + testTok, "--input=" + filepath.Join(dir, "*.jsonl")}, "no files match"},
		{[]string{"--model=" + testModel, "--tokenizer=" + testTok, "--input=" + corpus, "--call_timeout=-1s"}, "--call_timeout=-1s: want a duration of 0 (no limit) or more"},
	} {
		setFlags(t, tc.args...)
		_, err := configFromFlags(context.Background())
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
	}
}

// poolTokens: the mean over the tokens the mask keeps, or the first
// token; L2 normalisation, a zero vector left zero.
func TestPoolTokens(t *testing.T) {
	vals := []float64{1, 2, 3, 4, 100, 100}
	got, err := poolTokens(vals, []int64{1, 1, 0}, 2, poolMean, false)
	require.NoError(t, err)
	assert.Equal(t, []float32{2, 3}, got)
	got, err = poolTokens(vals, []int64{1, 1, 0}, 2, poolCLS, false)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2}, got)
	got, err = poolTokens([]float64{3, 4}, []int64{1}, 2, poolMean, true)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float32{0.6, 0.8}, got, 1e-7)
	got, err = poolTokens([]float64{0, 0}, []int64{1}, 2, poolMean, true)
	require.NoError(t, err)
	assert.Equal(t, []float32{0, 0}, got)
	_, err = poolTokens([]float64{0, 0}, []int64{0}, 2, poolMean, true)
	assert.ErrorContains(t, err, "keeps no token")
}

// A byte-level BPE tokenizer (GPT-2's, from the tokenizer package's test
// data) and a SentencePiece Unigram one feed the pipeline as the BERT
// WordPiece one does: every text embedded, the tokens the tokenizer's own
// (truncated) encodings. GPT-2's ids lie past the test model's
// vocabulary, so it runs with the stub; the Unigram model's 1,000 ids run
// through the model.
func TestOtherTokenizers(t *testing.T) {
	texts := readLines[struct{ Text string }](t, corpus)
	for _, tc := range []struct{ tok, backend string }{
		{"../../transforms/text/tokenizer/testdata/gpt2/tokenizer.json", "stub"},
		{"../../transforms/text/tokenizer/testdata/spm/test_model.tokenizer.json", "cpu"},
	} {
		f, err := loadTokenizer(context.Background(), tc.tok)
		require.NoError(t, err)
		enc, err := newEncoder(f.t, 64, 0, 0)
		require.NoError(t, err)
		var tokens, truncated int64
		for _, x := range texts {
			e, cut, err := enc.encode(x.Text)
			require.NoError(t, err)
			tokens += int64(e[0].Len())
			if cut {
				truncated++
			}
		}
		out := t.TempDir()
		code, _, err := runEmbed(t, "--model="+testModel, "--tokenizer="+tc.tok, "--input="+corpus, "--output="+out,
			"--max_length=64", "--backend="+tc.backend)
		require.NoError(t, err, tc.tok)
		require.Equal(t, 0, code)
		s := readSummary(t, out)
		assert.Equal(t, 400, s.TextsEmbedded, tc.tok)
		assert.Equal(t, tokens, s.Tokens, tc.tok)
		assert.Equal(t, truncated, s.TextsTruncated, tc.tok)
		assert.Positive(t, truncated, tc.tok)
	}
}

// An empty text fails where the tokenizer makes no tokens of it (GPT-2's
// adds no special tokens) and is embedded where it does (BERT's [CLS]
// [SEP]); an empty line of plain text is no text at all.
func TestEmptyText(t *testing.T) {
	for _, tc := range []struct {
		tok  string
		fail bool
	}{
		{"../../transforms/text/tokenizer/testdata/gpt2/tokenizer.json", true},
		{testTok, false},
	} {
		f, err := loadTokenizer(context.Background(), tc.tok)
		require.NoError(t, err)
		fn := &tokenizeFn{TextField: "text", IDField: "id", Tokenizer: tc.tok, TokenizerConfig: f.cfgPath,
			MaxLength: 64, MaxLineBytes: 1 << 20, Inputs: []string{inputIDs, attentionMask}, Types: []nd.DType{nd.Int64, nd.Int64}}
		require.NoError(t, fn.Setup(context.Background()))
		es, st, err := fn.row([]byte(`{"id": "e", "text": ""}`), false, true, 7, "x.jsonl:8")
		if tc.fail {
			require.Error(t, err)
			assert.Equal(t, stepTokenize, st)
			assert.Contains(t, err.Error(), "no tokens")
			continue
		}
		require.NoError(t, err)
		require.Len(t, es, 1)
		ids, _ := es[0].Input(inputIDs)
		assert.Equal(t, []int{2}, ids.Shape)
	}
}

// Every flag of the command has its help text, and --help's text names
// the outputs.
func TestHelp(t *testing.T) {
	for _, name := range ownFlags {
		f := flag.Lookup(name)
		require.NotNil(t, f, name)
		assert.NotEmpty(t, f.Usage, name)
	}
	var b strings.Builder
	usage(&b)
	for _, s := range []string{"embeddings.npy", "embeddings.jsonl", "summary.json", "failed.jsonl", "--max_batch_tokens", "--pooling"} {
		assert.Contains(t, b.String(), s)
	}
}
