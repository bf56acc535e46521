package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type chunkRow struct {
	ID        json.RawMessage `json:"id"`
	Chunk     *int            `json:"chunk"`
	Embedding []float64       `json:"embedding"`
}

// --chunk_tokens cuts each text into chunks, a row each, in text and chunk
// order: as many as the tokenizer's overflowing windows; chunk 0 is the
// text truncated to the chunk size, which the reference (tokenizers.js +
// ONNX Runtime, max_length 64) embeds; every chunk equals the model run on
// that chunk's tokens alone (onnx.Model.Run, one chunk per call, mean
// pooled and normalised here), whatever batches the pipeline made.
func TestChunks(t *testing.T) {
	ref := readLines[refRow](t, corpusRef)
	texts := readLines[struct{ Text string }](t, corpus)
	f, err := loadTokenizer(context.Background(), testTok)
	require.NoError(t, err)
	enc, err := newEncoder(f.t, 0, 64, 16)
	require.NoError(t, err)
	m, err := onnxstep.Load(context.Background(), testModel)
	require.NoError(t, err)
	out := t.TempDir()
	code, _, err := runEmbed(t, "--model="+testModel, "--tokenizer="+testTok, "--input="+corpus, "--output="+out,
		"--chunk_tokens=64", "--chunk_overlap=16", "--max_batch_tokens=2048")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	rows := readLines[chunkRow](t, filepath.Join(out, rowsFile))
	vals, shape := readEmbeddings(t, out)
	require.Equal(t, []int{len(rows), 16}, shape)
	k, multi := 0, 0
	for i, x := range texts {
		encs, _, err := enc.encode(x.Text)
		require.NoError(t, err)
		if len(encs) > 1 {
			multi++
		}
		for c, e := range encs {
			require.Less(t, k, len(rows))
			r := rows[k]
			require.JSONEq(t, string(ref[i].ID), string(r.ID), "row %d", k)
			require.NotNil(t, r.Chunk)
			require.Equal(t, c, *r.Chunk, "row %d", k)
			v := vals[16*k : 16*k+16]
			if c == 0 {
				require.GreaterOrEqual(t, cosine(v, ref[i].Embedding), 0.9999, "text %d chunk 0", i)
			}
			if c > 0 || i%50 == 0 {
				want := alone(t, m, e.IDs, e.TypeIDs)
				require.GreaterOrEqual(t, cosine(v, want), 0.9999, "text %d chunk %d", i, c)
			}
			k++
		}
	}
	assert.Equal(t, len(rows), k)
	assert.Positive(t, multi)
	s := readSummary(t, out)
	assert.Equal(t, 400, s.TextsEmbedded)
	assert.Equal(t, len(rows), s.Rows)
	assert.Zero(t, s.TextsTruncated)
	t.Logf("%d texts, %d chunks (%d texts of several)", len(texts), len(rows), multi)
}

// alone is the embedding of one sequence by the model run on it alone.
func alone(t *testing.T, m interface {
	Run([]nd.Array) ([]nd.Array, error)
}, ids, types []int) []float64 {
	t.Helper()
	n := len(ids)
	a, b, c := make([]int64, n), make([]int64, n), make([]int64, n)
	for i := range ids {
		a[i], b[i], c[i] = int64(ids[i]), 1, int64(types[i])
	}
	outs, err := m.Run([]nd.Array{nd.Of(a, 1, n), nd.Of(b, 1, n), nd.Of(c, 1, n)})
	require.NoError(t, err)
	vec, err := poolTokens(nd.Float64s(outs[1]), b, 16, poolMean, true)
	require.NoError(t, err)
	out := make([]float64, len(vec))
	for i, x := range vec {
		out[i] = float64(x)
	}
	return out
}

// A text one of whose chunks fails in the model (chunks of 200 tokens
// against the model's 128 positions) fails whole, its other chunks
// dropped; the counts reconcile and the rows are the other texts' chunks.
func TestChunkFailureFailsTheText(t *testing.T) {
	texts := readLines[struct{ Text string }](t, corpus)
	f, err := loadTokenizer(context.Background(), testTok)
	require.NoError(t, err)
	enc, err := newEncoder(f.t, 0, 200, 0)
	require.NoError(t, err)
	wantFailed, wantRows, partial := 0, 0, 0
	for _, x := range texts {
		encs, _, err := enc.encode(x.Text)
		require.NoError(t, err)
		bad := 0
		for _, e := range encs {
			if e.Len() > 128 {
				bad++
			}
		}
		if bad > 0 {
			wantFailed++
			if bad < len(encs) {
				partial++
			}
		} else {
			wantRows += len(encs)
		}
	}
	require.Positive(t, partial, "no text has both good and failing chunks")
	out := t.TempDir()
	code, _, err := runEmbed(t, "--model="+testModel, "--tokenizer="+testTok, "--input="+corpus, "--output="+out, "--chunk_tokens=200")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	s := readSummary(t, out)
	assert.Equal(t, wantFailed, s.TextsFailed)
	assert.Equal(t, 400-wantFailed, s.TextsEmbedded)
	assert.Equal(t, wantRows, s.Rows)
	_, shape := readEmbeddings(t, out)
	assert.Equal(t, []int{wantRows, 16}, shape)
}
