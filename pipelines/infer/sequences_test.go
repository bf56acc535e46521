package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The BERT-style encoder of containers/onnx/export_encoder.py: inputs
// input_ids, attention_mask, token_type_ids (int64 [batch, sequence]);
// outputs last_hidden_state [batch, sequence, 32] and pooler_output
// [batch, 32]; its rows and ONNX Runtime's outputs, one row per call.
const (
	encoderDir   = "testdata/encoder"
	encoderModel = encoderDir + "/encoder.onnx"
	encoderRows  = encoderDir + "/rows.jsonl"
)

// encoderLengths are the lengths of the rows of rows.jsonl.
var encoderLengths = []int{5, 17, 3, 9, 31, 12, 1, 24, 7, 16, 2, 40}

type tensorJSON struct {
	Shape  []int      `json:"shape"`
	Values []*float64 `json:"values"`
}

// refLine is a line of a reference file (ONNX Runtime's outputs).
type refLine struct {
	Row             int        `json:"row"`
	LastHiddenState tensorJSON `json:"last_hidden_state"`
	PoolerOutput    tensorJSON `json:"pooler_output"`
}

// outputsLine is a line of predictions.jsonl of every output.
type outputsJSON struct {
	Row       int                   `json:"row"`
	Predicted bool                  `json:"predicted"`
	Outputs   map[string]tensorJSON `json:"outputs"`
}

// closeRel checks got against want, element by element, to 1e-4 of the
// larger of |want| and 1e-2 of the tensor's largest magnitude.
func closeRel(t *testing.T, what string, want tensorJSON, got tensorJSON) {
	t.Helper()
	require.Equal(t, want.Shape, got.Shape, what)
	require.Len(t, got.Values, len(want.Values), what)
	scale := 0.0
	for _, w := range want.Values {
		scale = max(scale, math.Abs(*w))
	}
	for i, w := range want.Values {
		require.NotNil(t, got.Values[i], "%s[%d]", what, i)
		g := *got.Values[i]
		if math.Abs(g-*w) > 1e-4*max(math.Abs(*w), 1e-2*scale) {
			require.Failf(t, "not close", "%s[%d] = %v, ONNX Runtime's %v", what, i, g, *w)
		}
	}
}

// checkEncoderJSONL holds predictions.jsonl in dir to the reference.
func checkEncoderJSONL(t *testing.T, dir, ref string) {
	t.Helper()
	refs := readLines[refLine](t, ref)
	got := readLines[outputsJSON](t, filepath.Join(dir, rowsFile))
	require.Len(t, got, len(refs))
	for i, r := range refs {
		require.Equal(t, i, got[i].Row, "rows in input order")
		require.True(t, got[i].Predicted, "row %d", i)
		closeRel(t, fmt.Sprintf("row %d last_hidden_state", i), r.LastHiddenState, got[i].Outputs["last_hidden_state"])
		closeRel(t, fmt.Sprintf("row %d pooler_output", i), r.PoolerOutput, got[i].Outputs["pooler_output"])
	}
}

// Rows of 12 lengths (1 to 40) through the encoder, in several batch
// compositions (sorted windows, a token budget, input order, shards of 5
// rows, one row a call): every row equals ONNX Runtime's output for it run
// alone without padding, rows in input order, in predictions.jsonl (the
// first output's rows differ in shape); summary.json counts the tokens and
// the padding.
func TestJSONLEncoderMatchesORT(t *testing.T) {
	real := 0
	for _, l := range encoderLengths {
		real += l
	}
	for _, c := range []struct {
		args   []string
		padded int // -1: not known in advance
	}{
		{[]string{"--max_batch_size=12"}, 12 * 40},                                                                     // one call, all padded to 40
		{[]string{"--max_batch_size=12", "--sort_window=1"}, real},                                                     // a window of one row: calls of one row
		{[]string{"--max_batch_size=4"}, 4*5 + 4*16 + 4*40},                                                            // sorted: 1 2 3 5 | 7 9 12 16 | 17 24 31 40
		{[]string{"--max_batch_size=3", "--sort_window=12", "--max_batch_tokens=40"}, 9 + 27 + 32 + 17 + 24 + 31 + 40}, // 1 2 3 | 5 7 9 | 12 16 | 17 | 24 | 31 | 40
		{[]string{"--shard_rows=5", "--max_batch_size=5"}, -1},                                                         // three shards
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out := t.TempDir()
			code, text, err := runInfer(t, append([]string{"--model=" + encoderModel, "--input=" + encoderRows, "--output=" + out, "--backend=cpu"}, c.args...)...)
			require.NoError(t, err)
			require.Equal(t, 0, code)
			assert.Contains(t, text, "rows: 12 in, 12 predicted, 0 failed")
			checkEncoderJSONL(t, out, encoderDir+"/rows.ref.jsonl")
			assert.NoFileExists(t, filepath.Join(out, predictionsFile), "rows of different shapes: predictions.jsonl only")
			s := readSummary(t, out)
			require.NotNil(t, s.Tokens)
			assert.Equal(t, int64(real), *s.Tokens)
			assert.GreaterOrEqual(t, *s.PaddedTokens, int64(real))
			if c.padded >= 0 {
				assert.Equal(t, int64(c.padded), *s.PaddedTokens)
			}
			assert.InDelta(t, 1-float64(real)/float64(*s.PaddedTokens), *s.PaddingShare, 1e-9)
			assert.Equal(t, "rows are padded; outputs cut back per row: last_hidden_state axis 1 as input_ids axis 1", s.Padding)
		})
	}
}

// The encoder's inputs as one .npy each (rows of one length): predictions.npy
// holds last_hidden_state [6, 8, 32], equal to ONNX Runtime's; the files are
// named in any order.
func TestMultiNPYInput(t *testing.T) {
	out := t.TempDir()
	in := fmt.Sprintf("--input=token_type_ids=%[1]s/fixed_token_type_ids.npy,input_ids=%[1]s/fixed_input_ids.npy,attention_mask=%[1]s/fixed_attention_mask.npy", encoderDir)
	code, text, err := runInfer(t, "--model="+encoderModel, in, "--output="+out, "--backend=cpu", "--shard_rows=4")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	assert.Contains(t, text, "rows: 6 in, 6 predicted, 0 failed")
	got, shape := readPredictions(t, out)
	assert.Equal(t, []int{6, 8, 32}, shape)
	assert.NoFileExists(t, filepath.Join(out, rowsFile))
	for i, r := range readLines[refLine](t, encoderDir+"/fixed.ref.jsonl") {
		g := tensorJSON{Shape: []int{8, 32}}
		for _, v := range got[i*256 : (i+1)*256] {
			g.Values = append(g.Values, new(float64(v)))
		}
		closeRel(t, fmt.Sprintf("row %d", i), r.LastHiddenState, g)
	}
	s := readSummary(t, out)
	require.NotNil(t, s.Tokens)
	assert.Equal(t, int64(48), *s.Tokens)
	assert.Equal(t, int64(48), *s.PaddedTokens)
	assert.Equal(t, 0.0, *s.PaddingShare)
}

// The errors of several .npy inputs, before anything runs.
func TestMultiNPYErrors(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	f := func(name string) string { return fmt.Sprintf("%s/fixed_%s.npy", encoderDir, name) }
	ids, mask, types := f("input_ids"), f("attention_mask"), f("token_type_ids")
	short := filepath.Join(dir, "short.npy")
	writeNPY(t, short, nd.Int64, []int{5, 8}, make([]byte, 5*8*8))
	i32 := filepath.Join(dir, "i32.npy")
	writeNPY(t, i32, nd.Int32, []int{6, 8}, make([]byte, 6*8*4))
	for _, c := range []struct{ input, want string }{
		{"input_ids=" + ids + ",attention_mask=" + mask + ",token_ids=" + types, `the model ` + encoderModel + ` has no input "token_ids" (its inputs: input_ids: int64[batchxsequence]; attention_mask: int64[batchxsequence]; token_type_ids: int64[batchxsequence])`},
		{"input_ids=" + ids + ",attention_mask=" + mask, "no .npy for the model " + encoderModel + "'s input token_type_ids: int64[batchxsequence]"},
		{"input_ids=" + ids + ",attention_mask=" + short + ",token_type_ids=" + types, ids + " holds 6 rows but " + short + " holds 5"},
		{"input_ids=" + ids + ",attention_mask=" + i32 + ",token_type_ids=" + types, i32 + `: dtype int32, but the model ` + encoderModel + `'s input "attention_mask" is int64`},
		{"input_ids=" + ids + ",input_ids=" + ids, "input_ids given twice"},
		{ids, "takes 3 inputs"},
		{"input_ids=" + ids + ",attention_mask=" + filepath.Join(dir, "none.npy") + ",token_type_ids=" + types, "none.npy"},
	} {
		code, _, err := runInfer(t, "--model="+encoderModel, "--input="+c.input, "--output="+out)
		assert.Equal(t, 2, code, c.input)
		assert.ErrorContains(t, err, c.want)
	}
	code, _, err := runInfer(t, "--model="+encoderModel, "--input="+encoderRows, "--pad=input_id=1", "--output="+out)
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, `pad value for "input_id": the model`)
	code, _, err = runInfer(t, "--model="+encoderModel, "--input="+encoderRows, "--pad=input_ids", "--output="+out)
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "--pad=input_ids: want name=value")
}

// Bad lines of a JSONL file fail their rows, naming the file and line; the
// others run; the counts reconcile; blank lines are no rows. The same file
// gzipped gives the same.
func TestJSONLBadLines(t *testing.T) {
	good, err := os.ReadFile(encoderRows)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(good)), "\n")
	bad := []string{
		lines[0],
		`[1, 2, 3]`,
		`{"input_ids": [1, 2], "attention_mask": [1, 1]}`,
		``,
		`{"input_ids": [1, "a"], "attention_mask": [1, 1], "token_type_ids": [0, 0]}`,
		`{"input_ids": [[1, 2], [3]], "attention_mask": [1, 1], "token_type_ids": [0, 0]}`,
		`{"input_ids": [1, 2.5], "attention_mask": [1, 1], "token_type_ids": [0, 0]}`,
		`{"input_ids": [1, 2], "attention_mask": [1, 1], "token_type_ids": [0, 0]`,
		lines[1],
		`{"input_ids": [1, 2], "attention_mask": [1, 1, 1], "token_type_ids": [0, 0]}`,
		`{"input_ids": [5, 500], "attention_mask": [1, 1], "token_type_ids": [0, 0]}`,
		lines[2],
		longRow(70), // past the model's 64 positions: its call fails, the row alone
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(plain, []byte(strings.Join(bad, "\n")+"\n\n"), 0o644))
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(strings.Join(bad, "\n")))
	require.NoError(t, zw.Close())
	gz := filepath.Join(dir, "bad.jsonl.gz")
	require.NoError(t, os.WriteFile(gz, z.Bytes(), 0o644))
	for _, in := range []string{plain, gz} {
		out := t.TempDir()
		code, text, err := runInfer(t, "--model="+encoderModel, "--input="+in, "--output="+out, "--backend=cpu", "--shard_rows=4")
		require.NoError(t, err)
		require.Equal(t, 0, code)
		assert.Contains(t, text, "rows: 12 in, 3 predicted, 9 failed")
		fails := readLines[step.Failure](t, filepath.Join(out, "failed.jsonl"))
		slices.SortFunc(fails, func(a, b step.Failure) int { return strings.Compare(a.Input, b.Input) })
		reasons := map[string]string{}
		for _, f := range fails {
			reasons[f.Input] = f.Reason
		}
		require.Len(t, reasons, 9, "%v", fails)
		for row, want := range map[string]string{
			"#1":  in + " line 2: not a JSON object",
			"#2":  in + ` line 3: field "token_type_ids" missing`,
			"#3":  in + ` line 5: field "input_ids": value[1] is a string, not a number`,
			"#4":  in + ` line 6: field "input_ids": rank 2 ([2x2]), but the model's input input_ids: int64[batchxsequence] takes rank 1 per row`,
			"#5":  in + ` line 7: field "input_ids": value[1]: 2.5 is not an integer`,
			"#6":  in + " line 8: not valid JSON",
			"#8":  "sequence", // lengths 2 and 3 of one row: the model's check
			"#9":  "",         // id 500 outside the vocabulary: the model fails the row alone
			"#11": "",         // 70 positions of 64
		} {
			assert.Contains(t, reasons[row], want, row)
		}
		got := readLines[outputsJSON](t, filepath.Join(out, rowsFile))
		require.Len(t, got, 12)
		refs := readLines[refLine](t, encoderDir+"/rows.ref.jsonl")
		for i, ref := range map[int]refLine{0: refs[0], 7: refs[1], 10: refs[2]} {
			require.True(t, got[i].Predicted, "row %d", i)
			closeRel(t, fmt.Sprintf("row %d", i), ref.PoolerOutput, got[i].Outputs["pooler_output"])
		}
		for _, i := range []int{1, 2, 3, 4, 5, 6, 8, 9, 11} {
			assert.False(t, got[i].Predicted, "row %d", i)
		}
		s := readSummary(t, out)
		assert.Equal(t, 12, s.RowsIn)
		assert.Equal(t, s.RowsIn, s.RowsPredicted+s.RowsFailed)
	}
}

// longRow is a JSONL line of the encoder's inputs of n tokens.
func longRow(n int) string {
	ids, ones, zeros := make([]int, n), make([]int, n), make([]int, n)
	for i := range ids {
		ids[i], ones[i] = 1+i%90, 1
	}
	b, _ := json.Marshal(map[string][]int{"input_ids": ids, "attention_mask": ones, "token_type_ids": zeros})
	return string(b)
}

// Rows of one length in a JSONL file: predictions.npy (the first output),
// no padding; a pad value the attention mask hides changes nothing, one it
// does not (the mask's) changes the padded rows.
func TestJSONLSameLengthsAndPadValues(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(encoderRows)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(good)), "\n")
	same := filepath.Join(dir, "same.jsonl")
	require.NoError(t, os.WriteFile(same, []byte(lines[0]+"\n"+lines[0]+"\n"), 0o644))
	out := t.TempDir()
	code, _, err := runInfer(t, "--model="+encoderModel, "--input="+same, "--output="+out, "--backend=cpu")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	_, shape := readPredictions(t, out)
	assert.Equal(t, []int{2, 5, 32}, shape)
	assert.NoFileExists(t, filepath.Join(out, rowsFile))
	assert.Equal(t, 0.0, *readSummary(t, out).PaddingShare)

	out = t.TempDir()
	code, _, err = runInfer(t, "--model="+encoderModel, "--input="+encoderRows, "--output="+out, "--backend=cpu", "--max_batch_size=12", "--pad=input_ids=7,token_type_ids=1")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	checkEncoderJSONL(t, out, encoderDir+"/rows.ref.jsonl")

	out = t.TempDir()
	code, _, err = runInfer(t, "--model="+encoderModel, "--input="+encoderRows, "--output="+out, "--backend=cpu", "--max_batch_size=12", "--pad=attention_mask=1")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	got := readLines[outputsJSON](t, filepath.Join(out, rowsFile))
	ref := readLines[refLine](t, encoderDir+"/rows.ref.jsonl")
	assert.InDelta(t, *ref[11].PoolerOutput.Values[0], *got[11].Outputs["pooler_output"].Values[0], 1e-5, "the longest row has no padding")
	assert.Greater(t, math.Abs(*ref[0].PoolerOutput.Values[0]-*got[0].Outputs["pooler_output"].Values[0]), 1e-3, "a padded row attends to its padding")
}

// parseArray refuses ragged nesting, naming where.
func TestParseArray(t *testing.T) {
	in := jsonInput{Name: "x", Type: nd.Float32, Dims: []int{-1, 2}, Desc: "x: float32[Nxseqx2]"}
	a, err := parseArray(json.RawMessage(`[[1, 2], [3, 4.5], [5, 6]]`), in)
	require.NoError(t, err)
	assert.Equal(t, []int{3, 2}, a.Shape)
	assert.Equal(t, []float32{1, 2, 3, 4.5, 5, 6}, nd.MustAs[float32](a))
	_, err = parseArray(json.RawMessage(`[[1, 2], [3]]`), in)
	assert.ErrorContains(t, err, "ragged: value[1] is an array of 1 where an array of 2 is expected")
	_, err = parseArray(json.RawMessage(`[[1, 2], 3]`), in)
	assert.ErrorContains(t, err, "ragged: value[1] is the number 3")
	_, err = parseArray(json.RawMessage(`[[1, 2, 3]]`), in)
	assert.ErrorContains(t, err, "takes 2 on axis 1")
	_, err = parseArray(json.RawMessage(`[[1, null]]`), in)
	assert.ErrorContains(t, err, "value[0][1] is null, not a number")
	_, err = parseArray(json.RawMessage(`[300]`), jsonInput{Type: nd.Uint8, Dims: []int{-1}, Desc: "u"})
	assert.ErrorContains(t, err, "out of the range of uint8")
}

// A JSONL file (gzip) and .npy files on an object store.
func TestSequencesOnObjectStore(t *testing.T) {
	model, err := os.ReadFile(encoderModel)
	require.NoError(t, err)
	memfs.Write("memfs://seq/in/encoder.onnx", model)
	rows, err := os.ReadFile(encoderRows)
	require.NoError(t, err)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(rows)
	require.NoError(t, zw.Close())
	memfs.Write("memfs://seq/in/rows.jsonl.gz", z.Bytes())
	var in []string
	for _, name := range []string{"input_ids", "attention_mask", "token_type_ids"} {
		b, err := os.ReadFile(fmt.Sprintf("%s/fixed_%s.npy", encoderDir, name))
		require.NoError(t, err)
		memfs.Write("memfs://seq/in/"+name+".npy", b)
		in = append(in, name+"=memfs://seq/in/"+name+".npy")
	}
	code, text, err := runInfer(t, "--model=memfs://seq/in/encoder.onnx", "--input=memfs://seq/in/rows.jsonl.gz",
		"--output=memfs://seq/out", "--backend=cpu", "--shard_rows=5", "--max_batch_tokens=64")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	assert.Contains(t, text, "rows: 12 in, 12 predicted, 0 failed")
	lines := strings.Split(strings.TrimSpace(string(readMemfs(t, "memfs://seq/out/predictions.jsonl"))), "\n")
	require.Len(t, lines, 12)
	refs := readLines[refLine](t, encoderDir+"/rows.ref.jsonl")
	for i, l := range lines {
		var got outputsJSON
		require.NoError(t, json.Unmarshal([]byte(l), &got))
		require.Equal(t, i, got.Row)
		closeRel(t, fmt.Sprintf("row %d", i), refs[i].LastHiddenState, got.Outputs["last_hidden_state"])
	}
	code, text, err = runInfer(t, "--model=memfs://seq/in/encoder.onnx", "--input="+strings.Join(in, ","),
		"--output=memfs://seq/out2", "--backend=cpu", "--shard_rows=4")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	assert.Contains(t, text, "rows: 6 in, 6 predicted, 0 failed")
	assert.NotEmpty(t, readMemfs(t, "memfs://seq/out2/predictions.npy"))
}
