package main

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/beamgpu/beamgpu/transforms/tensor/tensorbeam"
)

// The classifiers of --model.
const (
	ModelMLP  = "mlp"
	ModelKNN  = "knn"
	ModelONNX = "onnx"
)

// maxONNXBatch bounds the rows of one call of an ONNX model (the CNN's
// intermediate tensors grow with it: 256 rows, about 90 MB).
const maxONNXBatch = 256

// pipelineSteps are the steps Build builds for model, in their order: what
// --backend_override and the explain report know.
func pipelineSteps(model string) []step.Any {
	switch model {
	case ModelKNN:
		return []step.Any{tensor.StepDecode, tensor.StepStandardize, tensor.StepKNN}
	case ModelONNX:
		return []step.Any{tensor.StepDecode, tensor.StepStandardize, onnxstep.StepRun}
	}
	return []step.Any{tensor.StepDecode, tensor.StepStandardize, tensor.StepMLP}
}

// Config is one run of the pipeline.
type Config struct {
	// Sources are the IDX files to classify (images, and labels if known).
	Sources []tensor.Source
	// Output receives metrics.json, predictions.csv, confusion.png, failed.jsonl.
	Output string
	// Model is ModelMLP, ModelKNN or ModelONNX.
	Model string
	// MLP is the model file of ModelMLP or ModelONNX.
	MLP string
	// ONNX is the handler of ModelONNX's model, ONNXBatching its
	// batching of rows (zero: up to maxONNXBatch rows).
	ONNX         *inference.ONNXHandler
	ONNXBatching batch.Params
	// Reference is the labelled training set of ModelKNN.
	Reference tensor.Source
	KNN       tensorbeam.KNNParams
	// Batching groups input batches for the model (RunInference).
	Batching batch.Params
	// Steps are passed to every step (the backend selector).
	Steps []step.Option
	// RunID, Started and Args name the run in metrics.json; AllowEmpty
	// makes an input without records a success (else it is an error).
	RunID      string
	Started    time.Time
	Args       []string
	AllowEmpty bool
}

// inputs are the files the run reads.
func (c Config) inputs() []string {
	var out []string
	for _, s := range c.Sources {
		out = append(out, s.Images)
		if s.Labels != "" {
			out = append(out, s.Labels)
		}
	}
	if c.Model == ModelKNN {
		out = append(out, c.Reference.Images, c.Reference.Labels)
	} else if c.MLP != "" {
		out = append(out, c.MLP)
	}
	return out
}

// imageDims is the shape of Fashion-MNIST: 28x28 images, 10 classes.
var imageDims = []int{784, 256, 128, 10}

// Build adds the pipeline to s.
//
//	IDX files -> decode -> standardize (x/255) -> RunInference(mlp) or knn(side input: training set) --> report
//	failures of every step ----------------------------------------------------------------------------'
func Build(s beam.Scope, cfg Config) {
	sources := beam.CreateList(s, cfg.Sources)
	raw, decodeFailed := tensorbeam.DecodeIDXFiles(s, sources, cfg.Steps...)
	beam.ParDo0(s, &countRowsFn{}, raw)
	rows, stdFailed := tensorbeam.StandardizeRows(s, raw, tensor.Scaler{Mode: tensor.ScaleUnit}, cfg.Steps...)

	var preds, modelFailed beam.PCollection
	switch cfg.Model {
	case ModelKNN:
		rs := s.Scope("reference")
		refRaw, refDecodeFailed := tensorbeam.DecodeIDXFiles(rs, beam.Create(rs, cfg.Reference), cfg.Steps...)
		ref, refStdFailed := tensorbeam.StandardizeRows(rs, refRaw, tensor.Scaler{Mode: tensor.ScaleUnit}, cfg.Steps...)
		beam.ParDo0(rs, failOnReferenceError, beam.Flatten(rs, refDecodeFailed, refStdFailed))
		preds, modelFailed = tensorbeam.KNNClassify(s, rows, ref, cfg.KNN, cfg.Steps...)
	case ModelONNX:
		preds, modelFailed = classifyONNX(s, rows, cfg)
	default:
		h := inference.MLPHandler{Path: cfg.MLP, Dims: imageDims}
		preds, modelFailed = inference.RunInference(s, rows, h, cfg.Batching, cfg.Steps...)
	}

	failed := beam.Flatten(s, decodeFailed, stdFailed, modelFailed)
	rep := s.Scope("report")
	// The report runs once even when nothing came in (an empty input), so
	// that every run writes its own report: a third input of one element
	// makes sure the group exists.
	run := runInfo{ID: cfg.RunID, Inputs: cfg.inputs(), Args: cfg.Args}
	if !cfg.Started.IsZero() {
		run.Started = cfg.Started.UTC().Format(time.RFC3339)
	}
	beam.ParDo0(rep, &reportFn{Output: cfg.Output, Sources: len(cfg.Sources), Stub: stubSteps(cfg), Run: run},
		beam.CoGroupByKey(rep, beam.AddFixedKey(rep, preds), beam.AddFixedKey(rep, failed), beam.AddFixedKey(rep, beam.Create(rep, 1))))
}

// checkONNX refuses, before the pipeline is built, an ONNX model that the
// backend selector would put on the GPU where it cannot run (operators
// without a GPU kernel under --backend=gpu); RunONNX would panic.
func (c Config) checkONNX() error {
	if c.Model != ModelONNX {
		return nil
	}
	if c.ONNX == nil {
		return fmt.Errorf("--model=onnx: no model loaded")
	}
	_, err := step.ResolveUse(onnxstep.StepRun, c.ONNX.Use(), c.Steps...)
	return err
}

// classifyONNX classifies the standardized rows with the ONNX model of
// cfg: each row an Example ([1,28,28], keyed by its source and label),
// RunONNX, the top class of the first output (Classify), back to
// Predictions of one row. A row the model or Classify fails is a failure
// of one record.
func classifyONNX(s beam.Scope, rows beam.PCollection, cfg Config) (preds, failed beam.PCollection) {
	s = s.Scope("onnx")
	ex := beam.ParDo(s, &rowsToExamplesFn{Input: cfg.ONNX.Model().Inputs[0].Name}, rows)
	p := cfg.ONNXBatching
	if p.MaxBatchSize == 0 {
		p = batch.Params{MinBatchSize: 1, MaxBatchSize: maxONNXBatch}
	}
	results, runFailed := inference.RunONNX(s, ex, cfg.ONNX, p, cfg.Steps...)
	classes, classFailed, err := inference.Classify(context.Background(), s, results, cfg.ONNX.Model().Outputs[0].Name, 1, "")
	if err != nil {
		panic(err) // k is 1 and there is no labels file: Classify cannot fail
	}
	preds = beam.ParDo(s, classToPredictions, classes)
	failed = beam.ParDo(s, oneRecord, beam.Flatten(s, runFailed, classFailed))
	return preds, failed
}

// rowsToExamplesFn turns a batch of standardized rows into one Example
// per row: Key "source|label", Index the row's index in its source.
type rowsToExamplesFn struct{ Input string }

func (f *rowsToExamplesFn) ProcessElement(b tensor.Batch, emit func(inference.Example)) {
	for i := 0; i < b.Rows; i++ {
		label := int32(-1)
		if b.Labels != nil {
			label = b.Labels[i]
		}
		x := nd.Of(slices.Clone(b.Row(i)), 1, 28, 28)
		emit(inference.Example{Key: b.Source + "|" + strconv.Itoa(int(label)), Index: int64(b.Offset + i),
			Inputs: []inference.Tensor{{Name: f.Input, Array: x}}})
	}
}

// classToPredictions is one row's Predictions: its source, index, label
// (from its key) and top class.
func classToPredictions(c inference.Classification) (tensor.Predictions, error) {
	i := strings.LastIndex(c.Key, "|")
	label, err := strconv.Atoi(c.Key[i+1:])
	if i < 0 || err != nil {
		return tensor.Predictions{}, fmt.Errorf("onnx: row key %q has no label", c.Key)
	}
	return tensor.Predictions{Source: c.Key[:i], Offset: int(c.Index), Labels: []int32{int32(label)},
		Predicted: []int32{int32(c.Top[0].Index)}, Classes: len(ClassNames)}, nil
}

// oneRecord counts a row's failure as one failed record.
func oneRecord(f step.Failure) step.Failure {
	f.Items = 1
	return f
}

// stubSteps returns the steps of the pipeline of cfg that run their
// stand-ins: its outputs are then not results, and say so.
func stubSteps(cfg Config) []string {
	var out []string
	for _, s := range pipelineSteps(cfg.Model) {
		resolve := func() (backend.Decision, error) { return step.Resolve(s, cfg.Steps...) }
		if s.Name() == onnxstep.StepRun.Name() && cfg.ONNX != nil {
			resolve = func() (backend.Decision, error) { return step.ResolveUse(s, cfg.ONNX.Use(), cfg.Steps...) }
		}
		if d, err := resolve(); err == nil && d.Impl == backend.Stub {
			out = append(out, s.Name())
		}
	}
	return out
}

// failOnReferenceError fails the job when the reference set cannot be read:
// without it no query can be classified, and the error says why.
func failOnReferenceError(f step.Failure) error {
	return fmt.Errorf("kNN reference set: %s", f.Error())
}

// countRowsFn counts the rows decoded (metric records_decoded): with the
// rows the decode step rejected, these are the records that went in.
type countRowsFn struct{ rows beam.Counter }

func (f *countRowsFn) Setup() { f.rows = beam.NewCounter(stepbeam.Namespace, "records_decoded") }

func (f *countRowsFn) ProcessElement(ctx context.Context, b tensor.Batch) {
	f.rows.Inc(ctx, int64(b.Rows))
}

func init() {
	register.DoFn2x0[context.Context, tensor.Batch](&countRowsFn{})
	register.DoFn2x0[tensor.Batch, func(inference.Example)](&rowsToExamplesFn{})
	register.Emitter1[inference.Example]()
	register.Function1x2(classToPredictions)
	register.Function1x1(oneRecord)
	register.Function1x1(failOnReferenceError)
	register.DoFn5x1[context.Context, int, func(*tensor.Predictions) bool, func(*step.Failure) bool, func(*int) bool, error](&reportFn{})
	register.Iter1[int]()
	register.Iter1[tensor.Predictions]()
	register.Iter1[step.Failure]()
}

// discoverSources returns the image files of input: input itself if it is
// an IDX file, else every *images-idx3-ubyte* file in it, each paired with
// the *labels-idx1-ubyte* file of the same prefix when there is one. Inputs
// with a scheme (gs://..., and embedded:// for the data in this binary) are
// listed through Beam's filesystems, at launch, as Dataflow's workers will
// read them; a plan (--plan_out) lists nothing remote, so it needs no
// credentials: it takes --input as one images file.
func discoverSources(input string, batchRows int) ([]tensor.Source, error) {
	src := func(images, labels string) tensor.Source {
		return tensor.Source{Images: images, Labels: labels, BatchRows: batchRows, Height: 28, Width: 28, Classes: len(ClassNames)}
	}
	if strings.HasPrefix(input, embeddedScheme) {
		lbl := labelsFor(input)
		if _, err := fs.Stat(embedded, embeddedPath(lbl)); err != nil {
			lbl = ""
		}
		return []tensor.Source{src(input, lbl)}, nil
	}
	if strings.Contains(input, "://") {
		if flags.Launch.PlanOut != "" {
			slog.Info("fashion: plan: --input " + input + " is not listed (no credentials needed); a submission lists it")
			return []tensor.Source{src(input, "")}, nil
		}
		return discoverRemoteSources(context.Background(), input, src)
	}
	st, err := os.Stat(input)
	if err != nil {
		return nil, fmt.Errorf("--input: %w", err)
	}
	var images []string
	if st.IsDir() {
		entries, err := os.ReadDir(input)
		if err != nil {
			return nil, fmt.Errorf("--input: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() && strings.Contains(e.Name(), "images-idx3-ubyte") {
				images = append(images, filepath.Join(input, e.Name()))
			}
		}
	} else {
		images = []string{input}
	}
	if len(images) == 0 {
		return nil, fmt.Errorf("--input %s: no *images-idx3-ubyte* file (Fashion-MNIST's IDX format)", input)
	}
	sort.Strings(images)
	var out []tensor.Source
	for _, img := range images {
		lbl := labelsFor(img)
		if _, err := os.Stat(lbl); err != nil {
			lbl = ""
		}
		out = append(out, src(img, lbl))
	}
	return out, nil
}

// labelsFor is the labels file that goes with an images file.
func labelsFor(images string) string {
	return strings.Replace(images, "images-idx3-ubyte", "labels-idx1-ubyte", 1)
}

// discoverRemoteSources is discoverSources for an object store: input is an
// images object, or a prefix whose objects (one level down) are listed.
func discoverRemoteSources(ctx context.Context, input string, src func(images, labels string) tensor.Source) ([]tensor.Source, error) {
	base := strings.TrimSuffix(input, "/")
	var images, all []string
	if strings.Contains(path.Base(base), "images-idx3-ubyte") {
		ok, err := jobfiles.Exists(ctx, base)
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", input, err)
		}
		if !ok {
			return nil, fmt.Errorf("--input %s: no such object", input)
		}
		images = []string{base}
		if all, err = jobfiles.List(ctx, labelsFor(base)); err != nil {
			return nil, fmt.Errorf("--input %s: listing its labels: %w", input, err)
		}
	} else {
		var err error
		if all, err = jobfiles.List(ctx, base+"/*"); err != nil {
			return nil, fmt.Errorf("--input %s: listing: %w", input, err)
		}
		for _, o := range all {
			rel, ok := strings.CutPrefix(o, base+"/")
			if ok && !strings.Contains(rel, "/") && strings.Contains(rel, "images-idx3-ubyte") {
				images = append(images, o)
			}
		}
	}
	if len(images) == 0 {
		return nil, fmt.Errorf("--input %s: no *images-idx3-ubyte* object (Fashion-MNIST's IDX format)", input)
	}
	sort.Strings(images)
	var out []tensor.Source
	for _, img := range images {
		lbl := labelsFor(img)
		if !slices.Contains(all, lbl) {
			lbl = ""
		}
		out = append(out, src(img, lbl))
	}
	return out, nil
}

// trainingSet returns the Source of the training set in dir, or an error
// that says how to get it. A remote dir (gs://...) is checked through Beam's
// filesystems, except in a plan.
func trainingSet(dir string, batchRows int) (tensor.Source, error) {
	src := tensor.Source{Images: jobfiles.Join(dir, "train-images-idx3-ubyte.gz"),
		Labels: jobfiles.Join(dir, "train-labels-idx1-ubyte.gz"), BatchRows: batchRows, Height: 28, Width: 28}
	if !strings.Contains(dir, "://") {
		src.Images, src.Labels = filepath.Join(dir, "train-images-idx3-ubyte.gz"), filepath.Join(dir, "train-labels-idx1-ubyte.gz")
	}
	for _, f := range []string{src.Images, src.Labels} {
		var missing bool
		switch {
		case strings.Contains(f, "://") && flags.Launch.PlanOut != "":
		case strings.Contains(f, "://"):
			ok, err := jobfiles.Exists(context.Background(), f)
			if err != nil {
				return src, fmt.Errorf("--data_dir %s: %w", dir, err)
			}
			missing = !ok
		default:
			_, err := os.Stat(f)
			missing = err != nil
		}
		if missing {
			return src, fmt.Errorf("--model=knn needs the Fashion-MNIST training set as its reference, and %s is missing.\n"+
				"Install it with 'apt-get install dataset-fashion-mnist' (Debian; files in /usr/share/datasets/fashion-mnist),\n"+
				"or download train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz from\n"+
				"https://github.com/zalandoresearch/fashion-mnist (data/fashion) and pass --data_dir=DIR (gs://BUCKET/DIR on Dataflow)", f)
		}
	}
	return src, nil
}
