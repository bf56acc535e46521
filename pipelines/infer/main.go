// Command infer runs any ONNX model over .npy arrays, JSONL rows or a set of
// images on Apache Beam, and writes its outputs, rows in the input's order.
//
//	go run ./pipelines/infer --model=M.onnx --input=X.npy --output=DIR [--backend=auto|cpu|gpu|stub]
//	go run ./pipelines/infer --model=M.onnx --input=input_ids=ids.npy,attention_mask=mask.npy --output=DIR
//	go run ./pipelines/infer --model=M.onnx --input=rows.jsonl [--max_batch_tokens=N] [--pad=NAME=V] --output=DIR
//	go run ./pipelines/infer --model=M.onnx --input='photos/*.jpg' --resize=224x224 \
//	    --mean=0.485,0.456,0.406 --std=0.229,0.224,0.225 --labels_file=labels.txt --top_k=5 --output=DIR
//
// A .npy input's rows (axis 0) feed the model's input; a model of several
// inputs takes one .npy per input (name=file, the same rows), or a JSONL
// file, one object a line with a field per input, whose rows may differ in
// length (sequences): they are batched by length and padded (sequences.go);
// images are decoded (PNG, JPEG), resized bilinearly, scaled to [0,1],
// normalized per channel and laid out NCHW or NHWC. Paths are local or any
// Beam filesystem's (gs://). It writes, in --output and nowhere else:
//
//	predictions.npy    the model's first output, one row per input row, in input order;
//	                   a failed row is NaN (zeros for an integer output)
//	predictions.jsonl  instead of predictions.npy, where the rows of the first output differ in
//	                   shape (JSONL of sequences) or the model's outputs' shapes come from the
//	                   data (detections):
//	                   {"row", "key" (images), "predicted", "outputs": {name: {"shape", "values"}}}
//	                   per row, in order, every output;
//	                   images: {"row", "key" (the image's path), "predicted"} per row, in order
//	classes.jsonl      with --labels_file or --top_k: {"row", "key", "top": [{"index", "label", "score"}]}
//	                   per predicted row, in order
//	summary.json       rows in, predicted, failed (in = predicted + failed), backend per step, elapsed;
//	                   sequences: tokens, padded tokens and padding's share
//	failed.jsonl       one failure per line: input (row "#index", or the image's path), step, reason
//
// Inputs are checked before they cost memory: a .npy whose header does not
// describe its file (more rows than the file holds, or bytes after the
// array) is an error before anything runs; an image whose header declares
// more than --max_image_bytes decoded is its row's failure; a symbolic link
// the glob matches whose target is gone is its row's failure. A model call
// that fails is retried in halves down to single rows, so that only the
// rows that fail alone fail. --check_finite fails rows holding NaN or
// infinity; --allow_empty accepts an input of no rows. See docs/infer.md
// and docs/reliability.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/pipelines/internal/jobfiles"
	"github.com/beamgpu/beamgpu/pipelines/internal/lines"
	"github.com/beamgpu/beamgpu/pipelines/job"
	"github.com/beamgpu/beamgpu/runtime/backend"
	_ "github.com/beamgpu/beamgpu/stubs/onnx"
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/files"
)

var (
	model     = flag.String("model", "", "the ONNX model file (local or gs://); required")
	input     = flag.String("input", "", "a .npy array (rows along axis 0 feed the model's input); one .npy per model input, name=file.npy,name2=file2.npy (the same rows); a JSONL file (.jsonl, .jsonl.gz), one object a line with a field per model input (nested arrays of numbers; rows may differ in length); or a glob of PNG/JPEG images ('dir/*.png', gs://b/x/*.jpg; a directory means dir/*); required")
	output    = flag.String("output", "out/infer", "output directory (or gs:// prefix): predictions.npy, predictions.jsonl (images), classes.jsonl (labels), summary.json, failed.jsonl")
	labels    = flag.String("labels_file", "", "labels file, one label a line, for the first output's scores: writes classes.jsonl (top --top_k classes per row)")
	topK      = flag.Int("top_k", 0, "classes per row in classes.jsonl (0: 5 with --labels_file, else no classes.jsonl)")
	resize    = flag.String("resize", "", "images: HEIGHTxWIDTH to resize to (bilinear); empty: the model input's height and width")
	mean      = flag.String("mean", "0", "images: per-channel mean, comma-separated, subtracted after scaling to [0,1] (one value: every channel)")
	std       = flag.String("std", "1", "images: per-channel standard deviation, comma-separated, divided by after the mean (one value: every channel)")
	layout    = flag.String("layout", LayoutNCHW, "images: the model input's layout, NCHW or NHWC")
	channels  = flag.Int("channels", 0, "images: 1 (gray) or 3 (RGB); 0: the model input's channel dimension, else 3")
	shardRows = flag.Int("shard_rows", 1024, "rows per read shard (the unit of parallelism; a worker holds one shard's outputs at most)")
	minBatch  = flag.Int("min_batch_size", 1, "fewest rows per model call (but a bundle's last); equal to --max_batch_size: batches of that fixed size")
	maxBatch  = flag.Int("max_batch_size", 256, "most rows per model call (batches adapt between --min_batch_size and this)")
	strict    = flag.Bool("strict", false, "exit with status 1 if any row failed (failures are always listed in failed.jsonl)")
	pads      = flag.String("pad", "", "sequences (JSONL, several .npy): the value rows are padded with, per model input, name=value,name2=value (default 0 for every input: BERT's padding id, attention mask and token type)")
	maxTokens = flag.Int("max_batch_tokens", 0, "JSONL: the most rows x padded length per model call (0: no bound but --max_batch_size); a row longer than that alone is a call of its own")
	window    = flag.Int("sort_window", inference.DefaultLengthWindow, "JSONL: rows sorted by length together before they are cut into batches (so that a batch's rows have near lengths); a worker holds this many rows")
	callLimit = flag.Duration("call_timeout", inference.DefaultCallTimeout, "longest one model call may run on a worker's CPU, e.g. 90s or 30m: a call past it stops before the model's next node or Loop iteration and fails, its rows to failed.jsonl naming the node, and the run goes on (0: no limit; a Loop runs at most 2^24 iterations in any case)")
	memBudget = flag.String("memory_budget", "", "most memory one model call may allocate on a worker's CPU, e.g. 4GiB or 512MB: a call over it fails, its rows to failed.jsonl naming the node and the bytes, and the run goes on (empty: $"+onnx.EnvMemoryBudget+" where set, else the worker's memory available)")

	// Hostile or unusual inputs.
	maxImage    = flag.Int64("max_image_bytes", DefaultMaxImageBytes, "images: the largest decoded size an image may declare in its header (width x height x bytes a pixel; default an 8192x8192 RGBA image); a larger one is its row's failure, refused before decoding")
	checkFinite = flag.Bool("check_finite", false, "fail each row whose float input holds a NaN or an infinity, naming the first such element (off by default: it reads every input element once more, and some models take NaN as a value, such as a missing one)")
	allowEmpty  = flag.Bool("allow_empty", false, "accept an input without rows (a .npy of 0 rows, a glob matching no file) as a success; without it an empty .npy exits with status 1 (its outputs written) and a glob matching nothing with status 2")

	// flags are package job's: backend selection, the launcher's, --progress.
	flags job.Flags
)

func init() { flags.Register(flag.CommandLine) }

func main() { job.Main(pipeline(configFromFlags, new(summary))) }

// run runs the pipeline of the (parsed) flags, prints its summary to out
// and returns the exit status.
func run(ctx context.Context, out io.Writer) (int, error) {
	return job.RunMain(ctx, pipeline(configFromFlags, new(summary)), out)
}

// execute builds and runs the pipeline of cfg with sel and prints the summary.
func execute(ctx context.Context, cfg Config, sel *backend.Selector, out io.Writer) (summary, error) {
	var sum summary
	if cfg.RunID == "" {
		cfg.RunID = jobfiles.NewRunID()
	}
	_, err := job.Execute(ctx, pipeline(func(context.Context) (Config, error) { return cfg, nil }, &sum), sel, out)
	return sum, err
}

// pipeline is the pipeline of the configuration configure returns; a run's
// summary goes to sum.
func pipeline(configure func(context.Context) (Config, error), sum *summary) job.Pipeline {
	var cfg Config
	return job.Pipeline{
		Name:  "infer",
		Usage: usage,
		OwnFlags: []string{"model", "input", "output", "labels_file", "top_k", "resize", "mean", "std", "layout", "channels",
			"shard_rows", "min_batch_size", "max_batch_size", "strict",
			"max_image_bytes", "check_finite", "allow_empty", "call_timeout", "memory_budget", "pad", "max_batch_tokens", "sort_window"},
		Flags: &flags,
		Steps: job.Steps(onnxstep.StepRun),
		WorkerPaths: func() []job.Path {
			paths := []job.Path{{Flag: "model", Path: *model}, {Flag: "output", Path: *output}}
			for _, in := range splitInputs(*input) {
				paths = append(paths, job.Path{Flag: "input", Path: in.Path})
			}
			if *labels != "" {
				paths = append(paths, job.Path{Flag: "labels_file", Path: *labels})
			}
			return paths
		},
		Build: func(ctx context.Context, s beam.Scope, r *job.Run) error {
			c, err := configure(ctx)
			if err != nil {
				return err
			}
			c.Steps = append(c.Steps, r.Options()...)
			d, err := step.ResolveUse(onnxstep.StepRun, c.Handler.Use(), c.Steps...)
			if err != nil {
				return err
			}
			c.Impl = d.Impl
			if err := c.output().Claim(ctx, r); err != nil {
				return err
			}
			cfg = c
			return Build(ctx, s, cfg)
		},
		Report: func(ctx context.Context, w io.Writer, res *job.Result) error {
			var err error
			*sum, err = report(ctx, w, res, cfg, cfg.inputName())
			return err
		},
	}
}

func (c Config) inputName() string {
	switch {
	case len(c.NPYs) == 1:
		return c.NPYs[0].Path
	case len(c.NPYs) > 1:
		var s []string
		for _, n := range c.NPYs {
			s = append(s, n.Name+"="+n.Path)
		}
		return strings.Join(s, ",")
	case c.JSONL != nil:
		return c.JSONL.Path
	}
	return *input
}

func usage(w io.Writer) {
	fmt.Fprint(w, `infer: run an ONNX model over .npy arrays, JSONL rows or images on Apache Beam.

Usage: infer --model=M.onnx --input=X.npy|NAME=X.npy,...|ROWS.jsonl|'GLOB' [--output=DIR] [--backend=auto|cpu|gpu|stub] [flags] [Beam flags]

The rows of a .npy array (axis 0) feed the model's (only) input; their dtype and
shape must be the input's. A model of several inputs takes one .npy per input,
name=file (every input named, the same number of rows), or a JSONL file: one
object a line, a field per model input holding a (nested) array of numbers;
its rows may differ in length (sequences): they are sorted by length within
--sort_window rows, cut into batches of at most --max_batch_size rows and
--max_batch_tokens rows x padded length, padded with --pad (default 0) and
the outputs cut back to each row's length. A line that is not an object, lacks
a field or holds a wrong value fails its row, naming the file and line.
Images (PNG, JPEG) are decoded, resized (bilinear), scaled to [0,1],
normalized ((x-mean)/std per channel) and laid out NCHW or NHWC.
Writes in --output: predictions.npy (the first output, rows in input order;
failed rows NaN), or predictions.jsonl where the first output's rows differ
in shape (sequences, detections: every output of each row), predictions.jsonl
(images: row -> path),
classes.jsonl (with --labels_file/--top_k), summary.json and failed.jsonl.
Paths are local or gs://.

Examples:
  infer --model=model.onnx --input=x.npy --output=out/x
  infer --model=encoder.onnx --input=input_ids=ids.npy,attention_mask=mask.npy,token_type_ids=types.npy --output=out/enc
  infer --model=encoder.onnx --input=texts.jsonl.gz --max_batch_tokens=8192 --pad=input_ids=1 --output=out/enc
  infer --model=resnet50.onnx --input='photos/*.jpg' --resize=224x224 \
      --mean=0.485,0.456,0.406 --std=0.229,0.224,0.225 --labels_file=imagenet.txt --top_k=5 --output=out/photos
  infer --model=cnn-fashion.onnx --input='digits/*.png' --channels=1 --labels_file=classes.txt --backend=stub

A .npy whose header does not describe its file (more rows than it holds,
or bytes after the array) is an error before anything runs (exit 2). An
image whose header declares more than --max_image_bytes decoded (default
an 8192x8192 RGBA image, 256 MiB) fails its row, as does a dangling
symbolic link. A failed model call is retried in halves, so that only
the rows that fail alone fail. --check_finite fails rows holding NaN or
infinity. An input of no rows is an error unless --allow_empty.

It runs on Beam's local runner (prism) unless --runner says otherwise; the
model's step is "onnx" (--backend_override=onnx=cpu). See docs/infer.md.
`)
}

// configFromFlags checks the flags, loads the model, reads the .npy header
// or lists the images, and checks them against the model.
func configFromFlags(ctx context.Context) (Config, error) {
	cfg := Config{Model: *model, Output: *output, ShardRows: *shardRows, Labels: *labels, TopK: *topK,
		Batching: batch.Params{MinBatchSize: *minBatch, MaxBatchSize: *maxBatch},
		RunID:    jobfiles.NewRunID(), Started: time.Now().UTC().Format(time.RFC3339), Args: os.Args[1:],
		AllowEmpty: *allowEmpty}
	if cfg.Model == "" || *input == "" {
		return cfg, errors.New("--model and --input are required (infer --help shows examples)")
	}
	if cfg.ShardRows <= 0 || *minBatch <= 0 || *maxBatch < *minBatch {
		return cfg, fmt.Errorf("--shard_rows=%d --min_batch_size=%d --max_batch_size=%d: want positive numbers, min <= max", *shardRows, *minBatch, *maxBatch)
	}
	if cfg.TopK < 0 {
		return cfg, fmt.Errorf("--top_k=%d: want 0 or more", cfg.TopK)
	}
	if cfg.TopK == 0 && cfg.Labels != "" {
		cfg.TopK = 5
	}
	if *maxTokens < 0 || *window <= 0 {
		return cfg, fmt.Errorf("--max_batch_tokens=%d --sort_window=%d: want 0 or more tokens and a positive window", *maxTokens, *window)
	}
	cfg.Lengths = inference.LengthBatching{MaxBatchSize: *maxBatch, MaxBatchTokens: *maxTokens, Window: *window}
	ins := splitInputs(*input)
	sequences := len(ins) > 1 || ins[0].Name != "" || isJSONL(*input)
	var opts []inference.ONNXOption
	if p, err := parsePads(*pads); err != nil {
		return cfg, err
	} else if sequences {
		opts = append(opts, inference.PadRows(p))
	} else if p != nil {
		return cfg, fmt.Errorf("--pad: the input %s is no sequences: padding is for a JSONL input or one .npy per model input", *input)
	}
	if *checkFinite {
		opts = append(opts, inference.CheckFinite())
	}
	if *callLimit < 0 {
		return cfg, fmt.Errorf("--call_timeout=%v: want a duration of 0 (no limit) or more, e.g. 10m", *callLimit)
	}
	if *callLimit > 0 {
		opts = append(opts, inference.CallTimeout(*callLimit))
	}
	if *memBudget != "" {
		n, err := onnx.ParseBytes(*memBudget)
		if err != nil || n <= 0 {
			return cfg, fmt.Errorf("--memory_budget=%s: want a positive amount of memory, e.g. 4GiB", *memBudget)
		}
		opts = append(opts, inference.MemoryBudget(n))
	}
	h, err := inference.ONNX(ctx, cfg.Model, opts...)
	if err != nil {
		if sequences && strings.Contains(err.Error(), "pad value for") {
			return cfg, fmt.Errorf("--pad: %w", err)
		}
		return cfg, fmt.Errorf("--model: %w", err)
	}
	cfg.Handler = h
	cfg.DataShaped = dataShaped(h.Model())
	switch {
	case isJSONL(*input):
		if cfg.JSONL, err = lines.Scan(ctx, *input, cfg.ShardRows); err != nil {
			return cfg, fmt.Errorf("--input: %w", err)
		}
	case isNPY(ins[0].Path):
		for _, in := range ins {
			if !isNPY(in.Path) {
				return cfg, fmt.Errorf("--input %s: not a .npy file (one .npy per model input: name=file.npy,name2=file2.npy)", in.Path)
			}
			if in.Header, err = readNPYHeader(ctx, in.Path); err != nil {
				return cfg, fmt.Errorf("--input: %w", err)
			}
			cfg.NPYs = append(cfg.NPYs, in)
		}
	default:
		if cfg.Images, err = listImages(ctx, *input, cfg.AllowEmpty); err != nil {
			return cfg, err
		}
		c := *channels
		cfg.Preprocess = Preprocess{Layout: strings.ToUpper(*layout), Channels: c, MaxBytes: *maxImage}
		if *maxImage <= 0 {
			return cfg, fmt.Errorf("--max_image_bytes=%d: want a positive size in bytes", *maxImage)
		}
		if *resize != "" {
			if cfg.Preprocess.Height, cfg.Preprocess.Width, err = parseSize(*resize); err != nil {
				return cfg, err
			}
		}
		if cfg.Preprocess, err = fitImages(h.Model(), cfg.Preprocess); err != nil {
			return cfg, err
		}
		if cfg.Preprocess.Mean, err = parseFloats("mean", *mean, cfg.Preprocess.Channels); err != nil {
			return cfg, err
		}
		if cfg.Preprocess.Std, err = parseFloats("std", *std, cfg.Preprocess.Channels); err != nil {
			return cfg, err
		}
		if err := cfg.Preprocess.Check(); err != nil {
			return cfg, err
		}
	}
	return cfg, checkConfig(ctx, cfg)
}

func isNPY(p string) bool { return strings.HasSuffix(strings.ToLower(p), ".npy") }

// parsePads parses --pad: name=value,...
func parsePads(s string) (map[string]float64, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]float64{}
	for _, kv := range strings.Split(s, ",") {
		name, v, ok := strings.Cut(kv, "=")
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("--pad=%s: want name=value,... (a model input's name and a number), not %q", s, kv)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--pad=%s: %s given twice", s, name)
		}
		out[name] = f
	}
	return out, nil
}

// listImages lists the files of a glob (a directory: its files), sorted;
// none is an error unless allowEmpty.
func listImages(ctx context.Context, glob string, allowEmpty bool) ([]string, error) {
	glob = imageGlob(glob)
	found, err := files.List(ctx, glob)
	if err != nil {
		return nil, fmt.Errorf("--input %s: %w", glob, err)
	}
	var out []string
	for _, f := range found {
		if strings.HasSuffix(f, "/") {
			continue
		}
		if !strings.Contains(f, "://") {
			// A directory is no image; anything else matched is a row,
			// one that cannot be read (a dangling symbolic link) its
			// row's failure, never dropped without a record.
			if st, err := os.Stat(f); err == nil && st.IsDir() {
				continue
			}
		}
		out = append(out, f)
	}
	if len(out) == 0 && !allowEmpty {
		return nil, fmt.Errorf("--input %s: no files match (a .npy file, or a glob of PNG/JPEG images; --allow_empty accepts a glob that matches nothing)", glob)
	}
	sort.Strings(out)
	return out, nil
}

// fitImages completes p from the model's first input: its layout's
// channels, height and width where p leaves them out, and checks that
// they agree where the model fixes them.
func fitImages(m *onnx.Model, p Preprocess) (Preprocess, error) {
	v := m.Inputs[0]
	if v.Type != nd.Float32 {
		return p, fmt.Errorf("--input images: the model's input %s is %v; images are fed as float32", v.Name, v.Type)
	}
	if len(v.Shape) != 4 {
		return p, fmt.Errorf("--input images: the model's input %s has rank %d; images need a rank-4 input (%s)", v, len(v.Shape), p.Layout)
	}
	c, hd, wd := v.Shape[1], v.Shape[2], v.Shape[3]
	if p.Layout == LayoutNHWC {
		hd, wd, c = v.Shape[1], v.Shape[2], v.Shape[3]
	}
	if p.Channels == 0 {
		p.Channels = 3
		if c.Size > 0 {
			p.Channels = c.Size
		}
		if p.Channels != 1 && p.Channels != 3 {
			return p, fmt.Errorf("--input images: the model's input %s has %d channels in the %s layout, not 1 or 3: is its layout the other one (--layout)?", v, p.Channels, p.Layout)
		}
	}
	if p.Height == 0 {
		if hd.Size <= 0 || wd.Size <= 0 {
			return p, fmt.Errorf("--input images: the model's input %s has no fixed height and width: give --resize=HxW", v)
		}
		p.Height, p.Width = hd.Size, wd.Size
	}
	for _, d := range []struct {
		name      string
		got, want int
	}{{"channels", p.Channels, c.Size}, {"height", p.Height, hd.Size}, {"width", p.Width, wd.Size}} {
		if d.want > 0 && d.got != d.want {
			return p, fmt.Errorf("--input images: %s %d, but the model's input %s takes %d (%s layout; see --layout, --resize, --channels)", d.name, d.got, v, d.want, p.Layout)
		}
	}
	return p, nil
}

// checkConfig checks the model against the input: its inputs fed, each
// .npy's dtype and row shape, an output; the labels against the scores.
func checkConfig(ctx context.Context, cfg Config) error {
	m := cfg.Handler.Model()
	if len(m.Outputs) == 0 {
		return fmt.Errorf("--model %s has no outputs", cfg.Model)
	}
	switch {
	case cfg.JSONL != nil:
		for _, v := range m.Inputs {
			if !v.Type.Supported() {
				return fmt.Errorf("--model %s: input %s is not numbers: a JSONL row cannot feed it", cfg.Model, v)
			}
		}
	case len(cfg.NPYs) > 0:
		if err := matchInputs(m, cfg.Model, cfg.NPYs); err != nil {
			return err
		}
		for _, n := range cfg.NPYs {
			for _, v := range m.Inputs {
				if v.Name == n.Name {
					if err := checkNPY(m, cfg.Model, v, n); err != nil {
						return err
					}
				}
			}
		}
	case len(m.Inputs) != 1:
		return fmt.Errorf("--model %s takes %d inputs (%s); images feed one (a model of several inputs takes one .npy per input, --input=name=file.npy,..., or a JSONL file)", cfg.Model, len(m.Inputs), inputNames(m))
	}
	if o := m.Outputs[0]; cfg.TopK > 0 && !o.Type.IsFloat() {
		return fmt.Errorf("--top_k: the model's first output %s is not float scores", o)
	}
	if cfg.TopK > 0 && cfg.Labels != "" {
		b, err := files.ReadAll(ctx, cfg.Labels, 64<<20)
		if err != nil {
			return fmt.Errorf("--labels_file: %w", err)
		}
		n := len(strings.Split(strings.TrimRight(string(b), "\n"), "\n"))
		o := m.Outputs[0]
		if k := len(o.Shape); k > 0 && o.Shape[k-1].Size > 0 && o.Shape[k-1].Size != n {
			return fmt.Errorf("--labels_file %s has %d labels, but the model's first output %s has %d scores", cfg.Labels, n, o, o.Shape[k-1].Size)
		}
	}
	return nil
}

// checkNPY checks a .npy's dtype and shape against the model input v.
func checkNPY(m *onnx.Model, model string, v onnx.ValueInfo, n npyInput) error {
	want := v.Type
	if want == nd.Float16 || want == nd.BFloat16 {
		want = nd.Float32 // as the ONNX handler takes them
	}
	if n.Header.Type != want && n.Header.Type != v.Type {
		return fmt.Errorf("--input %s: dtype %v, but the model %s's input %q is %v (%s): convert it (x.astype(np.%v))", n.Path, n.Header.Type, model, v.Name, v.Type, v, want)
	}
	if v.Shape == nil {
		return nil
	}
	shape := n.Header.Shape
	if len(v.Shape) == 0 || shape == nil || len(shape) != len(v.Shape) {
		return fmt.Errorf("--input %s: shape %s, but the model %s's input is %s: want the rows along axis 0 and the input's other axes", n.Path, nd.ShapeString(shape), model, v)
	}
	for i, d := range v.Shape[1:] {
		if d.Size >= 0 && shape[i+1] != d.Size {
			return fmt.Errorf("--input %s: shape %s, but the model %s's input is %s (axis %d: %d, want %d)", n.Path, nd.ShapeString(shape), model, v, i+1, shape[i+1], d.Size)
		}
	}
	if !m.Batched() && v.Shape[0].Size > 1 {
		return fmt.Errorf("--model %s: input %s has a fixed batch of %d; infer feeds rows one at a time (export it with a dynamic batch axis)", model, v, v.Shape[0].Size)
	}
	return nil
}

func inputNames(m *onnx.Model) string {
	var s []string
	for _, v := range m.Inputs {
		s = append(s, v.String())
	}
	return strings.Join(s, "; ")
}

// dataShaped reports whether the model's outputs' shapes depend on its
// inputs' contents (a detector's detections per image), found by planning
// it for one row: every output of each row is then written, to
// predictions.jsonl where their shapes differ.
func dataShaped(m *onnx.Model) bool {
	p, err := m.Plan(onnx.RandomInputs(m, 1, 1))
	if err != nil {
		return false
	}
	_, err = p.OutputMeta()
	return err != nil
}
