package inference

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
	"github.com/beamgpu/beamgpu/transforms/step/wire"
)

// Tensor is a named array: one of a model's inputs or outputs.
type Tensor struct {
	Name  string
	Array nd.Array
}

// Example is one input row of RunONNX: the model's inputs by name, each
// without the batch axis where the model has one (a [3x224x224] image for
// an input declared [N, 3, 224, 224]), and a key or an index that its
// Result and its failure carry through.
type Example struct {
	// Key names the example ("" for an unkeyed one, then named by Index).
	Key   string
	Index int64
	// Inputs are the model's inputs, by name, in any order.
	Inputs []Tensor
}

// ID names the example in a failure: its key, or "#" and its index.
func (e Example) ID() string {
	if e.Key != "" {
		return e.Key
	}
	return "#" + strconv.FormatInt(e.Index, 10)
}

// Result is a model's outputs for one Example: its key and index, the
// model's ID (onnx.Model.ID: the content of its file) and the outputs, by
// name, in the model's order, without the batch axis.
type Result struct {
	Key     string
	Index   int64
	ModelID string
	Outputs []Tensor
}

// ID names the result as its example is named: its key, or "#" and its
// index.
func (r Result) ID() string { return Example{Key: r.Key, Index: r.Index}.ID() }

// Output returns the output called name, ok false if there is none.
func (r Result) Output(name string) (nd.Array, bool) {
	for _, t := range r.Outputs {
		if t.Name == name {
			return t.Array, true
		}
	}
	return nd.Array{}, false
}

func init() {
	register.DoFn4x1[context.Context, []Example, func(Result), func(step.Failure), error](&onnxFn{})
	register.Emitter1[Result]()
	beam.RegisterCoder(reflect.TypeOf(Example{}), EncodeExample, DecodeExample)
	beam.RegisterCoder(reflect.TypeOf(Result{}), EncodeResult, DecodeResult)
}

// ONNXOption sets an option of ONNX.
type ONNXOption func(*ONNXHandler)

// CheckFinite makes RunONNX fail a row with a NaN or an infinity in a
// float input, as that row's failure.
func CheckFinite() ONNXOption { return func(h *ONNXHandler) { h.CheckFinite = true } }

// ONNXHandler runs an ONNX model file with the onnx step (CPU, GPU
// executor or stub, as the backend selector chooses).
type ONNXHandler struct {
	// Path is the model file: a local path or any Beam filesystem path
	// (gs://...), readable by every worker.
	Path        string
	CheckFinite bool

	// model is the model as loaded at construction, to describe it.
	model *onnx.Model
}

// ONNX returns the handler of the ONNX model at path, loaded once here to
// check it (a file that is not a model, or has an operator outside the op
// set, is an error naming the file and the reason, before any pipeline
// runs) and once per worker process by RunONNX.
func ONNX(ctx context.Context, path string, opts ...ONNXOption) (*ONNXHandler, error) {
	h := &ONNXHandler{Path: path}
	for _, o := range opts {
		o(h)
	}
	m, err := loadONNX(ctx, path)
	if err != nil {
		return nil, err
	}
	h.model = m
	return h, nil
}

// Model returns the model as loaded by ONNX (its inputs, outputs, ID).
func (h *ONNXHandler) Model() *onnx.Model { return h.model }

// Use is the backend's view of this model's use of the onnx step: its
// explain line ("onnx[name]"), and why it cannot run on the GPU where some
// of its operators have no GPU kernel. A pipeline lists it in its
// backend.Config.Steps, so that the flags know the onnx step and
// --backend=gpu with such a model fails at backend.New, before the
// pipeline is built.
func (h *ONNXHandler) Use() backend.Step {
	u := onnxstep.StepRun.Backend()
	u.Use = h.model.Name
	if ops := h.model.OpsWithoutGPU(); len(ops) > 0 {
		u.NoGPU = fmt.Sprintf("operators %s of %s have no GPU kernel", strings.Join(ops, ", "), h.model.Name)
	}
	return u
}

// loaded holds the ONNX models of this process, one per path.
var loaded struct {
	sync.Mutex
	m map[string]*loadedModel
}

type loadedModel struct {
	once sync.Once
	m    *onnx.Model
	err  error
	took time.Duration
}

// loadONNX loads the model at path once per process.
func loadONNX(ctx context.Context, path string) (*onnx.Model, error) {
	m, _, _, err := loadShared(ctx, path)
	return m, err
}

func loadShared(ctx context.Context, path string) (m *onnx.Model, took time.Duration, first bool, err error) {
	loaded.Lock()
	if loaded.m == nil {
		loaded.m = map[string]*loadedModel{}
	}
	e := loaded.m[path]
	if e == nil {
		e = &loadedModel{}
		loaded.m[path] = e
	}
	loaded.Unlock()
	e.once.Do(func() {
		first = true
		start := time.Now()
		e.m, e.err = onnxstep.Load(ctx, path)
		e.took = time.Since(start)
	})
	if e.err != nil {
		return nil, 0, first, fmt.Errorf("inference: %w", e.err)
	}
	return e.m, e.took, first, nil
}

// RunONNX runs the model of h on every example (a PCollection of Example)
// and returns the results (Result, one per example, with its key, index and
// the model's ID) and the failures (step.Failure, one per failed example:
// an input of the wrong type or shape, a NaN with CheckFinite, or a batch
// the model failed on, each example of it). Examples are grouped by
// batch.Elements with p and stacked along the model's batch axis where it
// has one (onnx.Model.Batched); else each runs alone. The onnx step is
// resolved for this model (h.Use) with opts: under --backend=gpu a model
// with operators that have no GPU kernel panics here, naming them.
func RunONNX(s beam.Scope, examples beam.PCollection, h *ONNXHandler, p batch.Params, opts ...step.Option) (results, failed beam.PCollection) {
	if h == nil || h.model == nil {
		panic("inference.RunONNX: the handler was not made by inference.ONNX")
	}
	s = s.Scope("RunInference")
	grouped := batch.Elements(s, examples, p)
	ms, d := stepbeam.ScopeUse(s, onnxstep.StepRun, h.Use(), opts...)
	fn := &onnxFn{Path: h.Path, CheckFinite: h.CheckFinite, Impl: d.Impl,
		Fallback: d.Impl == backend.GPU && d.Requested == backend.Auto}
	return beam.ParDo2(ms, fn, grouped)
}

type onnxFn struct {
	Path        string
	CheckFinite bool
	Impl        backend.Kind
	Fallback    bool

	model   *onnx.Model
	run     func(context.Context, onnxstep.Input) (onnxstep.Output, error)
	cpu     func(context.Context, onnxstep.Input) (onnxstep.Output, error)
	m       stepbeam.Metrics
	took    time.Duration
	started bool

	inferences, failedBatches, badRows     beam.Counter
	size, bytes, latency, load, modelBytes beam.Distribution
}

func (f *onnxFn) Setup(ctx context.Context) error {
	m, took, first, err := loadShared(ctx, f.Path)
	if err != nil {
		return err
	}
	f.model, f.started = m, !first
	f.took = took
	if f.run, err = onnxstep.StepRun.ImplContext(f.Impl); err != nil {
		return err
	}
	if f.Fallback {
		if f.cpu, err = onnxstep.StepRun.ImplContext(backend.CPU); err != nil {
			return err
		}
	}
	f.m = stepbeam.NewMetrics(onnxstep.StepRun.Name())
	p := "runinference."
	f.inferences = beam.NewCounter(stepbeam.Namespace, p+MetricInferences)
	f.failedBatches = beam.NewCounter(stepbeam.Namespace, p+MetricFailed)
	f.badRows = beam.NewCounter(stepbeam.Namespace, p+MetricBadRows)
	f.size = beam.NewDistribution(stepbeam.Namespace, p+MetricBatchSize)
	f.bytes = beam.NewDistribution(stepbeam.Namespace, p+MetricBatchBytes)
	f.latency = beam.NewDistribution(stepbeam.Namespace, p+MetricLatencyMicro)
	f.load = beam.NewDistribution(stepbeam.Namespace, p+MetricLoadMillis)
	f.modelBytes = beam.NewDistribution(stepbeam.Namespace, p+MetricModelBytes)
	return nil
}

// MetricBadRows counts the examples refused before the model ran (a wrong
// type or shape, a NaN with CheckFinite).
const MetricBadRows = "bad_rows"

func (f *onnxFn) ProcessElement(ctx context.Context, in []Example, emit func(Result), fail func(step.Failure)) error {
	if !f.started {
		f.load.Update(ctx, f.took.Milliseconds())
		f.modelBytes.Update(ctx, f.model.SizeBytes())
		f.started = true
	}
	name := onnxstep.StepRun.Name()
	var good [][]nd.Array
	var goodEx []Example
	for _, e := range in {
		arrays, err := rowInputs(f.model, e, f.CheckFinite)
		if err != nil {
			f.badRows.Inc(ctx, 1)
			fail(step.NewFailure(name, e, err))
			continue
		}
		good, goodEx = append(good, arrays), append(goodEx, e)
	}
	if len(good) == 0 {
		return nil
	}
	if !f.model.Batched() {
		for i := range good {
			f.call(ctx, good[i:i+1], goodEx[i:i+1], false, emit, fail)
		}
		return nil
	}
	f.call(ctx, good, goodEx, true, emit, fail)
	return nil
}

// call runs the model on rows (stacked along a new batch axis when stack)
// and emits a result per example, or fails every example.
func (f *onnxFn) call(ctx context.Context, rows [][]nd.Array, ex []Example, stack bool, emit func(Result), fail func(step.Failure)) {
	in := onnxstep.Input{Model: f.model, Inputs: rows[0]}
	var err error
	if stack {
		in.Inputs, err = stackRows(rows)
	}
	var out onnxstep.Output
	start := time.Now()
	if err == nil {
		out, err = f.run(f.m.WithPlacement(ctx), in)
		if err != nil && f.cpu != nil && errors.Is(err, step.ErrGPUUnavailable) {
			f.m.FellBack(ctx)
			out, err = f.cpu(ctx, in)
		}
	}
	took := time.Since(start)
	f.latency.Update(ctx, took.Microseconds())
	f.m.Record(ctx, len(ex), in.Bytes(), took, err != nil)
	var results []Result
	if err == nil {
		results, err = splitResults(f.model, out, ex, stack)
	}
	if err != nil {
		f.failedBatches.Inc(ctx, 1)
		for _, e := range ex {
			fail(step.NewFailure(onnxstep.StepRun.Name(), e, err))
		}
		return
	}
	f.size.Update(ctx, int64(len(ex)))
	f.bytes.Update(ctx, int64(in.Bytes()))
	f.inferences.Inc(ctx, int64(len(ex)))
	for _, r := range results {
		emit(r)
	}
}

// rowInputs returns e's inputs in the model's order, checked against the
// model's declared types and shapes (without the batch axis where the
// model has one).
func rowInputs(m *onnx.Model, e Example, finite bool) ([]nd.Array, error) {
	if len(e.Inputs) != len(m.Inputs) {
		return nil, fmt.Errorf("%d inputs given, the model takes %d (%s)", len(e.Inputs), len(m.Inputs), inputList(m))
	}
	out := make([]nd.Array, len(m.Inputs))
	batched := m.Batched()
	for i, v := range m.Inputs {
		var a nd.Array
		found := false
		for _, t := range e.Inputs {
			if t.Name == v.Name {
				a, found = t.Array, true
			}
		}
		if !found {
			return nil, fmt.Errorf("input %q missing (the model takes %s)", v.Name, inputList(m))
		}
		if err := a.Validate(); err != nil {
			return nil, fmt.Errorf("input %q: %w", v.Name, err)
		}
		want := v.Type
		if want == nd.Float16 || want == nd.BFloat16 {
			want = nd.Float32
		}
		if a.Type != want && a.Type != v.Type {
			return nil, fmt.Errorf("input %q is %v, the model takes %v", v.Name, a.Type, v.Type)
		}
		if v.Shape != nil {
			dims := v.Shape
			if batched {
				dims = dims[1:]
			}
			if len(a.Shape) != len(dims) {
				return nil, fmt.Errorf("input %q has rank %d (%s), the model takes rank %d per row (%s)", v.Name, len(a.Shape), nd.ShapeString(a.Shape), len(dims), v)
			}
			for d, dim := range dims {
				if dim.Size >= 0 && a.Shape[d] != dim.Size {
					return nil, fmt.Errorf("input %q has shape %s, the model takes %s", v.Name, nd.ShapeString(a.Shape), v)
				}
			}
		}
		if finite && a.Type.IsFloat() {
			for j, x := range nd.Float64s(a) {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("input %q: element %d is %v", v.Name, j, x)
				}
			}
		}
		out[i] = a
	}
	return out, nil
}

func inputList(m *onnx.Model) string {
	s := make([]string, len(m.Inputs))
	for i, v := range m.Inputs {
		s[i] = v.String()
	}
	return strings.Join(s, "; ")
}

// stackRows stacks each input's rows along a new first axis; rows of
// different shapes (free dimensions) cannot share a batch.
func stackRows(rows [][]nd.Array) ([]nd.Array, error) {
	out := make([]nd.Array, len(rows[0]))
	for i := range out {
		first := rows[0][i]
		parts := make([]nd.Array, len(rows))
		for r, row := range rows {
			a := row[i]
			if a.Type != first.Type || !nd.SameShape(a.Shape, first.Shape) {
				return nil, fmt.Errorf("input %d: rows of shapes %v and %v cannot share a batch (use batch sizes of 1)", i, first, a)
			}
			parts[r] = nd.Array{Type: a.Type, Shape: append([]int{1}, a.Shape...), Data: a.Data}
		}
		c, err := nd.Concat(parts)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// splitResults cuts the outputs back into one Result per example.
func splitResults(m *onnx.Model, out onnxstep.Output, ex []Example, stacked bool) ([]Result, error) {
	res := make([]Result, len(ex))
	for i, e := range ex {
		res[i] = Result{Key: e.Key, Index: e.Index, ModelID: m.ID, Outputs: make([]Tensor, len(out.Outputs))}
	}
	for j, a := range out.Outputs {
		name := m.Outputs[j].Name
		if !stacked {
			res[0].Outputs[j] = Tensor{Name: name, Array: a}
			continue
		}
		if len(a.Shape) == 0 || a.Shape[0] != len(ex) {
			return nil, fmt.Errorf("output %q has shape %s, not %d rows", name, nd.ShapeString(a.Shape), len(ex))
		}
		for i := range ex {
			r := a.Rows(i, i+1)
			res[i].Outputs[j] = Tensor{Name: name, Array: nd.Array{Type: r.Type, Shape: r.Shape[1:], Data: r.Data}}
		}
	}
	return res, nil
}

// Coders: an Example's and a Result's tensors as their names, types,
// shapes and raw data.

func appendTensors(b []byte, ts []Tensor) []byte {
	b = wire.AppendUvarint(b, len(ts))
	for _, t := range ts {
		b = wire.AppendString(b, t.Name)
		b = nd.AppendMeta(b, t.Array)
		b = wire.AppendBytes(b, t.Array.Data)
	}
	return b
}

func readTensors(d *wire.Decoder) []Tensor {
	n := d.Uvarint()
	var out []Tensor
	for i := 0; i < n && d.Err() == nil; i++ {
		name := d.String()
		t, shape := nd.ReadMeta(d)
		data := d.LenBytes()
		if d.Err() != nil {
			break
		}
		a, err := nd.View(t, shape, append([]byte(nil), data...))
		if err != nil {
			d.Fail("tensor %q: %v", name, err)
			break
		}
		out = append(out, Tensor{Name: name, Array: a})
	}
	return out
}

// EncodeExample is Example's Beam coder.
func EncodeExample(e Example) []byte {
	b := wire.AppendString(nil, e.Key)
	b = wire.AppendUint64(b, uint64(e.Index))
	return appendTensors(b, e.Inputs)
}

// DecodeExample decodes what EncodeExample wrote.
func DecodeExample(b []byte) (Example, error) {
	d := wire.NewDecoder(b, "inference example")
	e := Example{Key: d.String(), Index: int64(d.Uint64())}
	e.Inputs = readTensors(d)
	return e, d.Done()
}

// EncodeResult is Result's Beam coder.
func EncodeResult(r Result) []byte {
	b := wire.AppendString(nil, r.Key)
	b = wire.AppendUint64(b, uint64(r.Index))
	b = wire.AppendString(b, r.ModelID)
	return appendTensors(b, r.Outputs)
}

// DecodeResult decodes what EncodeResult wrote.
func DecodeResult(b []byte) (Result, error) {
	d := wire.NewDecoder(b, "inference result")
	r := Result{Key: d.String(), Index: int64(d.Uint64()), ModelID: d.String()}
	r.Outputs = readTensors(d)
	return r, d.Done()
}
