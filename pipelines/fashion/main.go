// Command fashion classifies Fashion-MNIST images on Apache Beam with
// beamgpu's tensor steps: an MLP through RunInference (the default, with the
// model trained by ./train and shipped in data/) or brute-force
// k-nearest-neighbours against the training set.
//
// With no flags it classifies the embedded 10,000-image test set on Beam's
// local runner (prism) and writes to out/fashion:
//
//	metrics.json     count, accuracy, per-class precision and recall, confusion matrix
//	predictions.csv  index,label,predicted (label empty when unknown)
//	confusion.png    the confusion matrix as a picture
//	failed.jsonl     one failure per line: input, step, reason
package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/pipelines/internal/job"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/launch"
	_ "github.com/beamgpu/beamgpu/stubs/tensor"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

//go:embed data/t10k-images-idx3-ubyte.gz data/t10k-labels-idx1-ubyte.gz data/mlp-784-256-128-10.bgmlp
var embedded embed.FS

const shippedModel = "mlp-784-256-128-10.bgmlp"

var (
	input     = flag.String("input", "", "an IDX images file, or a directory of *images-idx3-ubyte* files (with *labels-idx1-ubyte* files of the same prefix when labels are known); empty: the embedded Fashion-MNIST test set")
	output    = flag.String("output", defaultOutput, "output directory for metrics.json, predictions.csv, confusion.png and failed.jsonl (a run with stub steps: "+stubOutput+")")
	model     = flag.String("model", ModelMLP, "classifier: mlp (the shipped or --model_path model, through RunInference) or knn (k-nearest neighbours against the training set)")
	modelPath = flag.String("model_path", "", "MLP model file written by ./pipelines/fashion/train; empty: the shipped "+shippedModel)
	dataDir   = flag.String("data_dir", "/usr/share/datasets/fashion-mnist", "directory of the training set (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz), the reference of --model=knn")
	k         = flag.Int("k", 5, "neighbours of --model=knn")
	weights   = flag.String("knn_weights", tensor.WeightUniform, "vote weighting of --model=knn: uniform, or distance (1/distance)")
	batchRows = flag.Int("batch_rows", 256, "rows per batch out of the decoder")
	maxBatch  = flag.Int("max_batch_rows", 4096, "most rows per model call (RunInference groups batches adaptively up to this)")
	strict    = flag.Bool("strict", false, "exit with status 1 if any record failed (failures are always listed in failed.jsonl)")
	progress  = flag.Duration("progress", 10*time.Second, "interval of progress lines while the pipeline runs (0: none)")

	backendFlags backend.Flags
	launchFlags  launch.Flags
)

var ownFlags = []string{"input", "output", "model", "model_path", "data_dir", "k", "knn_weights", "batch_rows", "max_batch_rows",
	"strict", "progress", "backend", "backend_override", "explain_json", "gpu_executor",
	"plan_out", "right_fitting", "worker_accelerator", "gpu_accelerator", "gpu_processes", "skip_gpu_rules"}

func init() {
	backendFlags.Register(flag.CommandLine)
	launchFlags.Register(flag.CommandLine)
	flag.Usage = func() {
		w := flag.CommandLine.Output()
		fmt.Fprint(w, `fashion: classify Fashion-MNIST images on Apache Beam (MLP or k-nearest neighbours).

Usage: fashion [--input=PATH] [--output=DIR] [--model=mlp|knn] [--backend=auto|cpu|gpu|stub] [Beam flags]

With no --input it classifies the embedded 10,000-image test set with the shipped MLP.
It runs on Beam's local runner (prism) unless --runner says otherwise.

Flags of this pipeline:
`)
		for _, name := range ownFlags {
			f := flag.Lookup(name)
			fmt.Fprintf(w, "  --%s (default %q)\n      %s\n", f.Name, f.DefValue, f.Usage)
		}
		fmt.Fprint(w, "\nBeam's own flags (--runner, --endpoint, --job_name, ...) are accepted too.\nTo train a model: go run ./pipelines/fashion/train --help\n")
	}
}

func main() {
	flag.Parse()
	beam.Init()
	code, err := run(context.Background(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fashion:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, out io.Writer) (int, error) {
	// The launch configuration (runner, Dataflow GPU rules) is checked
	// before anything is read or built.
	if err := launchFlags.Validate(); err != nil {
		return 2, err
	}
	if launch.RemoteWorkers() && launchFlags.PlanOut == "" {
		// The decoder and the model loader read local files: a remote
		// worker would not find them. Plans are fine.
		t, _ := launch.Runner()
		return 2, fmt.Errorf("--runner=%s: the fashion pipeline reads its images and model from local files, which remote workers cannot reach; it runs on prism (the default) or with loopback workers, and --plan_out plans it for Dataflow", t)
	}
	cfg, cleanup, err := configFromFlags()
	defer cleanup()
	if err != nil {
		return 2, err
	}
	sel, err := job.Selector(&backendFlags, &launchFlags)
	if err != nil {
		return 2, err
	}
	sum, err := execute(ctx, cfg, sel, out)
	if err != nil {
		return 1, err
	}
	if *strict && sum.Failures > 0 {
		return 1, fmt.Errorf("--strict: %d failures (%d of %d records failed); see %s", sum.Failures, sum.Failed, sum.In, job.Join(cfg.Output, job.FailedFile))
	}
	return 0, nil
}

// configFromFlags resolves the inputs, extracting the embedded test set and
// model where none is given, and checks the output directory.
func configFromFlags() (Config, func(), error) {
	cleanup := func() {}
	cfg := Config{Output: outputDir(), Model: *model, MLP: *modelPath,
		KNN:      tensor.KNNParams{K: *k, Weights: *weights, Classes: len(ClassNames)},
		Batching: batch.Params{MinBatchSize: 1, MaxBatchSize: max(1, *maxBatch/max(1, *batchRows))}}
	if *batchRows <= 0 || *maxBatch <= 0 {
		return cfg, cleanup, fmt.Errorf("--batch_rows=%d --max_batch_rows=%d: want positive numbers", *batchRows, *maxBatch)
	}
	switch cfg.Model {
	case ModelMLP, ModelKNN:
	default:
		return cfg, cleanup, fmt.Errorf("--model=%s: want mlp or knn", cfg.Model)
	}
	if cfg.Model == ModelKNN && *k <= 0 {
		return cfg, cleanup, fmt.Errorf("--k=%d: want a positive number of neighbours", *k)
	}
	if *weights != tensor.WeightUniform && *weights != tensor.WeightDistance {
		return cfg, cleanup, fmt.Errorf("--knn_weights=%s: want uniform or distance", *weights)
	}
	if err := job.CheckWritable("output", cfg.Output); err != nil {
		return cfg, cleanup, err
	}
	var tmp string
	if *input == "" || (cfg.Model == ModelMLP && cfg.MLP == "") {
		var err error
		if tmp, err = job.Extract(embedded, "data"); err != nil {
			return cfg, cleanup, err
		}
		cleanup = func() { os.RemoveAll(tmp) }
	}
	in := *input
	if in == "" {
		in = filepath.Join(tmp, "t10k-images-idx3-ubyte.gz")
		slog.Info("fashion: no --input: using the embedded Fashion-MNIST test set")
	}
	if cfg.Model == ModelMLP && cfg.MLP == "" {
		cfg.MLP = filepath.Join(tmp, shippedModel)
	}
	var err error
	if cfg.Sources, err = discoverSources(in, *batchRows); err != nil {
		return cfg, cleanup, err
	}
	if cfg.Model == ModelKNN {
		if cfg.Reference, err = trainingSet(*dataDir, *batchRows); err != nil {
			return cfg, cleanup, err
		}
	} else if _, err := tensor.LoadMLP(cfg.MLP); err != nil {
		return cfg, cleanup, fmt.Errorf("--model_path: %w", err)
	}
	return cfg, cleanup, nil
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

// execute builds and runs the pipeline of cfg, prints the summary and checks
// that the record counts reconcile.
func execute(ctx context.Context, cfg Config, sel *backend.Selector, out io.Writer) (summary, error) {
	cfg.Steps = append(cfg.Steps, step.Using(sel))
	m, took, launched, err := job.Run(ctx, "fashion", sel, backendFlags.Explain, *progress, launchFlags, func(s beam.Scope) { Build(s, cfg) })
	if err != nil {
		return summary{}, err
	}
	if launched.Result == nil {
		return summary{}, job.Launched(out, launched)
	}
	sum := summary{Metrics: m, Elapsed: took, Output: cfg.Output,
		In:        int(m.Counters["records_decoded"] + m.Counters["records_rejected"]),
		Predicted: int(m.Counters["records_predicted"]), Failed: int(m.Counters["records_failed"]),
		Failures: int(m.Counters["failures"])}
	if n := m.Counters["records_labelled"]; n > 0 {
		acc := float64(m.Counters["records_correct"]) / float64(n)
		sum.Accuracy = &acc
	}
	sum.PrintSteps(out, "rows")
	acc := "n/a (no labels)"
	if sum.Accuracy != nil {
		acc = fmt.Sprintf("%.4f", *sum.Accuracy)
	}
	fmt.Fprintf(out, "records: %d in, %d predicted, %d failed; %d failures in %s; accuracy %s; %s in %s; outputs in %s\n",
		sum.In, sum.Predicted, sum.Failed, sum.Failures, job.FailedFile, acc, cfg.Model, sum.Elapsed.Round(time.Millisecond), cfg.Output)
	printStub(out, m)
	if sum.In != sum.Predicted+sum.Failed {
		return sum, fmt.Errorf("counts do not reconcile: %d records in, %d predicted + %d failed", sum.In, sum.Predicted, sum.Failed)
	}
	return sum, nil
}
