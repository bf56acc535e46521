package main

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
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

// modelStep is the step the classifier of model runs on.
func modelStep(model string) step.Any {
	switch model {
	case ModelKNN:
		return tensor.StepKNN
	case ModelONNX:
		return onnxstep.StepRun
	}
	return tensor.StepMLP
}

// pipelineSteps are the steps Build builds for model, in their order: what
// --backend_override and the explain report know.
func pipelineSteps(model string) []step.Any {
	return []step.Any{tensor.StepDecode, tensor.StepStandardize, modelStep(model)}
}

// Config is one run of the pipeline.
type Config struct {
	// Sources are the IDX files to classify (images, and labels if known).
	Sources []tensor.Source
	// Output receives metrics.json, predictions.csv, confusion.png, failed.jsonl.
	Output string
	// Model is ModelMLP, ModelKNN or ModelONNX.
	Model string
	// Handler runs the model; nil: the handler of Model made from MLP, or
	// Reference, K and Weights (an ONNX model's is made where the model is
	// checked, configFromFlags).
	Handler inference.Handler
	// MLP is the model file of ModelMLP or ModelONNX.
	MLP string
	// Reference is the labelled training set of ModelKNN, K its
	// neighbours (0: 5) and Weights its vote's weighting (tensor.WeightUniform
	// or tensor.WeightDistance; "": uniform).
	Reference tensor.Source
	K         int
	Weights   string
	// Batching groups rows into calls of the model (RunInference); zero:
	// up to maxONNXBatch rows for an ONNX model, batch.Params' defaults
	// for the others.
	Batching batch.Params
	// Steps are passed to every step (the backend selector).
	Steps []step.Option
	// RunID, Started and Args name the run in metrics.json; AllowEmpty
	// makes an input without records a success (else it is an error).
	RunID      string
	Started    time.Time
	Args       []string
	AllowEmpty bool
	// FilesRun names the run's temporary files and its lock in Output:
	// RunID, or a run ID of its own when RunID is empty (tests compare
	// the metrics.json of two runs).
	FilesRun string
}

// withFilesRun returns c with FilesRun set.
func (c Config) withFilesRun() Config {
	if c.FilesRun == "" {
		c.FilesRun = c.RunID
	}
	if c.FilesRun == "" {
		c.FilesRun = jobfiles.NewRunID()
	}
	return c
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

// classifier is how Build classifies: the model's handler, the input its
// examples hold (its name and a row's shape), the output Classify reads,
// and the batching of the model's calls.
type classifier struct {
	handler  inference.Handler
	input    string
	shape    []int
	output   string
	batching batch.Params
}

// classifier returns the classifier of c.Model: the MLP's probabilities,
// the kNN's vote (its own class: its ties are broken by distance), the
// ONNX model's first output ([1,28,28] pixels into its first input).
func (c Config) classifier() (classifier, error) {
	cl := classifier{handler: c.Handler, input: inference.RowInput, batching: c.Batching}
	var err error
	switch c.Model {
	case ModelMLP:
		cl.output = inference.OutputProbabilities
		if cl.handler == nil {
			cl.handler, err = inference.MLP(c.MLP, imageDims...)
		}
	case ModelKNN:
		cl.output = inference.OutputClass
		if cl.handler == nil {
			ref := c.Reference
			ref.Classes = cmp.Or(ref.Classes, len(ClassNames))
			cl.handler, err = inference.KNN(ref, cmp.Or(c.K, 5), inference.KNNWeights(cmp.Or(c.Weights, tensor.WeightUniform)),
				inference.KNNScaler(unitScaler))
		}
	case ModelONNX:
		h, ok := cl.handler.(*inference.ONNXHandler)
		if !ok || h.Model() == nil {
			return cl, fmt.Errorf("--model=onnx: no model loaded (inference.ONNX)")
		}
		m := h.Model()
		cl.input, cl.shape, cl.output = m.Inputs[0].Name, []int{1, 28, 28}, m.Outputs[0].Name
		if cl.batching.MaxBatchSize == 0 {
			cl.batching = batch.Params{MinBatchSize: 1, MaxBatchSize: maxONNXBatch}
		}
	default:
		return cl, fmt.Errorf("--model=%s: want mlp, knn or onnx", c.Model)
	}
	return cl, err
}

// unitScaler scales pixels to [0, 1]: the standardize step's, and the
// kNN reference set's.
var unitScaler = tensor.Scaler{Mode: tensor.ScaleUnit}

// Build adds the pipeline to s.
//
//	IDX files -> decode -> standardize (x/255) -> examples -> RunInference(mlp, knn or onnx) -> Classify (top 1) --> report
//	failures of every step -------------------------------------------------------------------------------------'
func Build(s beam.Scope, cfg Config) error {
	cfg = cfg.withFilesRun()
	cl, err := cfg.classifier()
	if err != nil {
		return err
	}
	raw, decodeFailed := tensorbeam.DecodeIDXFiles(s, beam.CreateList(s, cfg.Sources), cfg.Steps...)
	beam.ParDo0(s, &countRowsFn{}, raw)
	rows, stdFailed := tensorbeam.StandardizeRows(s, raw, unitScaler, cfg.Steps...)
	examples, rowsFailed := inference.RowExamples(s, rows, cl.input, cl.shape...)
	results, runFailed, err := inference.TryRunInference(s, examples, cl.handler, cl.batching, cfg.Steps...)
	if err != nil {
		return err
	}
	classes, classFailed, err := inference.Classify(context.Background(), s, results, cl.output, 1, "")
	if err != nil {
		return err
	}
	failed := beam.Flatten(s, decodeFailed, stdFailed, rowsFailed, runFailed, classFailed)

	// The report runs once even when nothing came in (an empty input), so
	// that every run writes its own report: a third input of one element
	// makes sure the group exists.
	rep := s.Scope("report")
	run := runInfo{ID: cfg.RunID, Inputs: cfg.inputs(), Args: cfg.Args}
	if !cfg.Started.IsZero() {
		run.Started = cfg.Started.UTC().Format(time.RFC3339)
	}
	beam.ParDo0(rep, &reportFn{Output: cfg.Output, FilesRun: cfg.FilesRun, Sources: len(cfg.Sources), Stub: stubSteps(cfg, cl.handler), Run: run},
		beam.CoGroupByKey(rep, beam.AddFixedKey(rep, classes), beam.AddFixedKey(rep, failed), beam.AddFixedKey(rep, beam.Create(rep, 1))))
	return nil
}

// stubSteps returns the steps of the pipeline of cfg that run their
// stand-ins (the model's as its handler uses it): its outputs are then
// not results, and say so.
func stubSteps(cfg Config, h inference.Handler) []string {
	var out []string
	for _, s := range []step.Any{tensor.StepDecode, tensor.StepStandardize, h.Step()} {
		if d, err := step.Resolve(s, cfg.Steps...); err == nil && d.Impl == backend.Stub {
			out = append(out, s.Name())
		}
	}
	return out
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
	register.DoFn5x1[context.Context, int, func(*inference.Classification) bool, func(*step.Failure) bool, func(*int) bool, error](&reportFn{})
	register.Iter1[int]()
	register.Iter1[inference.Classification]()
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
		Labels: jobfiles.Join(dir, "train-labels-idx1-ubyte.gz"), BatchRows: batchRows, Height: 28, Width: 28, Classes: len(ClassNames)}
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
