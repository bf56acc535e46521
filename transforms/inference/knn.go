package inference

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sync"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/tensor"
)

// KindKNN is the registered kind of KNNHandler.
const KindKNN = "knn"

func init() {
	Register(KindKNN, func(config []byte) (Handler, error) {
		h := &KNNHandler{}
		if err := json.Unmarshal(config, h); err != nil {
			return nil, fmt.Errorf("inference: knn handler config: %w", err)
		}
		return h, nil
	})
}

// KNNHandler classifies by the k nearest rows of a labelled reference set
// (brute force, Euclidean distance) with the knn step. The reference set is
// IDX files (Fashion-MNIST's training set), read and scaled once per worker
// process and shared by every bundle; on the GPU it is side data, sent to
// the executor once, which keeps it on the device. Each example holds one
// input, RowInput: a float32 row as wide as the reference's, of any shape;
// each result, the vote shares (OutputVotes) and the class (OutputClass),
// which breaks ties as tensor.KNN does (equal votes: the class with the
// smaller summed distance, then the lower index).
type KNNHandler struct {
	// Reference is the reference set: IDX images and their labels, and
	// the number of classes (labels outside [0, Classes) fail the load).
	Reference tensor.Source
	// Scaler scales the reference rows as the queries were scaled (Mode
	// "": none).
	Scaler tensor.Scaler
	// K is the number of neighbours, Weights the vote's weighting:
	// tensor.WeightUniform or tensor.WeightDistance (1/distance).
	K       int
	Weights string
}

// KNNOption sets an option of KNN.
type KNNOption func(*KNNHandler)

// KNNWeights sets the vote's weighting: tensor.WeightUniform (the
// default) or tensor.WeightDistance.
func KNNWeights(weights string) KNNOption { return func(h *KNNHandler) { h.Weights = weights } }

// KNNScaler scales the reference rows with sc, as the queries are (the
// standardize step's scaler).
func KNNScaler(sc tensor.Scaler) KNNOption { return func(h *KNNHandler) { h.Scaler = sc } }

// KNN returns the handler of k-nearest-neighbours classification against
// reference, labelled IDX files with reference.Classes classes. The files
// are read by each worker process, once (RunInference), not here: a
// reference with fewer rows than k, a bad row or a bad label fails the
// pipeline then, with the reason.
func KNN(reference tensor.Source, k int, opts ...KNNOption) (*KNNHandler, error) {
	h := &KNNHandler{Reference: reference, K: k, Weights: tensor.WeightUniform}
	for _, o := range opts {
		o(h)
	}
	switch {
	case reference.Images == "" || reference.Labels == "":
		return nil, fmt.Errorf("inference: KNN: reference %q, labels %q: want both an images and a labels file", reference.Images, reference.Labels)
	case reference.Classes < 1:
		return nil, fmt.Errorf("inference: KNN: reference %s: %d classes, want 1 or more (Source.Classes)", reference.Images, reference.Classes)
	case k < 1:
		return nil, fmt.Errorf("inference: KNN: k=%d, want 1 or more neighbours", k)
	case h.Weights != tensor.WeightUniform && h.Weights != tensor.WeightDistance:
		return nil, fmt.Errorf("inference: KNN: weights %q, want %q or %q", h.Weights, tensor.WeightUniform, tensor.WeightDistance)
	case h.Scaler.Mode != "" && h.Scaler.Mode != tensor.ScaleUnit && h.Scaler.Mode != tensor.ScaleZScore:
		return nil, fmt.Errorf("inference: KNN: scaler mode %q, want %q, %q or none", h.Scaler.Mode, tensor.ScaleUnit, tensor.ScaleZScore)
	}
	return h, nil
}

// Kind implements Handler.
func (h *KNNHandler) Kind() string { return KindKNN }

// Config implements Handler.
func (h *KNNHandler) Config() ([]byte, error) { return json.Marshal(h) }

// Key implements Handler.
func (h *KNNHandler) Key() string {
	return fmt.Sprintf("knn:%s|k=%d|%s", h.referenceKey(), h.K, h.Weights)
}

// referenceKey names the reference set as loaded: its files and scaling.
func (h *KNNHandler) referenceKey() string {
	sc, _ := json.Marshal(h.Scaler)
	return fmt.Sprintf("%s|%s|%d|%dx%d|%s", h.Reference.Images, h.Reference.Labels, h.Reference.Classes,
		h.Reference.Height, h.Reference.Width, sc)
}

// Step implements Handler: the knn step.
func (h *KNNHandler) Step() step.Any { return tensor.StepKNN }

// references holds the reference sets of this process, one per
// referenceKey: handlers of other k or weights share one.
var references struct {
	sync.Mutex
	m map[string]*referenceSet
}

type referenceSet struct {
	once sync.Once
	ref  *tensor.Reference
	err  error
}

// Load implements Handler: it reads the reference set (once per process
// and reference) and checks it against k.
func (h *KNNHandler) Load(context.Context) (Model, error) {
	key := h.referenceKey()
	references.Lock()
	if references.m == nil {
		references.m = map[string]*referenceSet{}
	}
	r := references.m[key]
	if r == nil {
		r = &referenceSet{}
		references.m[key] = r
	}
	references.Unlock()
	r.once.Do(func() { r.ref, r.err = readReference(h.Reference, h.Scaler) })
	if r.err != nil {
		return nil, r.err
	}
	if h.K > r.ref.Rows {
		return nil, fmt.Errorf("knn: k=%d is more than the %d rows of the reference set: want k <= %d", h.K, r.ref.Rows, r.ref.Rows)
	}
	id := fmt.Sprintf("knn:%s:k=%d:%s", path.Base(h.Reference.Images), h.K, h.Weights)
	return knnModel{ref: r.ref, k: h.K, weights: h.Weights, id: id}, nil
}

// readReference decodes the reference set (a row with NaN or infinity
// fails it) and scales it.
func readReference(src tensor.Source, sc tensor.Scaler) (*tensor.Reference, error) {
	d, err := tensor.DecodeSource(src)
	if err != nil {
		return nil, fmt.Errorf("knn reference set: %w", err)
	}
	if len(d.Rejected) > 0 {
		r := d.Rejected[0]
		return nil, fmt.Errorf("knn reference set: %s row %d: %s", r.Source, r.Row, r.Reason)
	}
	if len(d.Batches) == 0 {
		return nil, fmt.Errorf("knn reference set: %s holds no rows", src.Images)
	}
	tensor.SortBatches(d.Batches)
	all, err := tensor.Concat(d.Batches)
	if err != nil {
		return nil, fmt.Errorf("knn reference set: %w", err)
	}
	if sc.Mode != "" {
		if all, err = sc.Apply(all); err != nil {
			return nil, fmt.Errorf("knn reference set: %w", err)
		}
	}
	return tensor.NewReference(all, src.Classes)
}

// knnModel is a loaded reference set with k and the weighting.
type knnModel struct {
	ref     *tensor.Reference
	k       int
	weights string
	id      string
}

func (m knnModel) ID() string            { return m.id }
func (m knnModel) Batched() bool         { return true }
func (m knnModel) SizeBytes() int64      { return 4 * int64(len(m.ref.X)+len(m.ref.Labels)) }
func (m knnModel) Check(e Example) error { return checkRow(e, m.ref.Cols) }

// Predict runs the knn step on the examples' rows, stacked; the reference
// set is the same pointer for every call of the process, so the GPU step
// sends it once.
func (m knnModel) Predict(ctx context.Context, impl backend.Kind, ex []Example) ([][]Tensor, error) {
	run, err := tensor.StepKNN.ImplContext(impl)
	if err != nil {
		return nil, err
	}
	q, err := rowsBatch(ex, m.ref.Cols)
	if err != nil {
		return nil, err
	}
	p, err := run(ctx, tensor.KNNInput{Query: q, Ref: m.ref, K: m.k, Weights: m.weights})
	if err != nil {
		return nil, err
	}
	return classOutputs(p, len(ex), OutputVotes)
}
