package batch_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/beamgpu/beamgpu/transforms/batch"
)

// scaleBatch stands for a GPU step: one call (one launch, one transfer)
// per batch.
func scaleBatch(b []float32, emit func([]float32)) {
	out := make([]float32, len(b))
	for i, v := range b {
		out[i] = 2 * v
	}
	emit(out)
}

func init() {
	register.Function2x0(scaleBatch)
	register.Emitter1[[]float32]()
}

// Batch pixels for a per-batch step, then go back to one element per pixel.
func ExampleElements() {
	p, s := beam.NewPipelineWithRoot()
	pixels := beam.Create(s, float32(0.1), float32(0.2), float32(0.3), float32(0.4))

	batches := batch.Elements(s, pixels, batch.Params{MaxBatchSize: 4096})
	scaled := beam.ParDo(s, scaleBatch, batches)
	_ = batch.Unbatch(s, scaled) // PCollection<float32>

	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatal(err)
	}
}

// The Estimator on its own, fed the downstream time of each batch: here a
// synthetic 1ms per batch plus 40µs per element. It doubles the size until
// the fixed cost is 5% of a batch's time: 1ms/40µs * (1/0.05 - 1) = 475.
func ExampleEstimator() {
	est, err := batch.NewEstimator(batch.Params{}) // the defaults
	if err != nil {
		log.Fatal(err)
	}
	cost := func(n int) time.Duration { return time.Millisecond + time.Duration(n)*40*time.Microsecond }

	var sizes []int
	for range 10 {
		n := est.Next()
		sizes = append(sizes, n)
		est.Record(n, cost(n)) // in Elements: the time the emit took
	}
	fixed, perElement, _ := est.Fit()
	fmt.Println(sizes)
	fmt.Println(fixed, perElement)
	// Output:
	// [1 2 4 8 16 32 64 128 256 475]
	// 1ms 40µs
}
