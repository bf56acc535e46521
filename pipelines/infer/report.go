package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/pipelines/job"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/nd/npy"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

// reportFn joins the part files in row order into predictions.npy (and
// classes.jsonl), one shard at a time, and writes predictions.jsonl (image
// inputs) and failed.jsonl. A row that failed is a row of NaN in
// predictions.npy (zeros for an output that is not float), false in
// predictions.jsonl, absent from classes.jsonl, and listed in failed.jsonl.
type reportFn struct {
	Output    string
	RunID     string
	N         int
	ShardRows int
	// Keys are the images' paths, in row order (none for a .npy input).
	Keys []string
	// OutType and OutShape are the first output's declared type and row
	// shape (unknown sizes 0): predictions.npy's when no row was predicted.
	OutType  nd.DType
	OutShape []int
	Classes  bool
	// All: a record holds every output of its row (writePredictionsFn's
	// All), written to predictions.npy (the first) where the first's rows
	// share a shape, else to predictions.jsonl (every output).
	All bool
	// Detections: the model's outputs' shapes come from the data; every
	// output of each row goes to predictions.jsonl, whatever the shapes.
	Detections bool

	read, predicted, failedRows, failures, classified beam.Counter
}

func (f *reportFn) Setup() {
	f.read = beam.NewCounter(stepbeam.Namespace, "rows_in")
	f.predicted = beam.NewCounter(stepbeam.Namespace, "rows_predicted")
	f.failedRows = beam.NewCounter(stepbeam.Namespace, "rows_failed")
	f.failures = beam.NewCounter(stepbeam.Namespace, "failures")
	f.classified = beam.NewCounter(stepbeam.Namespace, "rows_classified")
}

func (f *reportFn) ProcessElement(ctx context.Context, _ int, partIter func(*part) bool, failIter func(*step.Failure) bool, _ func(*int) bool) error {
	byFile := map[string]map[int][]part{}
	var p part
	for partIter(&p) {
		if byFile[p.File] == nil {
			byFile[p.File] = map[int][]part{}
		}
		byFile[p.File][p.Shard] = append(byFile[p.File][p.Shard], p)
		p = part{}
	}
	keys := map[string]int{}
	for i, k := range f.Keys {
		keys[k] = i
	}
	var failures []step.Failure
	failed := map[int]bool{}
	var fl step.Failure
	for failIter(&fl) {
		failures = append(failures, fl)
		if fl.Step == "classify" {
			continue // the row was predicted; its classes are missing
		}
		if i, ok := rowIndex(fl, keys); ok && i >= 0 && i < f.N {
			failed[i] = true
		}
		fl = step.Failure{}
	}
	predicted := make([]bool, f.N)
	write, jsonl := f.writePredictions, false
	if f.All {
		same, err := f.sameShapes(ctx, byFile[predictionsFile])
		if err != nil {
			return err
		}
		if !same || f.Detections {
			write, jsonl = f.writeOutputsJSONL, true
		}
	}
	if err := write(ctx, byFile[predictionsFile], predicted, failed, &failures); err != nil {
		return err
	}
	nPred := 0
	for i, ok := range predicted {
		switch {
		case ok:
			nPred++
			delete(failed, i)
		case !failed[i]:
			return fmt.Errorf("row %d: neither predicted nor failed (parts of predictions.npy are missing)", i)
		}
	}
	if len(f.Keys) > 0 && !jsonl { // predictions.jsonl of outputs names the rows' images itself
		if err := f.writeRows(ctx, predicted); err != nil {
			return err
		}
	}
	if f.Classes {
		n, err := f.writeClasses(ctx, byFile[classesFile])
		if err != nil {
			return err
		}
		f.classified.Inc(ctx, int64(n))
	}
	if err := jobfiles.WriteFailures(ctx, f.RunID, f.Output, failures); err != nil {
		return err
	}
	for _, shards := range byFile {
		for _, ps := range shards {
			for _, p := range ps {
				jobfiles.Remove(ctx, p.Path)
			}
		}
	}
	f.read.Inc(ctx, int64(f.N))
	f.predicted.Inc(ctx, int64(nPred))
	f.failedRows.Inc(ctx, int64(len(failed)))
	f.failures.Inc(ctx, int64(len(failures)))
	return nil
}

// rowType finds the type and row shape of predictions.npy: the first
// predicted row's, or the declared ones.
func (f *reportFn) rowType(ctx context.Context, shards map[int][]part) (nd.DType, []int, error) {
	idx := make([]int, 0, len(shards))
	for s := range shards {
		idx = append(idx, s)
	}
	sort.Ints(idx)
	for _, s := range idx {
		for _, p := range shards[s] {
			var t nd.DType
			var shape []int
			found := false
			err := readPart(ctx, p.Path, func(_ int, rec []byte) error {
				var err error
				t, shape, _, err = f.decodeFirst(rec)
				found = true
				return errStop{err}
			})
			if e, ok := err.(errStop); ok {
				err = e.err
			}
			if err != nil {
				return 0, nil, err
			}
			if found {
				return t, shape, nil
			}
		}
	}
	return f.OutType, f.OutShape, nil
}

type errStop struct{ err error }

func (e errStop) Error() string { return "stop" }

// fillRow is a failed row's bytes: NaN for floats, zeros otherwise.
func fillRow(t nd.DType, n int) []byte {
	b := make([]byte, n*t.Size())
	for i := 0; i < n; i++ {
		switch t {
		case nd.Float32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(math.NaN())))
		case nd.Float64:
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(math.NaN()))
		case nd.Float16:
			binary.LittleEndian.PutUint16(b[2*i:], 0x7e00)
		case nd.BFloat16:
			binary.LittleEndian.PutUint16(b[2*i:], 0x7fc0)
		}
	}
	return b
}

func (f *reportFn) writePredictions(ctx context.Context, shards map[int][]part, predicted []bool, failed map[int]bool, failures *[]step.Failure) error {
	t, rowShape, err := f.rowType(ctx, shards)
	if err != nil {
		return err
	}
	if t == nd.BFloat16 || !t.Supported() {
		t = nd.Float32 // NumPy has no bfloat16: the writer converts it
	}
	elems, err := nd.Numel(rowShape)
	if err != nil {
		return err
	}
	rowBytes := elems * t.Size()
	hdr, err := npy.EncodeHeader(t, append([]int{f.N}, rowShape...))
	if err != nil {
		return err
	}
	fill := fillRow(t, elems)
	return jobfiles.WriteFile(ctx, f.RunID, jobfiles.Join(f.Output, predictionsFile), func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		bw.Write(hdr)
		for s := 0; s*f.ShardRows < f.N; s++ {
			lo, hi := s*f.ShardRows, min(f.N, (s+1)*f.ShardRows)
			buf := make([]byte, (hi-lo)*rowBytes)
			for i := lo; i < hi; i++ {
				copy(buf[(i-lo)*rowBytes:], fill)
			}
			for _, p := range shards[s] {
				err := readPart(ctx, p.Path, func(i int, rec []byte) error {
					rt, rs, data, err := f.decodeFirst(rec)
					if err != nil {
						return fmt.Errorf("%s: %w", p.Path, err)
					}
					row := lo + i
					if i >= hi-lo {
						return fmt.Errorf("%s: row %d outside its shard", p.Path, row)
					}
					if predicted[row] {
						return nil // a retried bundle's copy
					}
					if rt != t || !nd.SameShape(rs, rowShape) || len(data) != rowBytes {
						*failures = append(*failures, step.Failure{Input: f.rowName(row), Step: stepOutput, Items: 1,
							Reason: fmt.Sprintf("output row of %v %s, where the first row's is %v %s: rows of predictions.npy must share a type and shape", rt, nd.ShapeString(rs), t, nd.ShapeString(rowShape))})
						failed[row] = true
						return nil
					}
					copy(buf[i*rowBytes:], data)
					predicted[row] = true
					return nil
				})
				if err != nil {
					return err
				}
			}
			if _, err := bw.Write(buf); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
}

// decodeFirst decodes a record's first output.
func (f *reportFn) decodeFirst(rec []byte) (nd.DType, []int, []byte, error) {
	if !f.All {
		return decodeRow(rec)
	}
	outs, err := decodeOutputs(rec)
	if err != nil {
		return 0, nil, nil, err
	}
	if len(outs) == 0 {
		return 0, nil, nil, fmt.Errorf("a record of no outputs")
	}
	return outs[0].Type, outs[0].Shape, outs[0].Data, nil
}

// sameShapes reports whether the first outputs of the predicted rows share
// a type and shape (reading the parts once more).
func (f *reportFn) sameShapes(ctx context.Context, shards map[int][]part) (bool, error) {
	var t nd.DType
	var shape []int
	first, same := true, true
	for _, ps := range shards {
		for _, p := range ps {
			err := readPart(ctx, p.Path, func(_ int, rec []byte) error {
				rt, rs, _, err := f.decodeFirst(rec)
				if err != nil {
					return fmt.Errorf("%s: %w", p.Path, err)
				}
				if first {
					t, shape, first = rt, rs, false
				} else if rt != t || !nd.SameShape(rs, shape) {
					same = false
					return errStop{}
				}
				return nil
			})
			if _, ok := err.(errStop); ok {
				return false, nil
			}
			if err != nil {
				return false, err
			}
		}
	}
	return same, nil
}

// writeOutputsJSONL writes predictions.jsonl of every output of each row,
// a shard at a time, in row order: {"row", "predicted", "outputs": {name:
// {"shape", "values"}}}; a failed row {"row", "predicted": false}.
func (f *reportFn) writeOutputsJSONL(ctx context.Context, shards map[int][]part, predicted []bool, _ map[int]bool, _ *[]step.Failure) error {
	return jobfiles.WriteFile(ctx, f.RunID, jobfiles.Join(f.Output, rowsFile), func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		for s := 0; s*f.ShardRows < f.N; s++ {
			lo, hi := s*f.ShardRows, min(f.N, (s+1)*f.ShardRows)
			lines := make([][]byte, hi-lo)
			for _, p := range shards[s] {
				err := readPart(ctx, p.Path, func(i int, rec []byte) error {
					if i >= hi-lo {
						return fmt.Errorf("%s: row %d outside its shard", p.Path, lo+i)
					}
					if lines[i] != nil {
						return nil // a retried bundle's copy
					}
					outs, err := decodeOutputs(rec)
					if err != nil {
						return fmt.Errorf("%s: %w", p.Path, err)
					}
					lines[i] = outputsLine(lo+i, f.key(lo+i), outs)
					predicted[lo+i] = true
					return nil
				})
				if err != nil {
					return err
				}
			}
			for i, l := range lines {
				if l == nil {
					l = append(lineStart(lo+i, f.key(lo+i)), "\"predicted\":false}\n"...)
				}
				if _, err := bw.Write(l); err != nil {
					return err
				}
			}
		}
		return bw.Flush()
	})
}

// key is row i's image path, "" where the input is no images.
func (f *reportFn) key(i int) string {
	if i < len(f.Keys) {
		return f.Keys[i]
	}
	return ""
}

// lineStart opens a line of predictions.jsonl: the row, and its key where
// it has one.
func lineStart(row int, key string) []byte {
	b := fmt.Appendf(nil, `{"row":%d,`, row)
	if key != "" {
		k, _ := json.Marshal(key)
		b = fmt.Appendf(b, `"key":%s,`, k)
	}
	return b
}

// outputsLine is a line of predictions.jsonl of every output: values as
// JSON numbers (a float32's shortest form; NaN and infinities null).
func outputsLine(row int, key string, outs []namedRow) []byte {
	b := append(lineStart(row, key), `"predicted":true,"outputs":{`...)
	for k, o := range outs {
		if k > 0 {
			b = append(b, ',')
		}
		name, _ := json.Marshal(o.Name)
		b = append(b, name...)
		b = append(b, `:{"shape":[`...)
		for d, n := range o.Shape {
			if d > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(n), 10)
		}
		b = append(b, `],"values":[`...)
		a := nd.Array{Type: o.Type, Shape: o.Shape, Data: o.Data}
		bits := 64
		if o.Type.Size() <= 4 {
			bits = 32
		}
		if o.Type.IsFloat() {
			for j, v := range nd.Float64s(a) {
				if j > 0 {
					b = append(b, ',')
				}
				if math.IsNaN(v) || math.IsInf(v, 0) {
					b = append(b, "null"...)
				} else {
					b = strconv.AppendFloat(b, v, 'g', -1, bits)
				}
			}
		} else {
			ints, _ := nd.Int64s(a)
			for j, v := range ints {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, v, 10)
			}
		}
		b = append(b, "]}"...)
	}
	return append(b, "}}\n"...)
}

// rowName names a row in failed.jsonl as RunInference does: its key, or "#index".
func (f *reportFn) rowName(i int) string {
	if i < len(f.Keys) {
		return f.Keys[i]
	}
	return fmt.Sprintf("#%d", i)
}

// rowLine is a line of predictions.jsonl.
type rowLine struct {
	Row       int    `json:"row"`
	Key       string `json:"key"`
	Predicted bool   `json:"predicted"`
}

// writeRows writes predictions.jsonl: row -> image path, and whether the
// row was predicted (false: a NaN row, listed in failed.jsonl).
func (f *reportFn) writeRows(ctx context.Context, predicted []bool) error {
	return jobfiles.WriteFile(ctx, f.RunID, jobfiles.Join(f.Output, rowsFile), func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		enc := json.NewEncoder(bw)
		for i, k := range f.Keys {
			if err := enc.Encode(rowLine{Row: i, Key: k, Predicted: predicted[i]}); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
}

// writeClasses writes classes.jsonl, its lines in row order, a shard at a time.
func (f *reportFn) writeClasses(ctx context.Context, shards map[int][]part) (int, error) {
	n := 0
	err := jobfiles.WriteFile(ctx, f.RunID, jobfiles.Join(f.Output, classesFile), func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		for s := 0; s*f.ShardRows < f.N; s++ {
			lines := map[int][]byte{}
			for _, p := range shards[s] {
				if err := readPart(ctx, p.Path, func(i int, rec []byte) error { lines[i] = rec; return nil }); err != nil {
					return err
				}
			}
			idx := make([]int, 0, len(lines))
			for i := range lines {
				idx = append(idx, i)
			}
			sort.Ints(idx)
			for _, i := range idx {
				bw.Write(lines[i])
			}
			n += len(idx)
		}
		return bw.Flush()
	})
	return n, err
}

// summary is summary.json and the end-of-run report.
type summary struct {
	Run struct {
		ID      string   `json:"id"`
		Started string   `json:"started,omitempty"`
		Args    []string `json:"args,omitempty"`
	} `json:"run"`
	Model  string `json:"model"`
	Input  string `json:"input"`
	Output string `json:"output"`
	// Rows: in = predicted + failed.
	RowsIn        int `json:"rows_in"`
	RowsPredicted int `json:"rows_predicted"`
	RowsFailed    int `json:"rows_failed"`
	// Failures counts the lines of failed.jsonl.
	Failures       int  `json:"failures"`
	RowsClassified *int `json:"rows_classified,omitempty"`
	// Retries counts the model calls made again on half of a call that
	// failed, to find the rows that fail alone (RunInference's
	// runinference.split_retries).
	Retries int64 `json:"retries"`
	// Tokens, PaddedTokens and PaddingShare are those of sequences (a
	// JSONL input, or one .npy per input): the rows' tokens (their size
	// along the model's dynamic axes), the tokens of the model calls as
	// padded (rows x padded size), and 1 - tokens/padded tokens.
	Tokens       *int64   `json:"tokens,omitempty"`
	PaddedTokens *int64   `json:"padded_tokens,omitempty"`
	PaddingShare *float64 `json:"padding_share,omitempty"`
	// Padding says how rows of different lengths share a model call: the
	// output axes cut back to each row's length, or why none can be (then
	// rows of different lengths run in calls of their own).
	Padding        string  `json:"padding,omitempty"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// Backend is each step's implementation (cpu, gpu, stub) and counts.
	Backend []stepJSON `json:"backend"`
	// Stub is set when steps ran their stand-ins: the predictions are not results.
	Stub      bool     `json:"stub"`
	StubSteps []string `json:"stub_steps,omitempty"`
}

type stepJSON struct {
	Step      string `json:"step"`
	Impl      string `json:"impl"`
	Batches   int64  `json:"batches"`
	Rows      int64  `json:"rows"`
	Failures  int64  `json:"failures"`
	Fallbacks int64  `json:"cpu_fallbacks"`
}

// report prints the summary of a run of cfg, writes summary.json, and
// checks that the counts reconcile.
func report(ctx context.Context, w io.Writer, res *job.Result, cfg Config, input string) (summary, error) {
	m := res.Metrics
	var sum summary
	sum.Run.ID, sum.Run.Started, sum.Run.Args = cfg.RunID, cfg.Started, cfg.Args
	sum.Model, sum.Input, sum.Output = cfg.Model, input, cfg.Output
	sum.RowsIn, sum.RowsPredicted = int(m.Counters["rows_in"]), int(m.Counters["rows_predicted"])
	sum.RowsFailed, sum.Failures = int(m.Counters["rows_failed"]), int(m.Counters["failures"])
	if cfg.TopK > 0 {
		n := int(m.Counters["rows_classified"])
		sum.RowsClassified = &n
	}
	sum.Retries = m.Counters["runinference."+inference.MetricRetries]
	if cfg.sequences() {
		tok, pad := m.Counters["runinference."+inference.MetricTokens], m.Counters["runinference."+inference.MetricPaddedTokens]
		share := 0.0
		if pad > 0 {
			share = 1 - float64(tok)/float64(pad)
		}
		sum.Tokens, sum.PaddedTokens, sum.PaddingShare = &tok, &pad, &share
		sum.Padding = cfg.Handler.Padding()
	}
	sum.ElapsedSeconds = res.Elapsed.Seconds()
	// The model's use of the onnx step and the onnx step the pipeline
	// declares are two decisions of one step, with the same counts, and
	// the metrics name the implementation of the last: the use's, which
	// ran, is the one Build resolved.
	var steps []job.StepCounts
	seen := map[string]bool{}
	for _, st := range m.Steps {
		if !seen[st.Step] {
			seen[st.Step] = true
			if cfg.Impl != "" {
				st.Impl = cfg.Impl
			}
			steps = append(steps, st)
		}
	}
	m.Steps = steps
	for _, st := range m.Steps {
		sum.Backend = append(sum.Backend, stepJSON{Step: st.Step, Impl: string(st.Impl), Batches: st.Batches, Rows: st.Items,
			Failures: st.Failures, Fallbacks: st.Fallbacks})
	}
	sum.Stub, sum.StubSteps = len(res.Stub) > 0, res.Stub
	m.PrintSteps(w, "rows")
	cls := ""
	if sum.RowsClassified != nil {
		cls = fmt.Sprintf(", %d classified", *sum.RowsClassified)
	}
	if sum.Retries > 0 {
		cls += fmt.Sprintf(", %d retries (the rows of a failed model call retried in halves)", sum.Retries)
	}
	if sum.Tokens != nil {
		cls += fmt.Sprintf(", %d tokens padded to %d (%.1f%% padding)", *sum.Tokens, *sum.PaddedTokens, 100**sum.PaddingShare)
	}
	fmt.Fprintf(w, "rows: %d in, %d predicted, %d failed%s; %d failures in %s; %s; outputs in %s\n",
		sum.RowsIn, sum.RowsPredicted, sum.RowsFailed, cls, sum.Failures, jobfiles.FailedFile, res.Elapsed.Round(time.Millisecond), cfg.Output)
	if err := jobfiles.WriteJSON(ctx, cfg.RunID, jobfiles.Join(cfg.Output, summaryFile), sum); err != nil {
		return sum, err
	}
	if sum.RowsIn != cfg.Rows() || sum.RowsIn != sum.RowsPredicted+sum.RowsFailed {
		return sum, fmt.Errorf("counts do not reconcile: %d rows in the input, %d reported, %d predicted + %d failed", cfg.Rows(), sum.RowsIn, sum.RowsPredicted, sum.RowsFailed)
	}
	if sum.RowsIn == 0 && sum.Failures == 0 && !cfg.AllowEmpty {
		return sum, fmt.Errorf("no rows: the input %s holds none, so nothing was predicted (--allow_empty accepts that)", input)
	}
	if *strict && sum.Failures > 0 {
		return sum, fmt.Errorf("--strict: %d failures (%d of %d rows failed); see %s", sum.Failures, sum.RowsFailed, sum.RowsIn, jobfiles.Join(cfg.Output, jobfiles.FailedFile))
	}
	return sum, nil
}
