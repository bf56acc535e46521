package inference

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/files"
)

// Class is one of a classification's top classes: its index among the
// output's scores, its label ("" without a labels file) and its score.
type Class struct {
	Index int
	Label string
	Score float32
}

// Classification is the top classes of one Result's scores, best first,
// with the result's key, index and model ID.
type Classification struct {
	Key     string
	Index   int64
	ModelID string
	Top     []Class
}

func init() {
	register.DoFn4x1[context.Context, Result, func(Classification), func(step.Failure), error](&classifyFn{})
	register.Emitter1[Classification]()
	beam.RegisterType(reflect.TypeOf(Classification{}))
}

// Classify is classification after any model: for each Result, the k
// classes with the highest scores in its output called output (a vector
// of scores or logits; ties to the lower index), labelled from labels (one
// label a line, "" for none; read here, before the pipeline runs). A result
// without that output, or whose output is not a float vector, is a failure.
func Classify(ctx context.Context, s beam.Scope, results beam.PCollection, output string, k int, labels string) (classes, failed beam.PCollection, err error) {
	if k < 1 {
		return classes, failed, fmt.Errorf("inference: classify: k is %d, want 1 or more", k)
	}
	var names []string
	if labels != "" {
		b, err := files.ReadAll(ctx, labels, 64<<20)
		if err != nil {
			return classes, failed, fmt.Errorf("inference: classify: labels: %w", err)
		}
		names = strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	}
	s = s.Scope("Classify")
	classes, failed = beam.ParDo2(s, &classifyFn{Output: output, K: k, Labels: names}, results)
	return classes, failed, nil
}

type classifyFn struct {
	Output string
	K      int
	Labels []string
}

func (f *classifyFn) ProcessElement(_ context.Context, r Result, emit func(Classification), fail func(step.Failure)) error {
	c, err := TopK(r, f.Output, f.K, f.Labels)
	if err != nil {
		fail(step.NewFailure("classify", Example{Key: r.Key, Index: r.Index}, err))
		return nil
	}
	emit(c)
	return nil
}

// TopK is Classify for one result: the k best classes of its output
// called output, labelled from labels where it has them.
func TopK(r Result, output string, k int, labels []string) (Classification, error) {
	a, ok := r.Output(output)
	if !ok {
		return Classification{}, fmt.Errorf("no output %q", output)
	}
	if !a.Type.IsFloat() || len(a.Shape) > 2 || len(a.Shape) == 2 && a.Shape[0] != 1 {
		return Classification{}, fmt.Errorf("output %q is %v, not a vector of scores", output, a)
	}
	scores := nd.Float64s(a)
	if len(labels) > 0 && len(labels) != len(scores) {
		return Classification{}, fmt.Errorf("%d labels for %d scores", len(labels), len(scores))
	}
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return scores[idx[i]] > scores[idx[j]] })
	c := Classification{Key: r.Key, Index: r.Index, ModelID: r.ModelID}
	for _, i := range idx[:min(k, len(idx))] {
		cl := Class{Index: i, Score: float32(scores[i])}
		if len(labels) > 0 {
			cl.Label = labels[i]
		}
		c.Top = append(c.Top, cl)
	}
	return c, nil
}
