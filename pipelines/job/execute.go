package job

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/launch"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// Result is what a run of a pipeline did.
type Result struct {
	// Metrics are the run's step counts and counters; empty when nothing
	// ran here (Outcome.Result is nil).
	Metrics
	// Elapsed is the time from the launch to the end of the run.
	Elapsed time.Duration
	// Stub lists the steps that ran their stand-ins.
	Stub []string
	// Outcome is what the launcher did: the runner's result, the plan.
	Outcome launch.Outcome
}

// buildError is an error of Pipeline.Build: a configuration error.
type buildError struct{ err error }

func (e *buildError) Error() string { return e.err.Error() }
func (e *buildError) Unwrap() error { return e.err }

// Execute builds p with the backend selector sel, prints sel's explain
// report, launches the pipeline (p.Flags: prism by default, Dataflow, a
// portable job server, or only a plan), with a progress line on stderr
// every p.Flags.Progress, and writes to w what was launched (a plan, a
// template, an --async job) or, after a run, p.Report's summary and a
// STUB RUN line when steps ran their stand-ins. It runs the cleanups
// Build registered before it returns.
func Execute(ctx context.Context, p Pipeline, sel *backend.Selector, w io.Writer) (*Result, error) {
	f := p.flags()
	r := &Run{ctx: ctx, sel: sel, steps: p.steps(), flags: f}
	r.setActive(true)
	defer r.setActive(false)
	defer r.cleanup()
	pl, s := beam.NewPipelineWithRoot()
	if p.Build == nil {
		return nil, &buildError{fmt.Errorf("the pipeline has no Build function")}
	}
	if err := p.Build(ctx, s, r); err != nil {
		return nil, &buildError{err}
	}
	if err := f.Backend.Explain(sel); err != nil {
		return nil, err
	}
	res := &Result{Stub: r.StubSteps()}
	stopProfile, err := startCPUProfile(f.Launch.CPUProfile)
	if err != nil {
		return nil, err
	}
	stop := StartProgress(os.Stderr, p.Name, f.Progress)
	start := time.Now()
	out, err := launch.Run(ctx, pl, f.Launch)
	stop()
	if perr := stopProfile(); perr != nil && err == nil {
		err = perr
	}
	res.Elapsed, res.Outcome = time.Since(start), out
	if err != nil {
		return res, fmt.Errorf("pipeline failed: %w", err)
	}
	if out.Plan != nil && out.Plan.Mode == launch.ModeRightFitting && len(out.Plan.Environments) > 1 && !out.Planned {
		slog.Info("right fitting", "pipeline", p.Name, "environments", out.Plan.Placement())
	}
	if out.Result == nil {
		return res, launched(w, out, f.Launch.PlanOut)
	}
	if res.Metrics, err = ReadMetrics(out.Result, sel.Report()); err != nil {
		return res, err
	}
	if len(res.Metrics.Devices) > 0 && f.Backend.ExplainJSON != "" {
		// The explain report again, with what ran on each GPU device.
		report := sel.Report()
		report.Devices = res.Metrics.Devices
		if err := report.WriteJSONFile(f.Backend.ExplainJSON); err != nil {
			return res, fmt.Errorf("--explain_json: %w", err)
		}
	}
	if p.Report != nil {
		err = p.Report(ctx, w, res)
	} else {
		res.PrintSteps(w, "items")
		fmt.Fprintf(w, "%s: done in %s\n", p.Name, res.Elapsed.Round(time.Millisecond))
	}
	if len(res.Stub) > 0 {
		fmt.Fprintf(w, "STUB RUN: %s ran stand-ins (zeros of the real shape): the outputs are not results\n", strings.Join(res.Stub, ", "))
	}
	return res, err
}

func (p Pipeline) steps() []step.Any {
	if p.Steps == nil {
		return nil
	}
	return p.Steps()
}

// Selector builds the backend selector of bf (--backend, --backend_override)
// over the steps the pipeline builds: an override naming another step is an
// error that lists them, and the explain report knows exactly those. It asks
// lf's target about GPUs: the executor this process would start
// (--gpu_executor) for a run here, the worker container's for remote workers
// (package launch).
func Selector(bf *backend.Flags, lf *launch.Flags, steps ...step.Any) (*backend.Selector, error) {
	ex, err := lf.Executor(step.UseExecutor(bf.Executor))
	if err != nil {
		return nil, err
	}
	bc, err := bf.Config(step.Backends(steps...), ex)
	if err != nil {
		return nil, err
	}
	return backend.New(bc)
}

// launched reports a launch that produced no metrics to w: the plan of
// --plan_out (its summary, and where its files are), a Dataflow template
// staged with --template_location, or a job submitted with --async.
func launched(w io.Writer, o launch.Outcome, planDir string) error {
	switch {
	case o.Planned && o.Plan != nil:
		if err := o.Plan.WriteText(w); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "plan written to %s; nothing was run\n", planDir)
		return err
	case o.Template != "":
		_, err := fmt.Fprintf(w, "Dataflow template staged to %s (--template_location); no job was submitted\n", o.Template)
		return err
	}
	_, err := fmt.Fprintln(w, "job submitted (--async): no metrics to report")
	return err
}
