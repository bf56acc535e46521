// Command train trains the Fashion-MNIST classifier of the fashion pipeline.
//
// The classifier is an MLP 784-256-128-10 (ReLU, softmax) trained with
// Adam, in pure Go, deterministic for a given seed on a given machine, and
// resumable from checkpoints.
//
// Inputs are scaled by x/255 (tensor.Scaler{Mode: "unit"}), so the model
// file needs no fitted statistics: the pipeline scales pixels the same way.
//
// It reproduces pipelines/fashion/data/mlp-784-256-128-10.bgmlp; see
// pipelines/fashion/data/README.md for the exact command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/beamgpu/beamgpu/transforms/tensor/train"
)

const usage = `Usage: train [flags]

Trains the Fashion-MNIST classifier (an MLP of sizes --dims, ReLU hidden
layers, softmax output) on the 60,000 training images with Adam, then
reports its accuracy on the 10,000 test images and writes the model file
(format: package transforms/tensor, "BGMLP" version 1, SHA-256 checked).

Pixels are scaled to 0..1 (x/255) before training; the pipeline applies the
same scaling before inference, so no statistics are stored with the model.

Training is deterministic for a given --seed on a given machine, and
resumable: with --checkpoint_dir, a checkpoint is written after every epoch
(and when the command is interrupted with Ctrl-C or SIGTERM), and a new run
with the same flags resumes from the newest valid checkpoint there. A run
that resumes gives bitwise the same model as one that does not.

The test-set accuracy printed after each epoch is for information: the
shipped model was trained for a fixed number of epochs, with no selection
on the test set.

Flags:
`

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		dataDir   = flag.String("data_dir", "/usr/share/datasets/fashion-mnist", "directory holding train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz")
		ckptDir   = flag.String("checkpoint_dir", "", "directory for checkpoints; a run resumes from the newest valid one there (empty: no checkpoints)")
		epochs    = flag.Int("epochs", 30, "passes over the training set")
		batchSize = flag.Int("batch_size", 128, "examples per Adam step")
		lr        = flag.Float64("lr", 0.001, "Adam learning rate (peak, with --schedule=cosine)")
		schedule  = flag.String("schedule", train.Cosine, "learning-rate schedule: constant or cosine (decays to 0 over --epochs)")
		seed      = flag.Uint64("seed", 1, "random seed of the initial weights and of the shuffles")
		dims      = flag.String("dims", "784,256,128,10", "layer sizes, input first, classes last")
		out       = flag.String("out", "mlp-784-256-128-10.bgmlp", "model file to write (atomically)")
		minAcc    = flag.Float64("min_accuracy", 0, "fail (exit 1, model not written) if the test accuracy is below this")
	)
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), usage)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (see --help)", flag.Args())
	}
	var sizes []int
	for _, s := range strings.Split(*dims, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--dims %q: %v", *dims, err)
		}
		sizes = append(sizes, v)
	}

	load := func(split string) (tensor.Batch, error) {
		img := filepath.Join(*dataDir, split+"-images-idx3-ubyte.gz")
		if _, err := os.Stat(img); errors.Is(err, fs.ErrNotExist) {
			return tensor.Batch{}, fmt.Errorf("%s not found: the Fashion-MNIST data set is missing; install it with `apt-get install dataset-fashion-mnist` (Debian, files in /usr/share/datasets/fashion-mnist) or download the four *-ubyte.gz files from https://github.com/zalandoresearch/fashion-mnist (data/fashion) and pass their directory with --data_dir", img)
		}
		b, err := tensor.ReadDataset(img, filepath.Join(*dataDir, split+"-labels-idx1-ubyte.gz"))
		if err != nil {
			return tensor.Batch{}, err
		}
		return tensor.Scaler{Mode: tensor.ScaleUnit}.Apply(b)
	}
	trainSet, err := load("train")
	if err != nil {
		return err
	}
	testSet, err := load("t10k")
	if err != nil {
		return err
	}
	fmt.Printf("training %s on %d images (%s), testing on %d\n", *dims, trainSet.Rows, *dataDir, testSet.Rows)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	m, res, err := train.Run(ctx, train.Config{
		Dims:          sizes,
		Epochs:        *epochs,
		BatchSize:     *batchSize,
		LR:            *lr,
		Schedule:      *schedule,
		Seed:          *seed,
		CheckpointDir: *ckptDir,
		Progress:      os.Stdout,
	}, trainSet, testSet)
	if err != nil {
		if res.Checkpoint != "" {
			return fmt.Errorf("%w (checkpoint %s written: run again with the same flags to resume)", err, res.Checkpoint)
		}
		return err
	}
	p, err := m.Predict(testSet)
	if err != nil {
		return err
	}
	acc, n := p.Accuracy()
	fmt.Printf("test accuracy %.4f on %d images; %d epochs, %d steps, %s in this run (%.0f examples/s)\n",
		acc, n, res.Epochs, res.Steps, time.Since(start).Round(time.Second), res.ExamplesPerSec)
	if acc < *minAcc {
		return fmt.Errorf("test accuracy %.4f is below --min_accuracy %.4f: model not written", acc, *minAcc)
	}
	if err := tensor.SaveMLP(*out, m); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", *out)
	return nil
}
