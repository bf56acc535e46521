package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/sbinet/npyio/npy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	flags.Progress = 0
	// First, as the command: the child inherits the environment of a
	// parent that may have started the test executor too.
	if os.Getenv(asMain) == "1" {
		// The command (TestMemoryBounded's child), then its peak RSS
		// (VmHWM) on stderr.
		flag.Parse()
		beam.Init()
		code, err := run(context.Background(), io.Discard)
		if err != nil {
			fmt.Fprintln(os.Stderr, "embed:", err)
		}
		status, _ := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				fmt.Fprintln(os.Stderr, l)
			}
		}
		os.Exit(code)
	}
	steptest.MaybeServe() // this binary also serves as the tests' GPU executor
	ptest.Main(m)
}

// asMain makes this test binary the embed command (TestMemoryBounded runs
// it as a child process, so that no second binary is linked).
const asMain = "BEAMGPU_EMBED_AS_MAIN"

const (
	testModel = "testdata/embedder.onnx"
	testTok   = "../../transforms/text/tokenizer/testdata/bert/uncased/tokenizer.json"
	corpus    = "testdata/corpus.jsonl"
	corpusRef = "testdata/corpus.ref.jsonl"
	// refLength is the max_length the reference was made with.
	refLength = "--max_length=64"
)

// ownFlags are reset to their defaults before each run.
var ownFlags = []string{"model", "tokenizer", "input", "output", "text_field", "id_field", "max_length", "pooling",
	"normalize", "chunk_tokens", "chunk_overlap", "token_output", "shard_rows", "max_batch_size", "max_batch_tokens", "sort_window",
	"max_line_bytes", "call_timeout", "memory_budget", "strict", "allow_empty", "backend", "backend_override"}

// setFlags sets the command's flags to args, the others to their defaults.
func setFlags(t testing.TB, args ...string) {
	t.Helper()
	for _, name := range ownFlags {
		f := flag.Lookup(name)
		require.NotNil(t, f, name)
		require.NoError(t, f.Value.Set(f.DefValue))
	}
	require.NoError(t, flag.CommandLine.Parse(args))
}

// runEmbed runs the command with args, the other flags at their defaults,
// and returns its exit status and output.
func runEmbed(t *testing.T, args ...string) (int, string, error) {
	t.Helper()
	setFlags(t, args...)
	var buf bytes.Buffer
	code, err := run(context.Background(), &buf)
	t.Log("\n" + buf.String())
	return code, buf.String(), err
}

type refRow struct {
	ID        json.RawMessage `json:"id"`
	Tokens    int             `json:"tokens"`
	Truncated bool            `json:"truncated"`
	Embedding []float64       `json:"embedding"`
}

type outRow struct {
	ID        json.RawMessage `json:"id"`
	Embedding []float64       `json:"embedding"`
}

func readLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v), sc.Text())
		out = append(out, v)
	}
	return out
}

// readEmbeddings reads embeddings.npy with github.com/sbinet/npyio (not
// this repository's reader).
func readEmbeddings(t *testing.T, dir string) ([]float32, []int) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, embeddingsFile))
	require.NoError(t, err)
	defer f.Close()
	r, err := npy.NewReader(f)
	require.NoError(t, err)
	var v []float32
	require.NoError(t, r.Read(&v))
	return v, r.Header.Descr.Shape
}

func readSummary(t *testing.T, dir string) summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, summaryFile))
	require.NoError(t, err)
	var s summary
	require.NoError(t, json.Unmarshal(b, &s))
	return s
}

func cosine(a []float32, b []float64) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * b[i]
		aa += float64(a[i]) * float64(a[i])
		bb += b[i] * b[i]
	}
	return ab / math.Sqrt(aa*bb)
}

// checkAgainstRef checks the embeddings of dir, rows of npy and JSONL
// alike, against ref row for row: the same ids in the same order, cosine
// >= 0.9999, unit length.
func checkAgainstRef(t *testing.T, dir string, ref []refRow, what string) {
	t.Helper()
	vals, shape := readEmbeddings(t, dir)
	require.Equal(t, []int{len(ref), 16}, shape, what)
	rows := readLines[outRow](t, filepath.Join(dir, rowsFile))
	require.Len(t, rows, len(ref), what)
	worst := 1.0
	for i, r := range ref {
		v := vals[16*i : 16*i+16]
		require.JSONEq(t, string(r.ID), string(rows[i].ID), "%s row %d", what, i)
		for j := range v {
			require.Equal(t, v[j], float32(rows[i].Embedding[j]), "%s row %d: npy and jsonl differ", what, i)
		}
		c := cosine(v, r.Embedding)
		worst = min(worst, c)
		require.GreaterOrEqual(t, c, 0.9999, "%s row %d (%s): cosine with the reference", what, i, r.ID)
		n := 0.0
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		require.InDelta(t, 1, n, 1e-5, "%s row %d: not unit length", what, i)
	}
	t.Logf("%s: %d rows, smallest cosine with the reference %.7f", what, len(ref), worst)
}

// The pipeline's embeddings equal, row for row, tokenizers.js + ONNX
// Runtime run one text per call (containers/onnx/embed_reference.js),
// whatever the batch composition: batches bounded by tokens from one text
// (64, each text a call of its own) to thousands, shards that cut the
// corpus at other places, windows that sort few texts together. Truncated
// texts and tokens agree with the reference's counts.
func TestMatchesReference(t *testing.T) {
	ref := readLines[refRow](t, corpusRef)
	require.Len(t, ref, 400)
	var tokens, truncated int64
	for _, r := range ref {
		tokens += int64(r.Tokens)
		if r.Truncated {
			truncated++
		}
	}
	require.Positive(t, truncated)
	for _, args := range [][]string{
		{"--max_batch_size=1"},
		{"--max_batch_tokens=64"},
		{"--max_batch_tokens=512", "--shard_rows=37", "--sort_window=50"},
		{"--max_batch_tokens=4096", "--max_batch_size=7"},
		{"--max_batch_tokens=0", "--shard_rows=1000"},
	} {
		out := t.TempDir()
		code, text, err := runEmbed(t, append([]string{"--model=" + testModel, "--tokenizer=" + testTok, "--input=" + corpus,
			"--output=" + out, refLength}, args...)...)
		require.NoError(t, err)
		require.Equal(t, 0, code)
		assert.NotContains(t, text, "STUB RUN")
		checkAgainstRef(t, out, ref, strings.Join(args, " "))
		s := readSummary(t, out)
		assert.Equal(t, 400, s.TextsIn)
		assert.Equal(t, 400, s.TextsEmbedded)
		assert.Equal(t, 0, s.TextsFailed)
		assert.Equal(t, tokens, s.Tokens)
		assert.Equal(t, truncated, s.TextsTruncated)
		assert.Equal(t, 16, s.Dimensions)
		assert.Positive(t, s.TokensPerSecond)
		assert.False(t, s.Stub)
		if args[0] == "--max_batch_size=1" {
			assert.Zero(t, s.PaddingShare, "a text per call pads nothing")
		} else {
			assert.Positive(t, s.PaddingShare)
		}
		b, err := os.ReadFile(filepath.Join(out, "failed.jsonl"))
		require.NoError(t, err)
		assert.Empty(t, b)
	}
}

// --backend=stub: embeddings of the model's width, zeros (not normalised
// into NaN), the summary and the output saying STUB RUN.
func TestStubBackend(t *testing.T) {
	out := t.TempDir()
	code, text, err := runEmbed(t, "--model="+testModel, "--tokenizer="+testTok, "--input="+corpus, "--output="+out, refLength, "--backend=stub")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	assert.Contains(t, text, "STUB RUN")
	vals, shape := readEmbeddings(t, out)
	assert.Equal(t, []int{400, 16}, shape)
	for i, v := range vals {
		require.Zero(t, v, "element %d", i)
	}
	s := readSummary(t, out)
	assert.True(t, s.Stub)
	assert.Equal(t, "stub", s.Backend[0].Impl)
	assert.Equal(t, 400, s.TextsEmbedded)
}

// The model run through the GPU executor (the test binary serves it)
// gives the CPU's embeddings.
func TestGPUBackend(t *testing.T) {
	setFlags(t, "--model="+testModel, "--tokenizer="+testTok, "--input="+corpus, refLength, "--max_batch_tokens=1024")
	cfg, err := configFromFlags(context.Background())
	require.NoError(t, err)
	ref := readLines[refRow](t, corpusRef)
	for _, kind := range []backend.Kind{backend.CPU, backend.GPU} {
		sel, err := backend.New(backend.Config{Default: kind, Steps: []backend.Step{cfg.Handler.Use()}, Executor: steptest.UseExecutor()})
		require.NoError(t, err)
		cfg.Output = t.TempDir()
		var buf bytes.Buffer
		sum, err := execute(context.Background(), cfg, sel, &buf)
		require.NoError(t, err, buf.String())
		assert.Equal(t, string(kind), sum.Backend[0].Impl)
		checkAgainstRef(t, cfg.Output, ref, string(kind))
	}
}

// A glob of files (gzip JSONL, plain JSONL, plain text: one document a
// line) is read in the order of the sorted names; plain text's ids are the
// row numbers; a JSONL line without the id field has its row number too.
func TestGlobGzipAndPlainText(t *testing.T) {
	ref := readLines[refRow](t, corpusRef)
	lines := strings.Split(strings.TrimSpace(string(must(os.ReadFile(corpus)))), "\n")
	dir := t.TempDir()
	var gz bytes.Buffer
	z := gzip.NewWriter(&gz)
	z.Write([]byte(strings.Join(lines[:150], "\n") + "\n"))
	require.NoError(t, z.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.jsonl.gz"), gz.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte(strings.Join(lines[150:300], "\n")), 0o644))
	var txt []string
	for _, l := range lines[300:] {
		var d struct{ Text string }
		require.NoError(t, json.Unmarshal([]byte(l), &d))
		if strings.ContainsAny(d.Text, "\n\r") || strings.TrimSpace(d.Text) == "" {
			continue
		}
		txt = append(txt, d.Text)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c.txt"), []byte(strings.Join(txt, "\n")+"\n"), 0o644))
	want := append([]refRow(nil), ref[:300]...)
	k := 0
	for _, r := range ref[300:] {
		var d struct{ Text string }
		require.NoError(t, json.Unmarshal([]byte(lines[300+k]), &d))
		k++
		if strings.ContainsAny(d.Text, "\n\r") || strings.TrimSpace(d.Text) == "" {
			continue
		}
		r.ID = json.RawMessage(itoa(len(want)))
		want = append(want, r)
	}
	out := t.TempDir()
	code, _, err := runEmbed(t, "--model="+testModel, "--tokenizer="+testTok, "--input="+filepath.Join(dir, "*"),
		"--output="+out, refLength, "--shard_rows=64")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	checkAgainstRef(t, out, want, "glob")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
