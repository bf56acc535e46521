package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/beamgpu/beamgpu/transforms/step/files"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The model, the tokenizer (tokenizer_config.json beside it), a glob of
// gzip JSONL files (read without seeking: the object store streams) and
// every output go through Beam's filesystems (memfs here, gs:// on
// Dataflow), with the reference's embeddings; nothing but the outputs is
// left in the output prefix.
func TestObjectStorePaths(t *testing.T) {
	for src, dst := range map[string]string{
		testModel: "memfs://emb/in/embedder.onnx",
		testTok:   "memfs://emb/tok/tokenizer.json",
		filepath.Join(filepath.Dir(testTok), "tokenizer_config.json"): "memfs://emb/tok/tokenizer_config.json",
	} {
		memfs.Write(dst, must(os.ReadFile(src)))
	}
	lines := strings.SplitAfter(string(must(os.ReadFile(corpus))), "\n")
	for k, part := range [][]string{lines[:170], lines[170:]} {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write([]byte(strings.Join(part, "")))
		require.NoError(t, zw.Close())
		memfs.Write("memfs://emb/in/part-"+itoa(k)+".jsonl.gz", z.Bytes())
	}
	code, _, err := runEmbed(t, "--model=memfs://emb/in/embedder.onnx", "--tokenizer=memfs://emb/tok/tokenizer.json",
		"--input=memfs://emb/in/part-*.jsonl.gz", "--output=memfs://emb/out", "--shard_rows=50", "--backend=cpu", refLength)
	require.NoError(t, err)
	require.Equal(t, 0, code)
	ref := readLines[refRow](t, corpusRef)
	got := strings.Split(strings.TrimSpace(string(readStore(t, "memfs://emb/out/embeddings.jsonl"))), "\n")
	require.Len(t, got, len(ref))
	for i, l := range got {
		var r outRow
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		require.JSONEq(t, string(ref[i].ID), string(r.ID))
		v := make([]float32, len(r.Embedding))
		for j, x := range r.Embedding {
			v[j] = float32(x)
		}
		require.GreaterOrEqual(t, cosine(v, ref[i].Embedding), 0.9999, "row %d", i)
	}
	var s summary
	require.NoError(t, json.Unmarshal(readStore(t, "memfs://emb/out/summary.json"), &s))
	assert.Equal(t, 400, s.TextsEmbedded)
	assert.Equal(t, int64(107), s.TextsTruncated)
	left, err := files.List(context.Background(), "memfs://emb/out/*")
	require.NoError(t, err)
	var names []string
	for _, l := range left {
		names = append(names, strings.TrimPrefix(l, "memfs://emb/out/"))
	}
	assert.ElementsMatch(t, []string{"embeddings.npy", "embeddings.jsonl", "summary.json", "failed.jsonl"}, names)
	// Without --max_length, tokenizer_config.json's model_max_length
	// (512), read from beside tokenizer.json on the store.
	setFlags(t, "--model=memfs://emb/in/embedder.onnx", "--tokenizer=memfs://emb/tok/tokenizer.json", "--input=memfs://emb/in/part-*.jsonl.gz")
	cfg, err := configFromFlags(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 512, cfg.MaxLength)
	assert.NotEmpty(t, cfg.TokenizerConfig)
}

func readStore(t *testing.T, url string) []byte {
	t.Helper()
	r, err := files.OpenRead(context.Background(), url)
	require.NoError(t, err)
	defer r.Close()
	return must(io.ReadAll(r))
}
