package inference

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

// KindONNX is the registered kind of ONNXHandler.
const KindONNX = "onnx"

func init() {
	Register(KindONNX, func(config []byte) (Handler, error) {
		h := &ONNXHandler{}
		if err := json.Unmarshal(config, h); err != nil {
			return nil, fmt.Errorf("inference: onnx handler config: %w", err)
		}
		return h, nil
	})
}

// ONNXOption sets an option of ONNX.
type ONNXOption func(*ONNXHandler)

// CheckFinite makes the model refuse a row with a NaN or an infinity in a
// float input, as that row's failure.
func CheckFinite() ONNXOption { return func(h *ONNXHandler) { h.CheckFinite = true } }

// MemoryBudget bounds the memory of each model call on the CPU to bytes
// (onnx.RunOptions.MemoryBudget; 0: the worker's default,
// onnx.DefaultMemoryBudget): a call over it fails, its rows with it,
// naming the node and the bytes, and the others go on.
func MemoryBudget(bytes int64) ONNXOption { return func(h *ONNXHandler) { h.MemoryBudget = bytes } }

// DefaultCallTimeout is the pipelines' default CallTimeout (their
// --call_timeout): a model call (one batch) that runs longer on a worker's
// CPU is a model that does not end on that batch (a Loop whose trip count
// a row sets to millions), not a slow one.
const DefaultCallTimeout = 10 * time.Minute

// CallTimeout bounds each model call on the CPU in time (0: no bound but
// the context's deadline, if it has one): past it the call stops before
// the model's next node or Loop iteration and fails, its rows with it,
// naming the node (a Loop whose trip count a row sets to millions), and
// the others go on. On the GPU executor a call's deadline is the
// executor's own.
func CallTimeout(d time.Duration) ONNXOption { return func(h *ONNXHandler) { h.CallTimeout = d } }

// ONNXHandler runs an ONNX model file with the onnx step (CPU, GPU
// executor or stub, as the backend selector chooses). Each example holds
// the model's inputs by name, without the batch axis where the model has
// one; each result, its outputs by name.
type ONNXHandler struct {
	// Path is the model file: a local path or any Beam filesystem path
	// (gs://...), readable by every worker.
	Path        string
	CheckFinite bool
	// MemoryBudget is the memory budget of a model call in bytes (0: the
	// worker's default).
	MemoryBudget int64 `json:",omitempty"`
	// CallTimeout bounds a model call in time (0: none; CallTimeout, the
	// option).
	CallTimeout time.Duration `json:",omitempty"`
	// PadRows lets rows of different sizes along the model's dynamic axes
	// share a call, padded with PadValues (by input name; 0 for the
	// others) and their outputs cut back (PadRows, the option).
	PadRows   bool               `json:",omitempty"`
	PadValues map[string]float64 `json:",omitempty"`

	// model is the model as loaded at construction, to describe it (nil
	// in a handler decoded on a worker).
	model *onnx.Model
}

// ONNX returns the handler of the ONNX model at path, loaded once here to
// check it (a file that is not a model, or has an operator outside the op
// set, is an error naming the file and the reason, before any pipeline
// runs) and once per worker process by RunInference (once in all, where
// the pipeline runs in this process).
func ONNX(ctx context.Context, path string, opts ...ONNXOption) (*ONNXHandler, error) {
	if path == "" {
		return nil, fmt.Errorf("inference: ONNX: no model path")
	}
	h := &ONNXHandler{Path: path}
	for _, o := range opts {
		o(h)
	}
	m, _, err := loadONNX(ctx, path)
	if err != nil {
		return nil, err
	}
	if h.PadRows {
		if _, err := newPadPlan(m, h.PadValues); err != nil {
			return nil, fmt.Errorf("inference: %s: %w", path, err)
		}
	}
	h.model = m
	return h, nil
}

// Padding says how rows of different sizes share a call: "" where the
// handler does not pad (PadRows not given); else which output axes are cut
// back to each row's size, or why none can be and rows of different sizes
// run in calls of their own.
func (h *ONNXHandler) Padding() string {
	if !h.PadRows || h.model == nil {
		return ""
	}
	p, err := newPadPlan(h.model, h.PadValues)
	if err != nil {
		return err.Error()
	}
	if p.undecided != "" {
		return "rows of different sizes run in calls of their own (no padding): " + p.undecided
	}
	var cuts []string
	for j, c := range p.cut {
		for d, a := range c {
			if a[0] >= 0 {
				cuts = append(cuts, fmt.Sprintf("%s axis %d as %s axis %d", h.model.Outputs[j].Name, d+1, h.model.Inputs[a[0]].Name, a[1]+1))
			}
		}
	}
	if len(cuts) == 0 {
		return "rows are padded; no output axis comes from a padded axis"
	}
	return "rows are padded; outputs cut back per row: " + strings.Join(cuts, ", ")
}

// Model returns the model as loaded by ONNX (its inputs, outputs, ID).
func (h *ONNXHandler) Model() *onnx.Model { return h.model }

// Kind implements Handler.
func (h *ONNXHandler) Kind() string { return KindONNX }

// Config implements Handler.
func (h *ONNXHandler) Config() ([]byte, error) { return json.Marshal(h) }

// Key implements Handler.
func (h *ONNXHandler) Key() string {
	k := fmt.Sprintf("onnx:%s|finite=%t|memory=%d", h.Path, h.CheckFinite, h.MemoryBudget)
	if h.CallTimeout > 0 {
		k += fmt.Sprintf("|timeout=%v", h.CallTimeout)
	}
	if h.PadRows {
		names := make([]string, 0, len(h.PadValues))
		for n := range h.PadValues {
			names = append(names, n)
		}
		sort.Strings(names)
		k += "|pad"
		for _, n := range names {
			k += fmt.Sprintf(",%s=%v", n, h.PadValues[n])
		}
	}
	return k
}

// Use is the backend's view of this model's use of the onnx step: its
// explain line ("onnx[name]"), and why it cannot run on the GPU where some
// of its operators have no GPU kernel. Step is the onnx step with it.
func (h *ONNXHandler) Use() backend.Step {
	u := onnxstep.StepRun.Backend()
	if h.model == nil {
		return u
	}
	u.Use = h.model.Name
	if ops := h.model.OpsWithoutGPU(); len(ops) > 0 {
		u.NoGPU = fmt.Sprintf("operators %s of %s have no GPU kernel", strings.Join(ops, ", "), h.model.Name)
	}
	return u
}

// Step implements Handler: the onnx step, with this model's use (Use).
// A pipeline that lists it among its steps (job.Pipeline.Steps, or
// step.Backends for backend.Config.Steps) has --backend=gpu with a model
// that cannot run there refused when the selector is made.
func (h *ONNXHandler) Step() step.Any { return step.WithUse(onnxstep.StepRun, h.Use()) }

// Load implements Handler.
func (h *ONNXHandler) Load(ctx context.Context) (Model, error) {
	m, _, err := loadONNX(ctx, h.Path)
	if err != nil {
		return nil, err
	}
	o := onnxModel{m: m, finite: h.CheckFinite, budget: h.MemoryBudget, timeout: h.CallTimeout}
	if h.PadRows {
		if o.pad, err = newPadPlan(m, h.PadValues); err != nil {
			return nil, err
		}
		o.tokens = beam.NewCounter(stepbeam.Namespace, "runinference."+MetricTokens)
		o.padded = beam.NewCounter(stepbeam.Namespace, "runinference."+MetricPaddedTokens)
	}
	return o, nil
}

// loaded holds the ONNX models of this process, one per path: ONNX and a
// worker's Load share it.
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
func loadONNX(ctx context.Context, path string) (*onnx.Model, time.Duration, error) {
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
		start := time.Now()
		e.m, e.err = onnxstep.Load(ctx, path)
		e.took = time.Since(start)
	})
	if e.err != nil {
		return nil, 0, fmt.Errorf("inference: %w", e.err)
	}
	return e.m, e.took, nil
}

// onnxModel is a loaded ONNX model.
type onnxModel struct {
	m      *onnx.Model
	finite bool
	budget int64
	// timeout bounds a call in time (0: none).
	timeout time.Duration
	// pad is the padding plan (PadRows), or nil; tokens and padded count
	// the rows' tokens and the padded ones of each successful call.
	pad            *padPlan
	tokens, padded beam.Counter
}

func (o onnxModel) ID() string       { return o.m.ID }
func (o onnxModel) SizeBytes() int64 { return o.m.SizeBytes() }
func (o onnxModel) Batched() bool    { return o.m.Batched() }

// Check checks e's inputs against the model's declared types and shapes.
func (o onnxModel) Check(e Example) error {
	row, err := rowInputs(o.m, e, o.finite)
	if err == nil && o.pad != nil {
		err = o.pad.checkRow(row)
	}
	return err
}

// Predict stacks the examples' inputs along the batch axis (a model that
// is not Batched gets one example) and runs the onnx step.
func (o onnxModel) Predict(ctx context.Context, impl backend.Kind, ex []Example) ([][]Tensor, error) {
	run, err := onnxstep.StepRun.ImplContext(impl)
	if err != nil {
		return nil, err
	}
	rows := make([][]nd.Array, len(ex))
	for i, e := range ex {
		if rows[i], err = rowInputs(o.m, e, false); err != nil {
			return nil, fmt.Errorf("%s: %w", e.ID(), err)
		}
	}
	stack := o.m.Batched()
	if !stack && len(ex) != 1 {
		return nil, fmt.Errorf("%s takes one example at a time (it has no batch axis), not %d", o.m.Name, len(ex))
	}
	if stack && o.pad != nil {
		return o.predictPadded(ctx, run, rows)
	}
	in := o.input(ctx, rows[0])
	if stack {
		if in.Inputs, err = stackRows(rows); err != nil {
			return nil, err
		}
	}
	out, err := run(ctx, in)
	if err != nil {
		return nil, err
	}
	return splitOutputs(o.m, out, len(ex), stack)
}

// input is the onnx step's input of a call on inputs: the model, its
// memory budget, and the call's deadline, the earlier of the timeout's
// and ctx's.
func (o onnxModel) input(ctx context.Context, inputs []nd.Array) onnxstep.Input {
	in := onnxstep.Input{Model: o.m, Inputs: inputs, MemoryBudget: o.budget}
	if o.timeout > 0 {
		in.Deadline = time.Now().Add(o.timeout)
	}
	if d, ok := ctx.Deadline(); ok && (in.Deadline.IsZero() || d.Before(in.Deadline)) {
		in.Deadline = d
	}
	return in
}

// predictPadded runs rows whose inputs may differ in size along dynamic
// axes: padded to the largest in one call, or, where the plan cannot cut
// the outputs back, in one call per set of rows of the same shapes.
func (o onnxModel) predictPadded(ctx context.Context, run func(context.Context, onnxstep.Input) (onnxstep.Output, error), rows [][]nd.Array) ([][]Tensor, error) {
	shapes, ragged := paddedShapes(rows)
	if shapes == nil {
		return nil, fmt.Errorf("rows of inputs of different ranks cannot share a batch")
	}
	if ragged && o.pad.undecided != "" {
		groups := map[string][]int{}
		var keys []string
		for r, row := range rows {
			k := shapeKey(row)
			if groups[k] == nil {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], r)
		}
		res := make([][]Tensor, len(rows))
		for _, k := range keys {
			sub := make([][]nd.Array, len(groups[k]))
			for i, r := range groups[k] {
				sub[i] = rows[r]
			}
			out, err := o.predictPadded(ctx, run, sub)
			if err != nil {
				return nil, err
			}
			for i, r := range groups[k] {
				res[r] = out[i]
			}
		}
		return res, nil
	}
	var inputs []nd.Array
	var err error
	if ragged {
		inputs, err = o.pad.stackPadded(rows, shapes)
	} else {
		inputs, err = stackRows(rows)
	}
	if err != nil {
		return nil, err
	}
	out, err := run(ctx, o.input(ctx, inputs))
	if err != nil {
		return nil, err
	}
	res, err := splitOutputs(o.m, out, len(rows), true)
	if err != nil {
		return nil, err
	}
	if o.pad.tokens >= 0 {
		var real int64
		for _, row := range rows {
			real += o.pad.tokenCount(row[o.pad.tokens].Shape)
		}
		o.tokens.Inc(ctx, real)
		o.padded.Inc(ctx, int64(len(rows))*o.pad.tokenCount(shapes[o.pad.tokens]))
	}
	if ragged {
		for r := range res {
			for j := range res[r] {
				res[r][j].Array = o.pad.cutRow(j, res[r][j].Array, rows[r])
			}
		}
	}
	return res, nil
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
		a, found := e.Input(v.Name)
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
			if err := checkFinite(v.Name, a); err != nil {
				return nil, err
			}
		}
		out[i] = a
	}
	return out, nil
}

// checkFinite reports the first NaN or infinity of a float array: its
// index along each axis, and in the flat array.
func checkFinite(name string, a nd.Array) error {
	for j, x := range nd.Float64s(a) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			idx := make([]string, len(a.Shape))
			for k, r := len(a.Shape)-1, j; k >= 0; k-- {
				if d := a.Shape[k]; d > 0 {
					idx[k], r = strconv.Itoa(r%d), r/d
				}
			}
			return fmt.Errorf("input %q: element [%s] (flat index %d) is %v, not a finite number", name, strings.Join(idx, ", "), j, x)
		}
	}
	return nil
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

// splitOutputs cuts the outputs back into the outputs of each of n
// examples (stacked: along the first axis; else n is 1).
func splitOutputs(m *onnx.Model, out onnxstep.Output, n int, stacked bool) ([][]Tensor, error) {
	res := make([][]Tensor, n)
	for i := range res {
		res[i] = make([]Tensor, len(out.Outputs))
	}
	for j, a := range out.Outputs {
		name := m.Outputs[j].Name
		if !stacked {
			res[0][j] = Tensor{Name: name, Array: a}
			continue
		}
		if len(a.Shape) == 0 || a.Shape[0] != n {
			return nil, fmt.Errorf("output %q has shape %s, not %d rows", name, nd.ShapeString(a.Shape), n)
		}
		for i := range n {
			r := a.Rows(i, i+1)
			res[i][j] = Tensor{Name: name, Array: nd.Array{Type: r.Type, Shape: r.Shape[1:], Data: r.Data}}
		}
	}
	return res, nil
}
