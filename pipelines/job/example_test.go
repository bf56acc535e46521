package job_test

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/pipelines/job"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

// The whole main of a pipeline program: its steps, and the function that
// builds its pipeline. Main does the rest: the flags of backend selection,
// of the launcher and of the run, the explain report, the run on the runner
// --runner names, each step's counts, STUB RUN when a step ran its
// stand-in, and the exit status. (examples/clipstep/cmd/clippipe is a whole
// program.)
func Example() {
	job.Main(job.Pipeline{
		Name:  "doubling",
		Steps: job.Steps(double),
		Build: func(_ context.Context, s beam.Scope, r *job.Run) error {
			nums := beam.Create(s, 1.0, 2.0, 3.0)
			out, failed := stepbeam.Apply(s, double, nums, r.Options()...)
			beam.ParDo0(s, discard, out)    // a real pipeline writes them
			beam.ParDo0(s, failure, failed) // or writes them to a dead-letter file
			return nil
		},
	})
}
