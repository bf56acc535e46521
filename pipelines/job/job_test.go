package job_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/beamgpu/beamgpu/pipelines/job"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// double is the step of these tests: it doubles a number.
var double = step.Register(step.Def[float64, float64]{
	Name:   "job_test_double",
	Doc:    "double a number",
	CPU:    func(x float64) (float64, error) { return 2 * x, nil },
	Sample: func() float64 { return 1 },
})

func init() {
	step.RegisterStub(double, func(float64) (float64, error) { return 0, nil })
	stepbeam.Register(double)
	register.Function1x0(discard)
	register.Function1x1(fail)
	register.Function1x1(failure)
}

// discard drops a number.
func discard(float64) {}

// fail fails the bundle of a number.
func fail(float64) error { return errors.New("a bundle fails") }

// failure fails the bundle of a step.Failure.
func failure(f step.Failure) error { return f }

func TestMain(m *testing.M) { ptest.Main(m) }

// doubling is a pipeline of double over 1, 2, 3; its Report prints the
// step's items.
func doubling(flags *job.Flags) job.Pipeline {
	return job.Pipeline{
		Name:  "doubling",
		Flags: flags,
		Steps: job.Steps(double),
		Build: func(_ context.Context, s beam.Scope, r *job.Run) error {
			out, failed := stepbeam.Apply(s, double, beam.Create(s, 1.0, 2.0, 3.0), r.Options()...)
			beam.ParDo0(s, discard, out)
			beam.ParDo0(s, failure, failed)
			return nil
		},
	}
}

func quiet() *job.Flags {
	f := &job.Flags{}
	f.Backend.Backend = string(backend.CPU)
	f.Backend.ExplainJSON = ""
	return f
}

// The exit status says what happened: 0 for a run, 2 for a configuration
// error (nothing runs), 1 for a failed run or a failing report.
func TestRunMainExitStatus(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer

	code, err := job.RunMain(ctx, doubling(quiet()), &out)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Regexp(t, `job_test_double\s+cpu\s+3\s`, out.String(), "the step's counts")
	assert.NotContains(t, out.String(), "STUB RUN")

	p := doubling(quiet())
	p.Build = func(context.Context, beam.Scope, *job.Run) error { return errors.New("--size: want a positive number") }
	code, err = job.RunMain(ctx, p, &out)
	assert.Equal(t, 2, code)
	assert.EqualError(t, err, "--size: want a positive number")

	f := quiet()
	f.Backend.Overrides = "nosuchstep=cpu"
	code, err = job.RunMain(ctx, doubling(f), &out)
	assert.Equal(t, 2, code, "an override of a step the pipeline does not have")
	assert.ErrorContains(t, err, "job_test_double")

	p = doubling(quiet())
	p.Report = func(context.Context, io.Writer, *job.Result) error { return errors.New("counts do not reconcile") }
	code, err = job.RunMain(ctx, p, &out)
	assert.Equal(t, 1, code)
	assert.EqualError(t, err, "counts do not reconcile")

	p = doubling(quiet())
	build := p.Build
	p.Build = func(ctx context.Context, s beam.Scope, r *job.Run) error {
		beam.ParDo0(s, fail, beam.Create(s, 1.0))
		return build(ctx, s, r)
	}
	code, err = job.RunMain(ctx, p, &out)
	assert.Equal(t, 1, code)
	assert.ErrorContains(t, err, "pipeline failed")
}

// A run with stand-ins says so, and the steps that ran them are known to
// Build (for the pipeline's own records) and to Report.
func TestStubRunSaysSo(t *testing.T) {
	f := quiet()
	f.Backend.Backend = string(backend.Stub)
	p := doubling(f)
	var built, reported []string
	build := p.Build
	p.Build = func(ctx context.Context, s beam.Scope, r *job.Run) error {
		built = r.StubSteps()
		return build(ctx, s, r)
	}
	p.Report = func(_ context.Context, _ io.Writer, res *job.Result) error { reported = res.Stub; return nil }
	var out bytes.Buffer
	code, err := job.RunMain(context.Background(), p, &out)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, []string{"job_test_double"}, built)
	assert.Equal(t, []string{"job_test_double"}, reported)
	assert.Contains(t, out.String(), "STUB RUN: job_test_double ran stand-ins")
}

// Cleanups run once the run is over, whatever its end, latest first.
func TestCleanupsRun(t *testing.T) {
	var order []string
	for _, fail := range []bool{false, true} {
		order = nil
		p := doubling(quiet())
		build := p.Build
		p.Build = func(ctx context.Context, s beam.Scope, r *job.Run) error {
			r.Cleanup(func() { order = append(order, "first") })
			r.Cleanup(func() { order = append(order, "second") })
			if fail {
				return errors.New("bad flag")
			}
			return build(ctx, s, r)
		}
		_, _ = job.RunMain(context.Background(), p, io.Discard)
		assert.Equal(t, []string{"second", "first"}, order, "fail=%v", fail)
	}
}

// --explain_json writes the explain report, and --plan_out plans instead of
// running: nothing is reported but the plan.
func TestExplainAndPlan(t *testing.T) {
	dir := t.TempDir()
	f := quiet()
	f.Backend.ExplainJSON = filepath.Join(dir, "explain.json")
	f.Launch.PlanOut = filepath.Join(dir, "plan")
	p := doubling(f)
	p.Report = func(context.Context, io.Writer, *job.Result) error { t.Error("a plan is not reported"); return nil }
	var out bytes.Buffer
	code, err := job.RunMain(context.Background(), p, &out)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, out.String(), "nothing was run")
	data, err := os.ReadFile(f.Backend.ExplainJSON)
	require.NoError(t, err)
	assert.Contains(t, string(data), "job_test_double")
	assert.FileExists(t, filepath.Join(dir, "plan", "plan.txt"))
}
