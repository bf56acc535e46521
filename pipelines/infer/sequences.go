package main

// Models of several inputs, and rows of different lengths.
//
// A model of several inputs is fed one .npy per input (--input
// name=file.npy,name2=file2.npy: every input named once, the same number
// of rows in each), read by range as a single .npy is, or a JSONL file
// (--input rows.jsonl, or .jsonl.gz: gzip), one JSON object a line with a
// field per model input holding a (nested) array of numbers: its rows may
// differ in length. The launcher reads a JSONL file once to count its rows
// (its non-blank lines) and note where each shard of --shard_rows rows
// starts; a worker reads its shards' lines (a seek locally; on gs://, and
// in a gzip file, by skipping). A line that is not an object, a missing
// field, a value that is not a number of the input's type, ragged nesting,
// a rank or fixed size other than the model's, or a line over 64 MiB is
// its row's failure, naming the file and line; fields that are no model
// input are not read.
//
// Rows of sequences are batched by length and padded by
// transforms/inference (LengthBatching, PadRows): that is where a
// pipeline of its own (an embedding pipeline, tokenizer -> model ->
// pooling) finds the same batching and padding.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/pipelines/internal/lines"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

// npyInput is one .npy input: the model input it feeds ("" for the one
// input of a model, named later), its path and header.
type npyInput struct {
	Name   string
	Path   string
	Header npyInfo
}

// splitInputs splits --input: name=file,name2=file2 (every part a name,
// "=" and a path without "="), or one path.
func splitInputs(s string) []npyInput {
	parts := strings.Split(s, ",")
	var out []npyInput
	for _, p := range parts {
		name, path, ok := strings.Cut(p, "=")
		if !ok || name == "" || strings.Contains(name, "/") || strings.Contains(name, ":") || path == "" {
			return []npyInput{{Path: s}}
		}
		out = append(out, npyInput{Name: name, Path: path})
	}
	return out
}

// matchInputs names the one input of a one-input model, and checks that
// named .npy files feed every input of the model once, with the same rows.
func matchInputs(m *onnx.Model, model string, ins []npyInput) error {
	if len(ins) == 1 && ins[0].Name == "" {
		if len(m.Inputs) != 1 {
			return fmt.Errorf("--model %s takes %d inputs (%s): give one .npy per input, --input=%s=a.npy,..., or a JSONL file with a field per input", model, len(m.Inputs), inputNames(m), m.Inputs[0].Name)
		}
		ins[0].Name = m.Inputs[0].Name
		return nil
	}
	given := map[string]string{}
	for _, in := range ins {
		found := false
		for _, v := range m.Inputs {
			found = found || v.Name == in.Name
		}
		if !found {
			return fmt.Errorf("--input %s=%s: the model %s has no input %q (its inputs: %s)", in.Name, in.Path, model, in.Name, inputNames(m))
		}
		if p, dup := given[in.Name]; dup {
			return fmt.Errorf("--input: %s given twice (%s and %s)", in.Name, p, in.Path)
		}
		given[in.Name] = in.Path
	}
	var missing []string
	for _, v := range m.Inputs {
		if _, ok := given[v.Name]; !ok {
			missing = append(missing, v.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--input: no .npy for the model %s's input %s (give one per input: name=file.npy,...)", model, strings.Join(missing, ", "))
	}
	for _, in := range ins[1:] {
		if in.Header.Rows() != ins[0].Header.Rows() {
			return fmt.Errorf("--input: %s holds %d rows but %s holds %d: the files of a model's inputs hold the same rows", ins[0].Path, ins[0].Header.Rows(), in.Path, in.Header.Rows())
		}
	}
	return nil
}

func isJSONL(p string) bool {
	p = strings.ToLower(p)
	return strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".jsonl.gz")
}

// maxLineBytes bounds a JSONL line: a longer one is its row's failure.
const maxLineBytes = 64 << 20

// jsonlInfo is a JSONL input as the launcher found it (lines.Scan): its
// rows (non-blank lines) and, per shard of rows, the byte offset (in the
// decompressed stream) and line number (from 1) of its first row. The
// line-sharded reading is pipelines/internal/lines, shared with
// pipelines/embed.
type jsonlInfo = lines.Info

// readJSONLFn reads the rows of a shard of a JSONL file: it skips to the
// shard's first row and emits an Example per row, or its failure.
type readJSONLFn struct {
	Info    jsonlInfo
	Inputs  []jsonInput
	Batched bool

	rows beam.Counter
}

// jsonInput is a model input as a JSONL field: its name, the type rows
// are given in, and its row dims (-1 free).
type jsonInput struct {
	Name string
	Type nd.DType
	Dims []int
	Desc string
}

func jsonInputs(m *onnx.Model) []jsonInput {
	var out []jsonInput
	for _, v := range m.Inputs {
		t := v.Type
		if t == nd.Float16 || t == nd.BFloat16 {
			t = nd.Float32
		}
		in := jsonInput{Name: v.Name, Type: t, Desc: v.String(), Dims: nil}
		if v.Shape != nil {
			in.Dims = []int{}
			shape := v.Shape
			if len(shape) > 0 { // the batch axis (a model without a dynamic one takes rows one at a time)
				shape = shape[1:]
			}
			for _, d := range shape {
				in.Dims = append(in.Dims, d.Size)
			}
		}
		out = append(out, in)
	}
	return out
}

func (f *readJSONLFn) Setup() { f.rows = beam.NewCounter(stepbeam.Namespace, "records_read") }

func (f *readJSONLFn) ProcessElement(ctx context.Context, sh shard, emit func(inference.Example), fail func(step.Failure)) error {
	path := f.Info.Path
	r, closeFn, err := lines.Open(ctx, path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer closeFn()
	start := f.Info.Offsets[sh.Index]
	if sk, ok := r.(io.Seeker); ok {
		_, err = sk.Seek(start, io.SeekStart)
	} else {
		_, err = io.CopyN(io.Discard, r, start)
	}
	i, line := sh.Lo, f.Info.Lines[sh.Index]-1
	if err == nil {
		br := bufio.NewReaderSize(r, 1<<16)
		for i < sh.Hi {
			text, long, rerr := lines.ReadLine(br, maxLineBytes)
			line++
			if rerr != nil && rerr != io.EOF {
				err = rerr
				break
			}
			if long || len(bytes.TrimSpace(text)) > 0 {
				f.rows.Inc(ctx, 1)
				if e, perr := f.row(text, long); perr != nil {
					fail(rowFailure(stepDecode, i, "", fmt.Errorf("%s line %d: %w", path, line, perr)))
				} else {
					e.Index = i
					emit(e)
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
		err = fmt.Errorf("%s ends before row %d (the file changed since the launcher counted %d rows)", path, i, f.Info.Rows)
	} else {
		err = fmt.Errorf("%s: %w", path, err)
	}
	for ; i < sh.Hi; i++ {
		f.rows.Inc(ctx, 1)
		fail(rowFailure(stepRead, i, "", err))
	}
	return nil
}

// row parses a line into an example of the model's inputs.
func (f *readJSONLFn) row(text []byte, long bool) (inference.Example, error) {
	if long {
		return inference.Example{}, fmt.Errorf("longer than %d bytes", maxLineBytes)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(text, &fields); err != nil || fields == nil {
		what := "not valid JSON"
		if err == nil || json.Valid(text) {
			what = "not a JSON object"
		}
		return inference.Example{}, fmt.Errorf("%s (want an object with a field per model input: %s)", what, f.names())
	}
	var e inference.Example
	for _, in := range f.Inputs {
		raw, ok := fields[in.Name]
		if !ok {
			return e, fmt.Errorf("field %q missing (want a field per model input: %s)", in.Name, f.names())
		}
		a, err := parseArray(raw, in)
		if err != nil {
			return e, fmt.Errorf("field %q: %w", in.Name, err)
		}
		if !f.Batched {
			a.Shape = append([]int{1}, a.Shape...)
		}
		e.Inputs = append(e.Inputs, inference.Tensor{Name: in.Name, Array: a})
	}
	return e, nil
}

func (f *readJSONLFn) names() string {
	s := make([]string, len(f.Inputs))
	for i, in := range f.Inputs {
		s[i] = in.Desc
	}
	return strings.Join(s, "; ")
}

// parseArray parses a (nested) JSON array of numbers as an array of the
// input's type, checking it is not ragged and has the input's rank and
// fixed sizes.
func parseArray(raw json.RawMessage, in jsonInput) (nd.Array, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nd.Array{}, err
	}
	var shape []int
	for x := v; ; {
		l, ok := x.([]any)
		if !ok {
			break
		}
		shape = append(shape, len(l))
		if len(l) == 0 {
			break
		}
		x = l[0]
	}
	if in.Dims != nil {
		if len(shape) != len(in.Dims) {
			return nd.Array{}, fmt.Errorf("rank %d (%s), but the model's input %s takes rank %d per row", len(shape), nd.ShapeString(shape), in.Desc, len(in.Dims))
		}
		for a, n := range in.Dims {
			if n >= 0 && shape[a] != n {
				return nd.Array{}, fmt.Errorf("shape %s, but the model's input %s takes %d on axis %d", nd.ShapeString(shape), in.Desc, n, a)
			}
		}
	}
	n, err := nd.Numel(shape)
	if err != nil {
		return nd.Array{}, err
	}
	vals := make([]float64, 0, n)
	ints := make([]int64, 0, n)
	var walk func(x any, depth int, at string) error
	walk = func(x any, depth int, at string) error {
		if depth < len(shape) {
			l, ok := x.([]any)
			if !ok || len(l) != shape[depth] {
				return fmt.Errorf("ragged: %s is %s where an array of %d is expected (the first row's shape is %s)", at, describe(x), shape[depth], nd.ShapeString(shape))
			}
			for i, y := range l {
				if err := walk(y, depth+1, at+"["+strconv.Itoa(i)+"]"); err != nil {
					return err
				}
			}
			return nil
		}
		num, ok := x.(json.Number)
		if !ok {
			return fmt.Errorf("%s is %s, not a number", at, describe(x))
		}
		if in.Type.IsFloat() {
			f, err := num.Float64()
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return fmt.Errorf("%s: %v is not a number", at, num)
			}
			vals = append(vals, f)
			return nil
		}
		i, err := strconv.ParseInt(num.String(), 10, 64)
		if err != nil {
			f, ferr := num.Float64()
			if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return fmt.Errorf("%s: %v is not an integer, and the model's input %s is %v", at, num, in.Desc, in.Type)
			}
			i = int64(f)
		}
		if in.Type == nd.Bool && i != 0 && i != 1 {
			return fmt.Errorf("%s: %v is not 0 or 1, and the model's input %s is bool", at, num, in.Desc)
		}
		ints = append(ints, i)
		return nil
	}
	if err := walk(v, 0, "value"); err != nil {
		return nd.Array{}, err
	}
	var a nd.Array
	if in.Type.IsFloat() {
		a = nd.Of(vals, shape...)
	} else {
		a = nd.Of(ints, shape...)
	}
	if a.Type != in.Type {
		c, err := nd.Convert(a, in.Type)
		if err != nil {
			return nd.Array{}, err
		}
		if !in.Type.IsFloat() {
			back, _ := nd.Int64s(c)
			for j, x := range back {
				if x != ints[j] {
					return nd.Array{}, fmt.Errorf("element %d: %d is out of the range of %v (the model's input %s)", j, ints[j], in.Type, in.Desc)
				}
			}
		}
		a = c
	}
	return a, nil
}

func describe(x any) string {
	switch x := x.(type) {
	case nil:
		return "null"
	case []any:
		return fmt.Sprintf("an array of %d", len(x))
	case map[string]any:
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "the number " + x.String()
	}
	return fmt.Sprintf("%T", x)
}
