package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// The classifiers of --model.
const (
	ModelMLP = "mlp"
	ModelKNN = "knn"
)

// Config is one run of the pipeline.
type Config struct {
	// Sources are the IDX files to classify (images, and labels if known).
	Sources []tensor.Source
	// Output receives metrics.json, predictions.csv, confusion.png, failed.jsonl.
	Output string
	// Model is ModelMLP or ModelKNN.
	Model string
	// MLP is the model file of ModelMLP.
	MLP string
	// Reference is the labelled training set of ModelKNN.
	Reference tensor.Source
	KNN       tensor.KNNParams
	// Batching groups input batches for the model (RunInference).
	Batching batch.Params
	// Steps are passed to every step (the backend selector).
	Steps []step.Option
}

// imageDims is the shape of Fashion-MNIST: 28x28 images, 10 classes.
var imageDims = []int{784, 256, 128, 10}

// Build adds the pipeline to s.
//
//	IDX files -> decode -> standardize (x/255) -> RunInference(mlp) or knn(side input: training set) --> report
//	failures of every step ----------------------------------------------------------------------------'
func Build(s beam.Scope, cfg Config) {
	sources := beam.CreateList(s, cfg.Sources)
	raw, decodeFailed := tensor.DecodeIDXFiles(s, sources, cfg.Steps...)
	beam.ParDo0(s, &countRowsFn{}, raw)
	rows, stdFailed := tensor.StandardizeRows(s, raw, tensor.Scaler{Mode: tensor.ScaleUnit}, cfg.Steps...)

	var preds, modelFailed beam.PCollection
	switch cfg.Model {
	case ModelKNN:
		rs := s.Scope("reference")
		refRaw, refDecodeFailed := tensor.DecodeIDXFiles(rs, beam.Create(rs, cfg.Reference), cfg.Steps...)
		ref, refStdFailed := tensor.StandardizeRows(rs, refRaw, tensor.Scaler{Mode: tensor.ScaleUnit}, cfg.Steps...)
		beam.ParDo0(rs, failOnReferenceError, beam.Flatten(rs, refDecodeFailed, refStdFailed))
		preds, modelFailed = tensor.KNNClassify(s, rows, ref, cfg.KNN, cfg.Steps...)
	default:
		h := inference.MLPHandler{Path: cfg.MLP, Dims: imageDims}
		preds, modelFailed = inference.RunInference(s, rows, h, cfg.Batching, cfg.Steps...)
	}

	failed := beam.Flatten(s, decodeFailed, stdFailed, modelFailed)
	rep := s.Scope("report")
	beam.ParDo0(rep, &reportFn{Output: cfg.Output, Sources: len(cfg.Sources), Stub: stubSteps(cfg)},
		beam.CoGroupByKey(rep, beam.AddFixedKey(rep, preds), beam.AddFixedKey(rep, failed)))
}

// stubSteps returns the steps of the pipeline of cfg that run their
// stand-ins: its outputs are then not results, and say so.
func stubSteps(cfg Config) []string {
	names := []string{tensor.StepDecode, tensor.StepStandardize, tensor.StepMLP}
	if cfg.Model == ModelKNN {
		names[2] = tensor.StepKNN
	}
	var out []string
	for _, n := range names {
		if step.Resolve(n, cfg.Steps...).Impl == backend.Stub {
			out = append(out, n)
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

func (f *countRowsFn) Setup() { f.rows = beam.NewCounter(step.Namespace, "records_decoded") }

func (f *countRowsFn) ProcessElement(ctx context.Context, b tensor.Batch) {
	f.rows.Inc(ctx, int64(b.Rows))
}

func init() {
	register.DoFn2x0[context.Context, tensor.Batch](&countRowsFn{})
	register.Function1x1(failOnReferenceError)
	register.DoFn4x1[context.Context, int, func(*tensor.Predictions) bool, func(*step.Failure) bool, error](&reportFn{})
	register.Iter1[tensor.Predictions]()
	register.Iter1[step.Failure]()
}

// discoverSources returns the image files of dir (or dir itself if it is an
// IDX file): every *images-idx3-ubyte* file, paired with the
// *labels-idx1-ubyte* file of the same prefix when there is one.
func discoverSources(input string, batchRows int) ([]tensor.Source, error) {
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
		src := tensor.Source{Images: img, BatchRows: batchRows, Height: 28, Width: 28}
		lbl := strings.Replace(img, "images-idx3-ubyte", "labels-idx1-ubyte", 1)
		if _, err := os.Stat(lbl); err == nil {
			src.Labels = lbl
		}
		out = append(out, src)
	}
	return out, nil
}

// trainingSet returns the Source of the training set in dir, or an error
// that says how to get it.
func trainingSet(dir string, batchRows int) (tensor.Source, error) {
	src := tensor.Source{Images: filepath.Join(dir, "train-images-idx3-ubyte.gz"),
		Labels: filepath.Join(dir, "train-labels-idx1-ubyte.gz"), BatchRows: batchRows, Height: 28, Width: 28}
	for _, f := range []string{src.Images, src.Labels} {
		if _, err := os.Stat(f); err != nil {
			return src, fmt.Errorf("--model=knn needs the Fashion-MNIST training set as its reference, and %s is missing.\n"+
				"Install it with 'apt-get install dataset-fashion-mnist' (Debian; files in /usr/share/datasets/fashion-mnist),\n"+
				"or download train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz from\n"+
				"https://github.com/zalandoresearch/fashion-mnist (data/fashion) and pass --data_dir=DIR", f)
		}
	}
	return src, nil
}
