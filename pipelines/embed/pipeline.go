package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/pipelines/internal/lines"
	"github.com/beamgpu/beamgpu/pipelines/internal/rowparts"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
	"github.com/beamgpu/beamgpu/transforms/text/tokenizer"
)

// Output files.
const (
	embeddingsFile = "embeddings.npy"
	rowsFile       = "embeddings.jsonl"
	summaryFile    = "summary.json"
)

// outputFiles are the files a run writes at the output's root; a run
// removes those of the previous run first.
var outputFiles = []string{embeddingsFile, rowsFile, summaryFile, jobfiles.FailedFile}

// The steps of failures this pipeline makes itself (the model's are "onnx").
const (
	stepRead     = "read"
	stepTokenize = "tokenize"
	stepPool     = "pool"
)

// Pooling modes.
const (
	poolMean = "mean"
	poolCLS  = "cls"
)

// Config is one run of the pipeline.
type Config struct {
	// Model is the ONNX encoder; Handler its (padding) handler; Inputs the
	// model inputs fed, in the model's order; TokenOutput the output
	// pooled, of Hidden values per token (0: not fixed).
	Model       string
	Handler     *inference.ONNXHandler
	Inputs      []string
	TokenOutput string
	Hidden      int
	// Tokenizer is tokenizer.json's path, TokenizerConfig that of the
	// tokenizer_config.json beside it ("" when there is none): the
	// workers load them.
	Tokenizer       string
	TokenizerConfig string
	// MaxLength truncates texts (tokens, special ones included; 0: none).
	// ChunkTokens > 0 cuts each text into chunks of that many tokens
	// instead, each ChunkOverlap tokens into the one before.
	MaxLength                 int
	ChunkTokens, ChunkOverlap int
	// Input is --input; Files its files, sorted, and Scans their rows.
	Input string
	Files []string
	Scans []lines.Info
	// TextField and IDField are the JSONL fields of the text and its id.
	TextField, IDField string
	// Pooling is mean or cls; Normalize L2-normalises the embeddings.
	Pooling   string
	Normalize bool
	// Output receives embeddings.npy, embeddings.jsonl, summary.json and
	// failed.jsonl.
	Output string
	// ShardRows is the texts of a read shard; MaxLineBytes the longest line.
	ShardRows    int
	MaxLineBytes int
	// Lengths groups the texts by length for the model.
	Lengths inference.LengthBatching
	// Steps are passed to every step (the backend selector); Impl is the
	// implementation they chose for the model.
	Steps []step.Option
	Impl  backend.Kind
	// AllowEmpty accepts an input of no texts; Strict fails a run with
	// failures.
	AllowEmpty, Strict bool
	// RunID, Started and Args name the run in summary.json.
	RunID   string
	Started string
	Args    []string
}

// Rows is the number of texts of the input.
func (c Config) Rows() int {
	n := 0
	for _, s := range c.Scans {
		n += s.Rows
	}
	return n
}

// output is the run's output directory, with what the run reads
// (jobfiles.Output.Check).
func (c Config) output() jobfiles.Output {
	o := jobfiles.Output{Program: "embed", Dir: c.Output, Run: c.RunID, Files: outputFiles,
		Inputs: []jobfiles.Input{{Flag: "model", Path: c.Model}, {Flag: "tokenizer", Path: c.Tokenizer}}}
	if strings.ContainsAny(c.Input, "*?[") {
		o.Inputs = append(o.Inputs, jobfiles.Input{Flag: "input", Path: c.Input, Glob: true, Files: c.Files})
	} else {
		o.Inputs = append(o.Inputs, jobfiles.Input{Flag: "input", Path: c.Input})
	}
	return o
}

// shard is a range of texts [Lo, Hi) (rows of the whole input) of one
// file, Index its shard in the file (lines.Info.Offsets).
type shard struct {
	File   int
	Index  int
	Lo, Hi int64
}

// shards cuts the input into shards of at most cfg.ShardRows texts, each
// in one file.
func shards(cfg Config) []shard {
	var out []shard
	base := 0
	for f, s := range cfg.Scans {
		for k := range s.Offsets {
			lo := base + k*cfg.ShardRows
			out = append(out, shard{File: f, Index: k, Lo: int64(lo), Hi: int64(min(base+s.Rows, lo+cfg.ShardRows))})
		}
		base += s.Rows
	}
	return out
}

func init() {
	beam.RegisterType(reflect.TypeOf(shard{}))
	register.DoFn4x1[context.Context, shard, func(inference.Example), func(step.Failure), error](&tokenizeFn{})
	register.Emitter1[inference.Example]()
	register.Emitter1[step.Failure]()
	register.DoFn5x1[context.Context, beam.EventTime, inference.Result, func(beam.EventTime, rowparts.Part), func(step.Failure), error](&poolFn{})
	register.Emitter2[beam.EventTime, rowparts.Part]()
	register.DoFn5x1[context.Context, int, func(*rowparts.Part) bool, func(*step.Failure) bool, func(*int) bool, error](&reportFn{})
	register.Iter1[rowparts.Part]()
	register.Iter1[step.Failure]()
	register.Iter1[int]()
}

// Build adds the pipeline to s.
//
//	shards (row ranges) -> Reshuffle -> read, tokenize | RunInferenceByLength | pool, write part files   (one fused stage)
//	part files' names and every failure -> report: embeddings.npy, embeddings.jsonl (rows in input order), failed.jsonl
//
// Texts never cross a stage boundary: each worker reads its ranges,
// tokenizes and embeds them and writes their vectors to part files, so
// memory stays bounded whatever the input's size; the report joins the
// parts in order.
func Build(ctx context.Context, s beam.Scope, cfg Config) error {
	if cfg.RunID == "" {
		cfg.RunID = jobfiles.NewRunID()
	}
	m := cfg.Handler.Model()
	var types []nd.DType
	for _, name := range cfg.Inputs {
		for _, v := range m.Inputs {
			if v.Name == name {
				types = append(types, v.Type)
			}
		}
	}
	sh := beam.Reshuffle(s, beam.CreateList(s, shards(cfg)))
	examples, readFailed := beam.ParDo2(s, &tokenizeFn{Files: cfg.Scans, TextField: cfg.TextField, IDField: cfg.IDField,
		Tokenizer: cfg.Tokenizer, TokenizerConfig: cfg.TokenizerConfig,
		MaxLength: cfg.MaxLength, ChunkTokens: cfg.ChunkTokens, ChunkOverlap: cfg.ChunkOverlap, MaxLineBytes: cfg.MaxLineBytes, Inputs: cfg.Inputs, Types: types}, sh)
	results, modelFailed, err := inference.TryRunInferenceByLength(s, examples, cfg.Handler, cfg.Lengths, cfg.Steps...)
	if err != nil {
		return err
	}
	w := rowparts.Writer{File: embeddingsFile, Output: cfg.Output, RunID: cfg.RunID, ShardRows: cfg.ShardRows, N: cfg.Rows()}
	parts, poolFailed := beam.ParDo2(s, &poolFn{W: w, Output: cfg.TokenOutput, Pooling: cfg.Pooling, Normalize: cfg.Normalize}, results)
	rep := s.Scope("report")
	fn := &reportFn{Output: cfg.Output, RunID: cfg.RunID, N: cfg.Rows(), ShardRows: cfg.ShardRows, Hidden: cfg.Hidden, Chunked: cfg.ChunkTokens > 0}
	// The report runs once even when nothing came in, so that every run
	// writes its own outputs: a third input of one element makes sure the
	// group exists.
	beam.ParDo0(rep, fn, beam.CoGroupByKey(rep, beam.AddFixedKey(rep, parts),
		beam.AddFixedKey(rep, beam.Flatten(rep, readFailed, modelFailed, poolFailed)), beam.AddFixedKey(rep, beam.Create(rep, 1))))
	return nil
}

// rowFailure is the failure of text index in st; source is where the
// text is, "file:line" (the failure's input is then "file:line[index]").
func rowFailure(st string, index int64, source string, err error) step.Failure {
	return step.NewFailure(st, inference.Example{Source: source, Index: index}, err)
}

// lineSource names a line of a file, as failures name it.
func lineSource(path string, line int) string { return path + ":" + strconv.Itoa(line) }

// The arrays an example carries to its pooling.
const (
	carryID   = "id"
	carryMask = "mask"
	// carryChunk is [truncated (0, 1), chunk, chunks].
	carryChunk = "chunk"
)

// tokenizeFn reads the texts of a shard, tokenizes them and emits an
// Example per text, or its failure.
type tokenizeFn struct {
	Files              []lines.Info
	TextField, IDField string
	Tokenizer          string
	TokenizerConfig    string
	MaxLength          int
	ChunkTokens        int
	ChunkOverlap       int
	MaxLineBytes       int
	Inputs             []string
	Types              []nd.DType

	enc  *encoder
	rows beam.Counter
}

func (f *tokenizeFn) Setup(ctx context.Context) error {
	f.rows = beam.NewCounter(stepbeam.Namespace, "texts_read")
	t, err := readTokenizer(ctx, f.Tokenizer, f.TokenizerConfig)
	if err != nil {
		return err
	}
	f.enc, err = newEncoder(t, f.MaxLength, f.ChunkTokens, f.ChunkOverlap)
	return err
}

func isJSONL(p string) bool {
	p = strings.ToLower(strings.TrimSuffix(strings.ToLower(p), ".gz"))
	return strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".ndjson")
}

func (f *tokenizeFn) ProcessElement(ctx context.Context, sh shard, emit func(inference.Example), fail func(step.Failure)) error {
	info := f.Files[sh.File]
	path := info.Path
	r, closeFn, err := lines.Open(ctx, path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer closeFn()
	jsonl := isJSONL(path)
	err = lines.Skip(r, info.Offsets[sh.Index])
	i, line := sh.Lo, info.Lines[sh.Index]-1
	if err == nil {
		br := bufio.NewReaderSize(r, 1<<16)
		for i < sh.Hi {
			text, long, rerr := lines.ReadLine(br, f.MaxLineBytes)
			line++
			if rerr != nil && rerr != io.EOF {
				err = rerr
				break
			}
			if long || !lines.Blank(text) {
				f.rows.Inc(ctx, 1)
				if es, st, perr := f.row(text, long, jsonl, i, lineSource(path, line)); perr != nil {
					fail(rowFailure(st, i, lineSource(path, line), fmt.Errorf("%s line %d: %w", path, line, perr)))
				} else {
					for _, e := range es {
						emit(e)
					}
				}
				i++
			}
			if rerr == io.EOF {
				err = rerr
				break
			}
		}
	}
	if i == sh.Hi {
		return nil
	}
	if err == nil || err == io.EOF {
		err = fmt.Errorf("%s ends before text %d (the file changed since the launcher counted its texts)", path, i)
	} else {
		err = fmt.Errorf("%s: %w", path, err)
	}
	for ; i < sh.Hi; i++ {
		f.rows.Inc(ctx, 1)
		fail(rowFailure(stepRead, i, path, err))
	}
	return nil
}

// row parses and tokenizes a line into the examples of text index (one,
// or one per chunk), or returns the step that failed and why.
func (f *tokenizeFn) row(line []byte, long, jsonl bool, index int64, source string) ([]inference.Example, string, error) {
	var e []inference.Example
	if long {
		return e, stepRead, fmt.Errorf("longer than %d bytes (--max_line_bytes)", f.MaxLineBytes)
	}
	if !utf8.Valid(line) {
		return e, stepRead, fmt.Errorf("not valid UTF-8 (at byte %d)", invalidAt(line))
	}
	text := string(line)
	id := strconv.AppendInt(nil, index, 10)
	if jsonl {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(line, &fields); err != nil || fields == nil {
			what := "not valid JSON"
			if err == nil || json.Valid(line) {
				what = "not a JSON object"
			}
			return e, stepRead, fmt.Errorf("%s (want an object with the text in %q)", what, f.TextField)
		}
		raw, ok := fields[f.TextField]
		if !ok {
			return e, stepRead, fmt.Errorf("field %q missing (the text; --text_field names another)", f.TextField)
		}
		if err := json.Unmarshal(raw, &text); err != nil {
			return e, stepRead, fmt.Errorf("field %q is not a string", f.TextField)
		}
		if v, ok := fields[f.IDField]; ok && f.IDField != "" {
			id = v
		}
	}
	encs, truncated, err := f.enc.encode(text)
	if err != nil {
		return e, stepTokenize, err
	}
	if encs[0].Len() == 0 {
		return e, stepTokenize, fmt.Errorf("no tokens (an empty text, and the tokenizer adds no special tokens): the model cannot take it")
	}
	for c, enc := range encs {
		x, err := f.example(enc, index, source, id, truncated, c, len(encs))
		if err != nil {
			return nil, stepTokenize, err
		}
		e = append(e, x)
	}
	return e, "", nil
}

// example is the example of chunk c of n of text index.
func (f *tokenizeFn) example(enc *tokenizer.Encoding, index int64, source string, id []byte, truncated bool, c, n int) (inference.Example, error) {
	e := inference.Example{Index: index, Source: source}
	l := enc.Len()
	for k, name := range f.Inputs {
		var src []int
		switch name {
		case inputIDs:
			src = enc.IDs
		case attentionMask:
			src = enc.AttentionMask
		case tokenTypeIDs:
			src = enc.TypeIDs
		}
		a, err := intArray(src, l, f.Types[k])
		if err != nil {
			return e, fmt.Errorf("input %s: %w", name, err)
		}
		e.Inputs = append(e.Inputs, inference.Tensor{Name: name, Array: a})
	}
	mask, _ := intArray(enc.AttentionMask, l, nd.Int64)
	var trunc int64
	if truncated {
		trunc = 1
	}
	e.Carry = []inference.Tensor{{Name: carryID, Array: nd.Of(id)}, {Name: carryMask, Array: mask},
		{Name: carryChunk, Array: nd.Of([]int64{trunc, int64(c), int64(n)})}}
	return e, nil
}

// intArray is src (n values; zeros where src is short) as an array of t.
func intArray(src []int, n int, t nd.DType) (nd.Array, error) {
	v := make([]int64, n)
	for i := range min(n, len(src)) {
		v[i] = int64(src[i])
	}
	a := nd.Of(v)
	if t == nd.Int64 {
		return a, nil
	}
	return nd.Convert(a, t)
}

// invalidAt is the offset of the first byte of b that is not valid UTF-8.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// poolFn pools each result's token output over its attention mask (the
// mean, or the first token), L2-normalises it, and writes it with the
// text's id, tokens, truncation and chunk to part files (encodeRecord). The
// chunks of a text are written together, in one record, when the bundle
// holds them all; what a bundle holds of a text when it ends is written as
// it is, and the report joins a text's records.
type poolFn struct {
	W         rowparts.Writer
	Output    string
	Pooling   string
	Normalize bool

	pending map[int64]map[int][]byte
}

func (f *poolFn) StartBundle(_ context.Context, _ func(beam.EventTime, rowparts.Part), _ func(step.Failure)) error {
	f.pending = nil
	return nil
}

func (f *poolFn) ProcessElement(ctx context.Context, ts beam.EventTime, r inference.Result, emit func(beam.EventTime, rowparts.Part), fail func(step.Failure)) error {
	vec, err := f.pool(r)
	if err != nil {
		fail(rowFailure(stepPool, r.Index, r.Source, err))
		return nil
	}
	id, _ := find(r.Carry, carryID)
	mask, _ := find(r.Carry, carryMask)
	ch, _ := find(r.Carry, carryChunk)
	c, _ := nd.Int64s(ch)
	rec := encodeRecord(id.Data, len(mask.Data)/8, c[0] != 0, int(c[1]), int(c[2]), vec)
	if c[2] == 1 {
		return f.W.Add(ctx, ts, r.Index, joinRecords([][]byte{rec}), emit)
	}
	if f.pending == nil {
		f.pending = map[int64]map[int][]byte{}
	}
	p := f.pending[r.Index]
	if p == nil {
		p = map[int][]byte{}
		f.pending[r.Index] = p
	}
	p[int(c[1])] = rec
	if len(p) < int(c[2]) {
		return nil
	}
	delete(f.pending, r.Index)
	return f.W.Add(ctx, ts, r.Index, joinRecords(sortedRecords(p)), emit)
}

func (f *poolFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, rowparts.Part), _ func(step.Failure)) error {
	idx := make([]int64, 0, len(f.pending))
	for i := range f.pending {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		if err := f.W.Add(ctx, beam.EventTime(0), i, joinRecords(sortedRecords(f.pending[i])), emit); err != nil {
			return err
		}
	}
	f.pending = nil
	return f.W.Finish(ctx, emit)
}

func sortedRecords(m map[int][]byte) [][]byte {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	out := make([][]byte, len(ks))
	for j, k := range ks {
		out[j] = m[k]
	}
	return out
}

func find(ts []inference.Tensor, name string) (nd.Array, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t.Array, true
		}
	}
	return nd.Array{}, false
}

// pool is the embedding of a result.
func (f *poolFn) pool(r inference.Result) ([]float32, error) {
	out, ok := r.Output(f.Output)
	if !ok {
		return nil, fmt.Errorf("the model returned no output %s", f.Output)
	}
	maskArr, _ := find(r.Carry, carryMask)
	mask, err := nd.Int64s(maskArr)
	if err != nil {
		return nil, err
	}
	if len(out.Shape) != 2 || out.Shape[0] != len(mask) {
		return nil, fmt.Errorf("the token output %s is %s for %d tokens: want [%d, hidden]", f.Output, nd.ShapeString(out.Shape), len(mask), len(mask))
	}
	if !out.Type.IsFloat() {
		return nil, fmt.Errorf("the token output %s is %v, not floats", f.Output, out.Type)
	}
	return poolTokens(nd.Float64s(out), mask, out.Shape[1], f.Pooling, f.Normalize)
}

// poolTokens pools vals ([len(mask), hidden]) over the tokens mask keeps:
// their mean (in float64), or the first token's; then L2-normalises (a
// zero vector stays zero, as sentence-transformers' Normalize). A result
// holding NaN or an infinity is an error.
func poolTokens(vals []float64, mask []int64, hidden int, mode string, normalize bool) ([]float32, error) {
	acc := make([]float64, hidden)
	if mode == poolCLS {
		for j := range acc {
			acc[j] = vals[j]
		}
	} else {
		n := 0
		for i, m := range mask {
			if m == 0 {
				continue
			}
			n++
			for j, v := range vals[i*hidden : (i+1)*hidden] {
				acc[j] += v
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("the attention mask keeps no token")
		}
		for j := range acc {
			acc[j] /= float64(n)
		}
	}
	norm := 1.0
	if normalize {
		s := 0.0
		for _, v := range acc {
			s += v * v
		}
		if s > 0 {
			norm = math.Sqrt(s)
		}
	}
	vec := make([]float32, hidden)
	for j, v := range acc {
		x := v / norm
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("the embedding's element %d is %v (the model's token output holds NaN or an infinity)", j, x)
		}
		vec[j] = float32(x)
	}
	return vec, nil
}

// encodeRecord is a chunk's record: the text's id (JSON), the chunk's
// tokens, whether the text was truncated, the chunk's index and the
// text's chunks, and the embedding (little-endian float32).
func encodeRecord(id []byte, tokens int, truncated bool, chunk, chunks int, vec []float32) []byte {
	b := make([]byte, 0, len(id)+4*binary.MaxVarintLen64+1+4*len(vec))
	b = binary.AppendUvarint(b, uint64(len(id)))
	b = append(b, id...)
	b = binary.AppendUvarint(b, uint64(tokens))
	t := byte(0)
	if truncated {
		t = 1
	}
	b = append(b, t)
	b = binary.AppendUvarint(b, uint64(chunk))
	b = binary.AppendUvarint(b, uint64(chunks))
	for _, v := range vec {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// joinRecords is a text's part record: its chunks' records.
func joinRecords(recs [][]byte) []byte {
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for _, r := range recs {
		b = binary.AppendUvarint(b, uint64(len(r)))
		b = append(b, r...)
	}
	return b
}

// record is a decoded chunk record.
type record struct {
	ID            []byte
	Tokens        int
	Truncated     bool
	Chunk, Chunks int
	Vec           []byte // little-endian float32
}

var errRecord = fmt.Errorf("bad embedding record")

// decodeRecords decodes a text's part record.
func decodeRecords(b []byte) ([]record, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errRecord
	}
	b = b[k:]
	out := make([]record, 0, n)
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return nil, errRecord
		}
		r, err := decodeRecord(b[k : k+int(l)])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		b = b[k+int(l):]
	}
	return out, nil
}

func decodeRecord(b []byte) (record, error) {
	var r record
	l, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < l {
		return r, errRecord
	}
	r.ID, b = b[k:k+int(l)], b[k+int(l):]
	t, k := binary.Uvarint(b)
	if k <= 0 || len(b) < k+1 {
		return r, errRecord
	}
	r.Tokens, r.Truncated, b = int(t), b[k] != 0, b[k+1:]
	c, k := binary.Uvarint(b)
	if k <= 0 {
		return r, errRecord
	}
	b = b[k:]
	n, k := binary.Uvarint(b)
	if k <= 0 || (len(b)-k)%4 != 0 || c >= n {
		return r, errRecord
	}
	r.Chunk, r.Chunks, r.Vec = int(c), int(n), b[k:]
	return r, nil
}
