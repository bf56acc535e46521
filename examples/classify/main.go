// Command classify runs an ONNX model over rows of numbers on Apache Beam
// with RunInference and writes each row's top classes: a whole pipeline
// program on beamgpu, job.Main around RunInference and Classify, as
// docs/inference.md shows it.
//
//	go run ./examples/classify --model=M.onnx --input=rows.csv [--labels_file=labels.txt] [--top_k=1] [--output=DIR]
//
// Each line of --input is a row: its key, then the values of the model's
// first input, comma-separated (float32, as many as a row of the input
// holds, laid out in its shape). It writes, under --output:
//
//	classes.csv   key,rank,class,label,score: a line per row and class, best first
//	failed.jsonl  a line per row that failed (input, step, reason), when rows failed
//
// The flags of package job apply: --backend=auto|cpu|gpu|stub, --runner
// (prism by default, Dataflow with gs:// paths), --explain_json.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs" // gs:// paths (Dataflow)
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/pipelines/job"
	_ "github.com/beamgpu/beamgpu/stubs/onnx" // --backend=stub
	"github.com/beamgpu/beamgpu/transforms/batch"
	"github.com/beamgpu/beamgpu/transforms/inference"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxstep"
	"github.com/beamgpu/beamgpu/transforms/step"
)

var (
	model  = flag.String("model", "", "the ONNX model file (local or gs://); required")
	input  = flag.String("input", "", "rows, one a line: a key, then the model input's values, comma-separated (local or gs://); required")
	labels = flag.String("labels_file", "", "labels of the model's first output, one a line (empty: none)")
	topK   = flag.Int("top_k", 1, "classes per row")
	output = flag.String("output", "out/classify", "directory (or gs:// prefix) of classes.csv and failed.jsonl")
)

// program is the pipeline program: its flags, its steps (the onnx step,
// which --backend and --backend_override know), the paths its workers
// read and write, and its Build.
var program = job.Pipeline{
	Name:     "classify",
	OwnFlags: []string{"model", "input", "labels_file", "top_k", "output"},
	Steps:    job.Steps(onnxstep.StepRun),
	WorkerPaths: func() []job.Path {
		return []job.Path{{Flag: "model", Path: *model}, {Flag: "input", Path: *input}, {Flag: "output", Path: *output}}
	},
	Build: build,
}

func main() { job.Main(program) }

// build adds the pipeline to s:
//
//	rows.csv -> parse -> RunInference(ONNX) -> Classify -> classes.csv
//	failures of each -------------------------------------> failed.jsonl
func build(ctx context.Context, s beam.Scope, r *job.Run) error {
	if *model == "" || *input == "" || *topK < 1 {
		return fmt.Errorf("--model and --input are required, --top_k=%d must be 1 or more", *topK)
	}
	h, err := inference.ONNX(ctx, *model, inference.CheckFinite())
	if err != nil {
		return err
	}
	in := h.Model().Inputs[0]
	var shape []int // the input's row: its shape without the batch axis
	if in.Shape != nil {
		for i, d := range in.Shape {
			if i == 0 && h.Model().Batched() {
				continue
			}
			if d.Size < 0 {
				return fmt.Errorf("--model %s: input %s has a free dimension: rows need a fixed shape", *model, in)
			}
			shape = append(shape, d.Size)
		}
	}
	examples, parseFailed := beam.ParDo2(s, &parseFn{Input: in.Name, Shape: shape}, textio.Read(s, *input))
	results, failed, err := inference.TryRunInference(s, examples, h, batch.Params{}, r.Options()...)
	if err != nil {
		return err
	}
	classes, classFailed, err := inference.Classify(ctx, s, results, h.Model().Outputs[0].Name, *topK, *labels)
	if err != nil {
		return err
	}
	textio.Write(s, *output+"/classes.csv", beam.ParDo(s, classLines, classes))
	textio.Write(s.Scope("failures"), *output+"/failed.jsonl", beam.ParDo(s, failureLine, beam.Flatten(s, parseFailed, failed, classFailed)))
	return nil
}

// parseFn turns a line "key,v1,v2,..." into an Example of one input
// called Input, shaped Shape (nil: a vector); a line that does not parse
// is a failure of its own.
type parseFn struct {
	Input string
	Shape []int
}

func (f *parseFn) ProcessElement(line string, emit func(inference.Example), fail func(step.Failure)) {
	key, values, _ := strings.Cut(strings.TrimSpace(line), ",")
	x, err := parseValues(values, f.Shape)
	if err == nil && key == "" {
		err = fmt.Errorf("a row without a key")
	}
	if err != nil {
		name := key
		if name == "" {
			name = strconv.Quote(line[:min(len(line), 40)])
		}
		fail(step.Failure{Input: name, Step: "parse", Reason: err.Error(), Items: 1})
		return
	}
	emit(inference.Example{Key: key, Inputs: []inference.Tensor{{Name: f.Input, Array: x}}})
}

func parseValues(values string, shape []int) (nd.Array, error) {
	fields := strings.Split(values, ",")
	x := make([]float32, len(fields))
	for i, v := range fields {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 32)
		if err != nil {
			return nd.Array{}, fmt.Errorf("value %d: %w", i+1, err)
		}
		x[i] = float32(f)
	}
	if n, _ := nd.Numel(shape); shape != nil && n != len(x) {
		return nd.Array{}, fmt.Errorf("%d values, the model's input takes %d (%s)", len(x), n, nd.ShapeString(shape))
	}
	return nd.Of(x, shape...), nil
}

// classLines writes a row's classes, a line each: key,rank,class,label,score.
func classLines(c inference.Classification, emit func(string)) {
	for rank, cl := range c.Top {
		emit(fmt.Sprintf("%s,%d,%d,%s,%g", c.Key, rank+1, cl.Index, cl.Label, cl.Score))
	}
}

// failureLine writes a failure as a line of JSON.
func failureLine(f step.Failure) (string, error) {
	b, err := json.Marshal(f)
	return string(b), err
}

func init() {
	register.DoFn3x0[string, func(inference.Example), func(step.Failure)](&parseFn{})
	register.Function2x0(classLines)
	register.Function1x2(failureLine)
}
