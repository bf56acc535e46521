package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/pipelines/internal/rowparts"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/files"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

// Output files.
const (
	predictionsFile = "predictions.npy"
	rowsFile        = "predictions.jsonl"
	classesFile     = "classes.jsonl"
	summaryFile     = "summary.json"
)

// outputFiles are the files a run writes at the output's root; a run
// removes those of the previous run first.
var outputFiles = []string{predictionsFile, rowsFile, classesFile, summaryFile, jobfiles.FailedFile}

// The steps of failures this pipeline makes itself (RunInference's are "onnx",
// Classify's "classify").
const (
	stepRead   = "read"
	stepDecode = "decode"
	stepOutput = "output"
)

// Config is one run of the pipeline.
type Config struct {
	// Model is the ONNX model file; Handler its handler.
	Model   string
	Handler *inference.ONNXHandler
	// NPYs are the .npy inputs, one per model input (none for images
	// or JSONL); JSONL is the JSONL input, or nil.
	NPYs  []npyInput
	JSONL *jsonlInfo
	// Images are the image files, sorted, and how to preprocess them.
	Images     []string
	Preprocess Preprocess
	// Output receives predictions.npy, predictions.jsonl (images),
	// classes.jsonl (labels), summary.json and failed.jsonl.
	Output string
	// ShardRows is the rows of a read shard.
	ShardRows int
	// Batching groups rows for the model (RunInference); Lengths groups
	// the rows of a JSONL input by length (RunInferenceByLength).
	Batching batch.Params
	Lengths  inference.LengthBatching
	// Labels and TopK: classes.jsonl, when TopK > 0.
	Labels string
	TopK   int
	// Steps are passed to every step (the backend selector); Impl is the
	// implementation they chose for the model.
	Steps []step.Option
	Impl  backend.Kind
	// DataShaped: the model's outputs' shapes depend on its inputs'
	// contents (detections per image), so every output of a row is
	// written, as for sequences.
	DataShaped bool
	// AllowEmpty accepts an input of no rows (--allow_empty).
	AllowEmpty bool
	// RunID, Started and Args name the run in summary.json.
	RunID   string
	Started string
	Args    []string
}

// Rows is the number of rows of the input.
func (c Config) Rows() int {
	switch {
	case len(c.NPYs) > 0:
		return c.NPYs[0].Header.Rows()
	case c.JSONL != nil:
		return c.JSONL.Rows
	}
	return len(c.Images)
}

// sequences reports whether the input is rows of sequences: a JSONL file
// or one .npy per input of a model of several; all their outputs are
// written, in predictions.jsonl where the first one's rows differ in shape.
func (c Config) sequences() bool { return c.JSONL != nil || len(c.NPYs) > 1 }

// allOutputs reports whether every output of a row is written: for
// sequences, and for a model whose outputs' shapes come from the data.
func (c Config) allOutputs() bool { return c.sequences() || c.DataShaped }

// stripFirst says, for each of the model's outputs, whether a row's output
// drops its first axis: a model without a batch axis is fed one row at a
// time, and an output whose first axis is declared of size 1 is that row's
// (an output of undeclared shape too, where its first axis is 1); a first
// axis of any other size (detections) is the row's own.
func stripFirst(m *onnx.Model) []bool {
	out := make([]bool, len(m.Outputs))
	if m.Batched() {
		return out
	}
	for i, o := range m.Outputs {
		out[i] = len(o.Shape) == 0 || o.Shape[0].Size == 1
	}
	return out
}

// shard is a range of rows [Lo, Hi) of the input, read by one DoFn call;
// an image shard carries its files.
type shard struct {
	Index  int
	Lo, Hi int64
	Paths  []string
}

// part is a part file a writer wrote: rows of one shard of an output
// file (pipelines/internal/rowparts).
type part = rowparts.Part

func init() {
	beam.RegisterType(reflect.TypeOf(shard{}))
	register.DoFn4x1[context.Context, shard, func(inference.Example), func(step.Failure), error](&readNPYFn{})
	register.DoFn4x1[context.Context, shard, func(inference.Example), func(step.Failure), error](&readImagesFn{})
	register.DoFn4x1[context.Context, shard, func(inference.Example), func(step.Failure), error](&readJSONLFn{})
	register.Emitter1[inference.Example]()
	register.Emitter1[step.Failure]()
	register.DoFn4x1[context.Context, beam.EventTime, inference.Result, func(beam.EventTime, part), error](&writePredictionsFn{})
	register.DoFn4x1[context.Context, beam.EventTime, inference.Classification, func(beam.EventTime, part), error](&writeClassesFn{})
	register.Emitter2[beam.EventTime, part]()
	register.DoFn5x1[context.Context, int, func(*part) bool, func(*step.Failure) bool, func(*int) bool, error](&reportFn{})
	register.Iter1[part]()
	register.Iter1[step.Failure]()
	register.Iter1[int]()
}

// shards cuts the input into shards of cfg.ShardRows rows.
func shards(cfg Config) []shard {
	n := cfg.Rows()
	var out []shard
	for lo := 0; lo < n; lo += cfg.ShardRows {
		hi := min(n, lo+cfg.ShardRows)
		sh := shard{Index: len(out), Lo: int64(lo), Hi: int64(hi)}
		if len(cfg.Images) > 0 {
			sh.Paths = cfg.Images[lo:hi]
		}
		out = append(out, sh)
	}
	return out
}

// Build adds the pipeline to s.
//
//	shards (row ranges) -> Reshuffle -> read rows | RunInference | write part files   (one fused stage)
//	                                                            '-> Classify -> write part files
//	part files' names and every failure -> report: predictions.npy (rows in input order), classes.jsonl, failed.jsonl
//
// Rows never cross a stage boundary: each worker reads its ranges, runs
// the model on them and writes their outputs to part files, so memory stays
// bounded whatever the input's size; the report joins the parts in order.
func Build(ctx context.Context, s beam.Scope, cfg Config) error {
	if cfg.RunID == "" {
		cfg.RunID = jobfiles.NewRunID()
	}
	h := cfg.Handler
	m := h.Model()
	input := m.Inputs[0].Name
	sh := beam.Reshuffle(s, beam.CreateList(s, shards(cfg)))
	var examples, readFailed beam.PCollection
	switch {
	case len(cfg.NPYs) > 0:
		fn := &readNPYFn{}
		for _, n := range cfg.NPYs {
			rowShape := n.Header.Shape[1:]
			if !m.Batched() {
				rowShape = append([]int{1}, rowShape...)
			}
			fn.Files = append(fn.Files, npyFile{Path: n.Path, Offset: n.Header.Offset, Type: n.Header.Type,
				RowShape: rowShape, RowBytes: n.Header.RowBytes(), Input: n.Name})
		}
		examples, readFailed = beam.ParDo2(s, fn, sh)
	case cfg.JSONL != nil:
		examples, readFailed = beam.ParDo2(s, &readJSONLFn{Info: *cfg.JSONL, Inputs: jsonInputs(m), Batched: m.Batched()}, sh)
	default:
		examples, readFailed = beam.ParDo2(s, &readImagesFn{Pre: cfg.Preprocess, Input: input, Batched: m.Batched()}, sh)
	}
	var results, modelFailed beam.PCollection
	if cfg.JSONL != nil {
		var err error
		if results, modelFailed, err = inference.TryRunInferenceByLength(s, examples, h, cfg.Lengths, cfg.Steps...); err != nil {
			return err
		}
	} else {
		results, modelFailed = inference.RunInference(s, examples, h, cfg.Batching, cfg.Steps...)
	}
	w := partWriter{Output: cfg.Output, RunID: cfg.RunID, ShardRows: cfg.ShardRows, N: cfg.Rows()}
	w.File = predictionsFile
	parts := []beam.PCollection{beam.ParDo(s, &writePredictionsFn{W: w, Strip: stripFirst(m), All: cfg.allOutputs()}, results)}
	failed := []beam.PCollection{readFailed, modelFailed}
	if cfg.TopK > 0 {
		classes, classFailed, err := inference.Classify(ctx, s, results, m.Outputs[0].Name, cfg.TopK, cfg.Labels)
		if err != nil {
			return err
		}
		w.File = classesFile
		parts = append(parts, beam.ParDo(s, &writeClassesFn{W: w}, classes))
		failed = append(failed, classFailed)
	}
	rep := s.Scope("report")
	out := m.Outputs[0]
	fn := &reportFn{Output: cfg.Output, RunID: cfg.RunID, N: cfg.Rows(), ShardRows: cfg.ShardRows, Keys: cfg.Images,
		OutType: out.Type, Classes: cfg.TopK > 0, All: cfg.allOutputs()}
	for _, d := range out.Shape[min(1, len(out.Shape)):] {
		fn.OutShape = append(fn.OutShape, max(d.Size, 0))
	}
	// The report runs once even when nothing came in, so that every run
	// writes its own outputs: a third input of one element makes sure the
	// group exists.
	beam.ParDo0(rep, fn, beam.CoGroupByKey(rep, beam.AddFixedKey(rep, beam.Flatten(rep, parts...)),
		beam.AddFixedKey(rep, beam.Flatten(rep, failed...)), beam.AddFixedKey(rep, beam.Create(rep, 1))))
	return nil
}

// rowFailure is the failure of row index (named key, or "#index") in st.
func rowFailure(st string, index int64, key string, err error) step.Failure {
	return step.NewFailure(st, inference.Example{Key: key, Index: index}, err)
}

// readNPYFn reads the rows of a shard of .npy files, one per model input:
// it skips to the range in each (a seek where the file can seek, else by
// discarding bytes, as on object stores) and emits one Example per row.
type readNPYFn struct {
	Files []npyFile

	rows beam.Counter
}

// npyFile is a .npy file as a reader needs it: where its rows start, their
// type, shape and bytes, and the model input they feed.
type npyFile struct {
	Path     string
	Offset   int64
	Type     nd.DType
	RowShape []int
	RowBytes int
	Input    string
}

func (f *readNPYFn) Setup() { f.rows = beam.NewCounter(stepbeam.Namespace, "records_read") }

func (f *readNPYFn) ProcessElement(ctx context.Context, sh shard, emit func(inference.Example), fail func(step.Failure)) error {
	readers := make([]*bufio.Reader, len(f.Files))
	var err error
	var bad *npyFile
	for k := range f.Files {
		nf := &f.Files[k]
		r, oerr := files.OpenRead(ctx, nf.Path)
		if oerr != nil {
			return fmt.Errorf("%s: %w", nf.Path, oerr)
		}
		defer r.Close()
		start := nf.Offset + sh.Lo*int64(nf.RowBytes)
		if sk, ok := r.(io.Seeker); ok {
			_, err = sk.Seek(start, io.SeekStart)
		} else {
			_, err = io.CopyN(io.Discard, r, start)
		}
		if err != nil {
			bad = nf
			break
		}
		readers[k] = bufio.NewReaderSize(r, 1<<16)
	}
	i := sh.Lo
	if err == nil {
	rows:
		for ; i < sh.Hi; i++ {
			e := inference.Example{Index: i, Inputs: make([]inference.Tensor, len(f.Files))}
			for k, nf := range f.Files {
				row := make([]byte, nf.RowBytes)
				if _, err = io.ReadFull(readers[k], row); err != nil {
					bad = &f.Files[k]
					break rows
				}
				e.Inputs[k] = inference.Tensor{Name: nf.Input, Array: nd.Array{Type: nf.Type, Shape: nf.RowShape, Data: row}}
			}
			f.rows.Inc(ctx, 1)
			emit(e)
		}
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = fmt.Errorf("%s ends before row %d (its header promises more rows: a truncated file)", bad.Path, i)
	} else if err != nil {
		err = fmt.Errorf("%s: %w", bad.Path, err)
	}
	for ; i < sh.Hi; i++ {
		f.rows.Inc(ctx, 1)
		fail(rowFailure(stepRead, i, "", err))
	}
	return nil
}

// readImagesFn reads, decodes and preprocesses the images of a shard; an
// image that cannot be read or decoded is its row's failure.
type readImagesFn struct {
	Pre     Preprocess
	Input   string
	Batched bool

	rows beam.Counter
}

func (f *readImagesFn) Setup() { f.rows = beam.NewCounter(stepbeam.Namespace, "records_read") }

// maxImageBytes bounds an image file.
const maxImageBytes = 256 << 20

func (f *readImagesFn) ProcessElement(ctx context.Context, sh shard, emit func(inference.Example), fail func(step.Failure)) error {
	for j, path := range sh.Paths {
		i := sh.Lo + int64(j)
		f.rows.Inc(ctx, 1)
		data, err := files.ReadAll(ctx, path, maxImageBytes)
		if err != nil {
			fail(rowFailure(stepRead, i, path, danglingLink(path, err)))
			continue
		}
		a, err := f.Pre.Image(data)
		if err != nil {
			fail(rowFailure(stepDecode, i, path, err))
			continue
		}
		if !f.Batched {
			a.Shape = append([]int{1}, a.Shape...)
		}
		emit(inference.Example{Key: path, Index: i, Inputs: []inference.Tensor{{Name: f.Input, Array: a}}})
	}
	return nil
}

// danglingLink says what a local path that does not exist is when it is
// a symbolic link whose target does not exist (a glob lists the link);
// other errors are err.
func danglingLink(path string, err error) error {
	if strings.Contains(path, "://") || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		return fmt.Errorf("%s: a dangling symbolic link: its target %s does not exist", path, target)
	}
	return err
}

// partWriter writes the records of an output file's rows to part files,
// a shard at a time (pipelines/internal/rowparts, shared with
// pipelines/embed); readPart reads a part's records back.
type partWriter = rowparts.Writer

func readPart(ctx context.Context, path string, rec func(i int, data []byte) error) error {
	return rowparts.Read(ctx, path, rec)
}

// writePredictionsFn writes the first output of each result to part files
// of predictions.npy: a record is the row's type, shape and data; with All,
// every output, each record prefixed with the outputs' count and each with
// its name (encodeOutputs).
type writePredictionsFn struct {
	W partWriter
	// Strip: by output, whether a row's output drops its first axis
	// (stripFirst).
	Strip []bool
	All   bool
}

func (f *writePredictionsFn) StartBundle(_ context.Context, _ func(beam.EventTime, part)) error {
	return nil
}

func (f *writePredictionsFn) ProcessElement(ctx context.Context, ts beam.EventTime, r inference.Result, emit func(beam.EventTime, part)) error {
	if len(r.Outputs) == 0 {
		return fmt.Errorf("row %d: the model returned no outputs", r.Index)
	}
	outs := r.Outputs
	if !f.All {
		outs = outs[:1]
	}
	var rec []byte
	if f.All {
		rec = binary.AppendUvarint(rec, uint64(len(outs)))
	}
	for i, t := range outs {
		a := t.Array
		if i < len(f.Strip) && f.Strip[i] && len(a.Shape) > 0 && a.Shape[0] == 1 {
			a.Shape = a.Shape[1:]
		}
		if a.Type == nd.BFloat16 { // NumPy has no bfloat16
			var err error
			if a, err = nd.Convert(a, nd.Float32); err != nil {
				return fmt.Errorf("row %d: %w", r.Index, err)
			}
		}
		if !f.All {
			return f.W.Add(ctx, ts, r.Index, encodeRow(a), emit)
		}
		row := encodeRow(a)
		rec = binary.AppendUvarint(rec, uint64(len(t.Name)))
		rec = append(rec, t.Name...)
		rec = binary.AppendUvarint(rec, uint64(len(row)))
		rec = append(rec, row...)
	}
	return f.W.Add(ctx, ts, r.Index, rec, emit)
}

// namedRow is an output of a row as encodeOutputs holds it.
type namedRow struct {
	Name  string
	Type  nd.DType
	Shape []int
	Data  []byte
}

// decodeOutputs decodes a record of every output of a row.
func decodeOutputs(b []byte) ([]namedRow, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > 1<<16 {
		return nil, fmt.Errorf("bad outputs record")
	}
	b = b[k:]
	out := make([]namedRow, 0, n)
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return nil, fmt.Errorf("bad outputs record")
		}
		name := string(b[k : k+int(l)])
		b = b[k+int(l):]
		l, k = binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return nil, fmt.Errorf("bad outputs record")
		}
		t, shape, data, err := decodeRow(b[k : k+int(l)])
		if err != nil {
			return nil, err
		}
		out = append(out, namedRow{Name: name, Type: t, Shape: shape, Data: data})
		b = b[k+int(l):]
	}
	return out, nil
}

func (f *writePredictionsFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, part)) error {
	return f.W.Finish(ctx, emit)
}

// encodeRow is a row's record: type, rank, dims, data.
func encodeRow(a nd.Array) []byte {
	b := make([]byte, 0, 2+len(a.Shape)*binary.MaxVarintLen64+len(a.Data))
	b = append(b, byte(a.Type), byte(len(a.Shape)))
	for _, d := range a.Shape {
		b = binary.AppendUvarint(b, uint64(d))
	}
	return append(b, a.Data...)
}

func decodeRow(b []byte) (nd.DType, []int, []byte, error) {
	if len(b) < 2 {
		return 0, nil, nil, fmt.Errorf("short row record")
	}
	t, rank := nd.DType(b[0]), int(b[1])
	b = b[2:]
	shape := make([]int, rank)
	for i := range shape {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, nil, nil, fmt.Errorf("bad row record")
		}
		shape[i], b = int(d), b[n:]
	}
	return t, shape, b, nil
}

// classLine is a line of classes.jsonl.
type classLine struct {
	Row int64       `json:"row"`
	Key string      `json:"key,omitempty"`
	Top []classJSON `json:"top"`
}

type classJSON struct {
	Index int     `json:"index"`
	Label string  `json:"label,omitempty"`
	Score float32 `json:"score"`
}

// writeClassesFn writes each classification as a line of classes.jsonl,
// to part files.
type writeClassesFn struct{ W partWriter }

func (f *writeClassesFn) StartBundle(_ context.Context, _ func(beam.EventTime, part)) error {
	return nil
}

func (f *writeClassesFn) ProcessElement(ctx context.Context, ts beam.EventTime, c inference.Classification, emit func(beam.EventTime, part)) error {
	l := classLine{Row: c.Index, Key: c.Key}
	for _, t := range c.Top {
		l.Top = append(l.Top, classJSON{Index: t.Index, Label: t.Label, Score: t.Score})
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return f.W.Add(ctx, ts, c.Index, append(b, '\n'), emit)
}

func (f *writeClassesFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, part)) error {
	return f.W.Finish(ctx, emit)
}

// rowIndex is the row a failure names: "#index", or an image's path.
func rowIndex(fl step.Failure, keys map[string]int) (int, bool) {
	if len(fl.Input) > 1 && fl.Input[0] == '#' {
		i, err := strconv.Atoi(fl.Input[1:])
		return i, err == nil
	}
	i, ok := keys[fl.Input]
	return i, ok
}
