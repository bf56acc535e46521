// Command fashion classifies Fashion-MNIST images on Apache Beam.
//
// It decodes and standardises the images with beamgpu's tensor steps and
// classifies them through RunInference (transforms/inference) and
// Classify, with one of three handlers: an MLP (the default, with the model
// trained by ./train and shipped in data/), brute-force
// k-nearest-neighbours against the training set, or an ONNX model (the CNN
// shipped in data/, or --model_path).
//
// With no flags it classifies the embedded 10,000-image test set on Beam's
// local runner (prism) and writes to out/fashion. Inputs, the model and the
// training set are read through Beam's filesystems, so on Dataflow they are
// gs:// paths; the embedded data (embedded://...) is read from the binary,
// which the workers run too. It writes:
//
//	metrics.json     count, accuracy, per-class precision and recall, confusion matrix
//	predictions.csv  index,label,predicted (label empty when unknown)
//	confusion.png    the confusion matrix as a picture
//	failed.jsonl     one failure per line: input, step, reason
package main

import (
	"bytes"
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/pipelines/job"
	"github.com/beamgpu/beamgpu/runtime/backend"
	_ "github.com/beamgpu/beamgpu/stubs/onnx"
	_ "github.com/beamgpu/beamgpu/stubs/tensor"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/files"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

//go:embed data/t10k-images-idx3-ubyte.gz data/t10k-labels-idx1-ubyte.gz data/mlp-784-256-128-10.bgmlp data/cnn-fashion.onnx
var embedded embed.FS

const (
	shippedModel = "mlp-784-256-128-10.bgmlp"
	shippedONNX  = "cnn-fashion.onnx"
)

// embeddedScheme names the data embedded in this binary: the test set and
// the shipped model. Every worker runs this binary, so embedded:// paths
// are readable wherever the pipeline runs, Dataflow included.
const embeddedScheme = "embedded://"

// Paths of the embedded data.
const (
	embeddedImages = embeddedScheme + "t10k-images-idx3-ubyte.gz"
	embeddedModel  = embeddedScheme + shippedModel
	embeddedONNX   = embeddedScheme + shippedONNX
)

func embeddedPath(name string) string { return "data/" + strings.TrimPrefix(name, embeddedScheme) }

// embeddedFS serves embedded:// paths (package files) from the data embedded
// in this binary. init registers it, in the launcher and on every worker;
// other paths go to Beam's filesystems (local, gs://, ...).
type embeddedFS struct{}

func (embeddedFS) OpenRead(_ context.Context, name string) (io.ReadCloser, error) {
	f, err := embedded.Open(embeddedPath(name))
	if err != nil {
		return nil, fmt.Errorf("%s: not embedded in this binary: %w", name, err)
	}
	return f, nil
}

func (embeddedFS) OpenAt(_ context.Context, name string) (files.File, error) {
	b, err := fs.ReadFile(embedded, embeddedPath(name))
	if err != nil {
		return nil, fmt.Errorf("%s: not embedded in this binary: %w", name, err)
	}
	return bytesFile{bytes.NewReader(b)}, nil
}

// bytesFile is an embedded file, read at offsets.
type bytesFile struct{ *bytes.Reader }

func (bytesFile) Close() error { return nil }

func (embeddedFS) List(_ context.Context, glob string) ([]string, error) {
	m, err := fs.Glob(embedded, embeddedPath(glob))
	for i := range m {
		m[i] = embeddedScheme + strings.TrimPrefix(m[i], "data/")
	}
	return m, err
}

var (
	input      = flag.String("input", "", "an IDX images file, or a directory (or gs:// prefix) of *images-idx3-ubyte* files (with *labels-idx1-ubyte* files of the same prefix when labels are known); empty: the embedded Fashion-MNIST test set ("+embeddedImages+")")
	output     = flag.String("output", defaultOutput, "output directory (or gs:// prefix) for metrics.json, predictions.csv, confusion.png and failed.jsonl (a run with stub steps: "+stubOutput+")")
	model      = flag.String("model", ModelMLP, "classifier, through RunInference: mlp (the shipped or --model_path model), knn (k-nearest neighbours against the training set) or onnx (the shipped CNN or a --model_path ONNX model taking [N,1,28,28] pixels/255)")
	modelPath  = flag.String("model_path", "", "model file (local or gs://): with --model=mlp one written by ./pipelines/fashion/train (empty: the shipped "+embeddedModel+"); with --model=onnx an ONNX model (empty: the shipped "+embeddedONNX+")")
	dataDir    = flag.String("data_dir", "/usr/share/datasets/fashion-mnist", "directory (or gs:// prefix) of the training set (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz), the reference of --model=knn")
	k          = flag.Int("k", 5, "neighbours of --model=knn")
	weights    = flag.String("knn_weights", tensor.WeightUniform, "vote weighting of --model=knn: uniform, or distance (1/distance)")
	batchRows  = flag.Int("batch_rows", 256, "rows per batch out of the decoder")
	maxBatch   = flag.Int("max_batch_rows", 4096, "most rows per model call (RunInference groups rows adaptively up to this; an ONNX model's calls take 256 at most)")
	allowEmpty = flag.Bool("allow_empty", false, "accept an input without records (an empty test set) as a success; without it such a run exits with status 1")
	strict     = flag.Bool("strict", false, "exit with status 1 if any record failed (failures are always listed in failed.jsonl)")

	// flags are package job's: backend selection, the launcher's, --progress.
	flags job.Flags
)

func init() {
	files.Register(strings.TrimSuffix(embeddedScheme, "://"), embeddedFS{})
	flags.Register(flag.CommandLine)
}

func main() { job.Main(pipeline(configFromFlags, new(summary))) }

// run runs the pipeline of the (parsed) flags, prints its summary to out
// and returns the exit status.
func run(ctx context.Context, out io.Writer) (int, error) {
	return job.RunMain(ctx, pipeline(configFromFlags, new(summary)), out)
}

// execute builds and runs the pipeline of cfg with sel, prints the summary
// and checks that the record counts reconcile.
func execute(ctx context.Context, cfg Config, sel *backend.Selector, out io.Writer) (summary, error) {
	var sum summary
	p := pipeline(func() (Config, error) { return cfg, nil }, &sum)
	p.Steps = func() []step.Any { return pipelineSteps(cfg.Model) }
	_, err := job.Execute(ctx, p, sel, out)
	return sum, err
}

// pipeline is the Fashion-MNIST pipeline of the configuration configure
// returns; a run's summary goes to sum.
func pipeline(configure func() (Config, error), sum *summary) job.Pipeline {
	var cfg Config
	return job.Pipeline{
		Name:  "fashion",
		Usage: usage,
		OwnFlags: []string{"input", "output", "model", "model_path", "data_dir", "k", "knn_weights", "batch_rows", "max_batch_rows",
			"strict", "allow_empty"},
		Flags:       &flags,
		Steps:       func() []step.Any { return pipelineSteps(*model) },
		WorkerPaths: workerPaths,
		Build: func(ctx context.Context, s beam.Scope, r *job.Run) error {
			c, err := configure()
			if err != nil {
				return err
			}
			c = c.withFilesRun()
			// The output directory is claimed once the inputs are known
			// (a run never removes or overwrites one of them).
			if err := c.output(*input).Claim(ctx, r); err != nil {
				return err
			}
			c.Steps = append(c.Steps, r.Options()...)
			cfg = c
			return Build(s, cfg)
		},
		Report: func(_ context.Context, w io.Writer, res *job.Result) error {
			var err error
			*sum, err = report(w, res, cfg)
			return err
		},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `fashion: classify Fashion-MNIST images on Apache Beam (MLP, k-nearest neighbours or an ONNX model).

Usage: fashion [--input=PATH] [--output=DIR] [--model=mlp|knn|onnx] [--backend=auto|cpu|gpu|stub] [Beam flags]

With no --input it classifies the embedded 10,000-image test set with the shipped MLP.
It runs on Beam's local runner (prism) unless --runner says otherwise.
Steps (for --backend_override): %s with --model=mlp, %s with --model=knn, %s with --model=onnx.
On Dataflow, --input, --output, --model_path and --data_dir are gs:// paths (the embedded data needs none).
To train a model: go run ./pipelines/fashion/train --help
`, stepNames(ModelMLP), stepNames(ModelKNN), stepNames(ModelONNX))
}

// stepNames lists the steps of the pipeline of model.
func stepNames(model string) string {
	var names []string
	for _, s := range pipelineSteps(model) {
		names = append(names, s.Name())
	}
	return strings.Join(names, ", ")
}

// workerPaths are the paths the workers read and write: gs:// paths, or
// the data embedded in the binary they run. Plans are not held to it.
func workerPaths() []job.Path {
	paths := []job.Path{{Flag: "input", Path: orDefault(*input, embeddedImages)}, {Flag: "output", Path: *output}}
	switch *model {
	case ModelMLP:
		paths = append(paths, job.Path{Flag: "model_path", Path: orDefault(*modelPath, embeddedModel)})
	case ModelKNN:
		paths = append(paths, job.Path{Flag: "data_dir", Path: *dataDir})
	case ModelONNX:
		paths = append(paths, job.Path{Flag: "model_path", Path: orDefault(*modelPath, embeddedONNX)})
	}
	return paths
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// configFromFlags resolves the inputs (the embedded test set and model where
// none is given), checks the model where it can be read here, and checks the
// output directory.
func configFromFlags() (Config, error) {
	cfg := Config{Output: outputDir(), Model: *model, MLP: *modelPath, K: *k, Weights: *weights,
		Batching: batch.Params{MinBatchSize: 1, MaxBatchSize: *maxBatch}}
	if *batchRows <= 0 || *maxBatch <= 0 {
		return cfg, fmt.Errorf("--batch_rows=%d --max_batch_rows=%d: want positive numbers", *batchRows, *maxBatch)
	}
	switch cfg.Model {
	case ModelMLP, ModelKNN, ModelONNX:
	default:
		return cfg, fmt.Errorf("--model=%s: want mlp, knn or onnx", cfg.Model)
	}
	if cfg.Model == ModelKNN && *k <= 0 {
		return cfg, fmt.Errorf("--k=%d: want a positive number of neighbours", *k)
	}
	if *weights != tensor.WeightUniform && *weights != tensor.WeightDistance {
		return cfg, fmt.Errorf("--knn_weights=%s: want uniform or distance", *weights)
	}
	cfg.RunID, cfg.Started, cfg.Args, cfg.AllowEmpty = jobfiles.NewRunID(), time.Now(), os.Args[1:], *allowEmpty
	in := *input
	if in == "" {
		in = embeddedImages
		slog.Info("fashion: no --input: using the embedded Fashion-MNIST test set")
	}
	if cfg.Model == ModelMLP && cfg.MLP == "" {
		cfg.MLP = embeddedModel
	}
	if cfg.Model == ModelONNX {
		cfg.MLP, cfg.Batching.MaxBatchSize = orDefault(*modelPath, embeddedONNX), min(*maxBatch, maxONNXBatch)
	}
	var err error
	if cfg.Sources, err = discoverSources(in, *batchRows); err != nil {
		return cfg, err
	}
	switch {
	case cfg.Model == ModelONNX:
		if cfg.Handler, err = inference.ONNX(context.Background(), cfg.MLP); err != nil {
			return cfg, fmt.Errorf("--model_path: %w", err)
		}
	case cfg.Model == ModelKNN:
		if cfg.Reference, err = trainingSet(*dataDir, *batchRows); err != nil {
			return cfg, err
		}
	case strings.Contains(cfg.MLP, "://") && !strings.HasPrefix(cfg.MLP, embeddedScheme) && flags.Launch.PlanOut != "":
		// A plan reads nothing remote: it needs no credentials.
	default:
		if _, err := tensor.LoadMLP(cfg.MLP); err != nil {
			return cfg, fmt.Errorf("--model_path: %w", err)
		}
	}
	return cfg, nil
}

// summary is the end-of-run report.
type summary struct {
	job.Metrics
	In, Predicted, Failed int
	// Failures counts the lines of failed.jsonl: failed records and files.
	Failures int
	Accuracy *float64
	Elapsed  time.Duration
	Output   string
}

// report prints the summary of a run of cfg, checks that the record counts
// reconcile, and under --strict fails a run with a failure.
func report(w io.Writer, res *job.Result, cfg Config) (summary, error) {
	m := res.Metrics
	sum := summary{Metrics: m, Elapsed: res.Elapsed, Output: cfg.Output,
		In:        int(m.Counters["records_decoded"] + m.Counters["records_rejected"]),
		Predicted: int(m.Counters["records_predicted"]), Failed: int(m.Counters["records_failed"]),
		Failures: int(m.Counters["failures"])}
	if n := m.Counters["records_labelled"]; n > 0 {
		acc := float64(m.Counters["records_correct"]) / float64(n)
		sum.Accuracy = &acc
	}
	sum.PrintSteps(w, "rows")
	acc := "n/a (no labels)"
	if sum.Accuracy != nil {
		acc = fmt.Sprintf("%.4f", *sum.Accuracy)
	}
	fmt.Fprintf(w, "records: %d in, %d predicted, %d failed; %d failures in %s; accuracy %s; %s in %s; outputs in %s\n",
		sum.In, sum.Predicted, sum.Failed, sum.Failures, jobfiles.FailedFile, acc, cfg.Model, sum.Elapsed.Round(time.Millisecond), cfg.Output)
	if sum.In == 0 && sum.Failures == 0 && !cfg.AllowEmpty {
		return sum, fmt.Errorf("no records: the input holds no images (an empty test set), so nothing was classified (--allow_empty accepts that)")
	}
	if sum.In != sum.Predicted+sum.Failed {
		return sum, fmt.Errorf("counts do not reconcile: %d records in, %d predicted + %d failed", sum.In, sum.Predicted, sum.Failed)
	}
	if *strict && sum.Failures > 0 {
		return sum, fmt.Errorf("--strict: %d failures (%d of %d records failed); see %s", sum.Failures, sum.Failed, sum.In, jobfiles.Join(cfg.Output, jobfiles.FailedFile))
	}
	return sum, nil
}
