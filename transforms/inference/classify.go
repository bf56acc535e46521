package inference

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/files"
	"github.com/beamgpu/beamgpu/transforms/wire"
)

// Class is one of a classification's top classes: its index among the
// output's scores, its label ("" without a labels file) and its score.
type Class struct {
	Index int
	Label string
	Score float32
}

// Classification is the top classes of one Result's scores, best first,
// with the result's key, source, index, model ID and carried arrays.
type Classification struct {
	Key     string
	Source  string
	Index   int64
	ModelID string
	Top     []Class
	Carry   []Tensor
}

// ID names the classification as its example is named.
func (c Classification) ID() string { return exampleID(c.Key, c.Source, c.Index) }

// Carried returns the carried array called name, ok false if there is none.
func (c Classification) Carried(name string) (nd.Array, bool) { return find(c.Carry, name) }

func init() {
	register.DoFn4x1[context.Context, Result, func(Classification), func(step.Failure), error](&classifyFn{})
	register.Emitter1[Classification]()
	beam.RegisterCoder(reflect.TypeOf(Classification{}), EncodeClassification, DecodeClassification)
}

// Classify is classification after any model: for each Result, the k
// classes with the highest scores in its output called output (a vector
// of scores or logits; ties to the lower index), labelled from labels (one
// label a line, "" for none; read here, before the pipeline runs). An
// integer output is the model's own choice of classes, best first (a
// scalar: its one class, as the kNN's OutputClass): its first k, with score
// 0. A result without that output, or whose output is neither, is a
// failure (step "classify").
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

// StepClassify is the step of Classify's failures.
const StepClassify = "classify"

type classifyFn struct {
	Output string
	K      int
	Labels []string
}

func (f *classifyFn) ProcessElement(_ context.Context, r Result, emit func(Classification), fail func(step.Failure)) error {
	c, err := TopK(r, f.Output, f.K, f.Labels)
	if err != nil {
		fail(failure(StepClassify, r.Key, r.Source, r.Index, err))
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
	if len(a.Shape) > 2 || len(a.Shape) == 2 && a.Shape[0] != 1 || !a.Type.IsFloat() && !a.Type.IsInt() {
		return Classification{}, fmt.Errorf("output %q is %v, not a vector of scores or classes", output, a)
	}
	c := Classification{Key: r.Key, Source: r.Source, Index: r.Index, ModelID: r.ModelID, Carry: r.Carry}
	label := func(i int) (string, error) {
		switch {
		case len(labels) == 0:
			return "", nil
		case i < 0 || i >= len(labels):
			return "", fmt.Errorf("output %q: class %d has no label (%d labels)", output, i, len(labels))
		}
		return labels[i], nil
	}
	if a.Type.IsInt() { // the model's own classes, best first
		classes, err := nd.Int64s(a)
		if err != nil {
			return Classification{}, fmt.Errorf("output %q: %w", output, err)
		}
		for _, i := range classes[:min(k, len(classes))] {
			l, err := label(int(i))
			if err != nil {
				return Classification{}, err
			}
			c.Top = append(c.Top, Class{Index: int(i), Label: l})
		}
		return c, nil
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
	for _, i := range idx[:min(k, len(idx))] {
		l, _ := label(i)
		c.Top = append(c.Top, Class{Index: i, Label: l, Score: float32(scores[i])})
	}
	return c, nil
}

// EncodeClassification is Classification's Beam coder.
func EncodeClassification(c Classification) []byte {
	b := wire.AppendString(nil, c.Key)
	b = wire.AppendString(b, c.Source)
	b = wire.AppendUint64(b, uint64(c.Index))
	b = wire.AppendString(b, c.ModelID)
	b = wire.AppendUvarint(b, len(c.Top))
	for _, t := range c.Top {
		b = wire.AppendUvarint(b, t.Index)
		b = wire.AppendString(b, t.Label)
		b = wire.AppendUint64(b, uint64(math.Float32bits(t.Score)))
	}
	return appendTensors(b, c.Carry)
}

// DecodeClassification decodes what EncodeClassification wrote.
func DecodeClassification(b []byte) (Classification, error) {
	d := wire.NewDecoder(b, "inference classification")
	c := Classification{Key: d.String(), Source: d.String(), Index: int64(d.Uint64()), ModelID: d.String()}
	n := d.Uvarint()
	for i := 0; i < n && d.Err() == nil; i++ {
		c.Top = append(c.Top, Class{Index: d.Uvarint(), Label: d.String(), Score: math.Float32frombits(uint32(d.Uint64()))})
	}
	c.Carry = readTensors(d)
	return c, d.Done()
}
