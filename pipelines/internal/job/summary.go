package job

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/launch"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/stepbeam"
)

// StepCounts are one step's metrics, summed over the transforms that ran it.
type StepCounts struct {
	Step                                      string
	Impl                                      backend.Kind
	Batches, Items, Bytes, Failures, KernelNS int64
	// Fallbacks counts the batches a GPU step ran on the CPU because no
	// executor could run them (--backend=auto).
	Fallbacks int64
}

// Metrics is what a run's Beam metrics say: the counts of every step of the
// explain report, in its order, and every other counter of namespace
// stepbeam.Namespace by name.
type Metrics struct {
	Steps    []StepCounts
	Counters map[string]int64
	// CPUInsteadOfGPU says why steps that have a GPU op ran on the CPU
	// under --backend=auto ("" where none did): the explain report's
	// reason, such as an executor that reports no device because its
	// driver is too old.
	CPUInsteadOfGPU string
}

// ReadMetrics reads the step metrics of res for the steps of report.
func ReadMetrics(res beam.PipelineResult, report backend.Report) (Metrics, error) {
	if res == nil {
		return Metrics{}, fmt.Errorf("the runner returned no metrics")
	}
	m := Metrics{Counters: map[string]int64{}}
	byStep := map[string]*StepCounts{}
	for _, d := range report.Decisions {
		byStep[d.Step] = &StepCounts{Step: d.Step, Impl: d.Impl}
	}
	all := res.Metrics().AllMetrics()
	for _, c := range all.Counters() {
		if c.Namespace() != stepbeam.Namespace {
			continue
		}
		m.Counters[c.Name()] += c.Result()
		name, metric, _ := strings.Cut(c.Name(), ".")
		sc := byStep[name]
		if sc == nil {
			continue
		}
		switch metric {
		case stepbeam.MetricBatches:
			sc.Batches += c.Result()
		case stepbeam.MetricItems:
			sc.Items += c.Result()
		case stepbeam.MetricBytes:
			sc.Bytes += c.Result()
		case stepbeam.MetricFailures:
			sc.Failures += c.Result()
		case stepbeam.MetricFallback:
			sc.Fallbacks += c.Result()
		}
	}
	for _, d := range all.Distributions() {
		name, metric, _ := strings.Cut(d.Name(), ".")
		if sc := byStep[name]; d.Namespace() == stepbeam.Namespace && sc != nil && metric == stepbeam.MetricKernelNS {
			sc.KernelNS += d.Result().Sum
		}
	}
	for _, d := range report.Decisions {
		m.Steps = append(m.Steps, *byStep[d.Step])
	}
	m.CPUInsteadOfGPU = CPUInsteadOfGPU(report)
	return m, nil
}

// CPUInsteadOfGPU returns why the report's steps that have a GPU op run on
// the CPU under --backend=auto, or "" where none does.
func CPUInsteadOfGPU(report backend.Report) string {
	for _, d := range report.Decisions {
		if d.Requested == backend.Auto && d.GPUOp != "" && d.Impl == backend.CPU {
			return strings.TrimPrefix(d.Reason, "auto: ")
		}
	}
	return ""
}

// PrintSteps writes one line per step: implementation, batches, items (with
// unit naming them, e.g. "pixels" or "rows"), MB in, kernel seconds, items/s
// and failures.
func (m Metrics) PrintSteps(w io.Writer, unit string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "step\timpl\tbatches\t%s\tMB in\tkernel s\t%s/s\tfailures\tcpu fallbacks\t\n", unit, unit)
	for _, st := range m.Steps {
		rate := "-"
		if st.KernelNS > 0 && st.Items > 0 {
			rate = fmt.Sprintf("%.3g", float64(st.Items)/(float64(st.KernelNS)/1e9))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%.3f\t%s\t%d\t%d\t\n", st.Step, st.Impl, st.Batches, st.Items,
			float64(st.Bytes)/1e6, float64(st.KernelNS)/1e9, rate, st.Failures, st.Fallbacks)
	}
	tw.Flush()
	if m.CPUInsteadOfGPU != "" {
		fmt.Fprintf(w, "GPU steps ran on the CPU (--backend=auto): %s\n", m.CPUInsteadOfGPU)
	}
	var fellBack int64
	for _, st := range m.Steps {
		fellBack += st.Fallbacks
	}
	if fellBack > 0 {
		fmt.Fprintf(w, "%d batch(es) of GPU steps ran on the CPU because the GPU executor could not run them (it could not start, has no device, or died twice); the workers' logs say why\n", fellBack)
	}
}

// Run builds a pipeline with build, has explain print sel's report, and
// launches it with lf (runtime/launch: prism by default, Dataflow, a
// portable job server, or only a plan with --plan_out), with a progress line
// on stderr every progress. Where GPU steps were placed in their own
// environments it says so on stderr. It returns the metrics of sel's steps
// (none for a plan or an --async submission), the run's duration, and what
// the launcher did.
func Run(ctx context.Context, name string, sel *backend.Selector, explain func(*backend.Selector) error,
	progress time.Duration, lf launch.Flags, build func(beam.Scope)) (Metrics, time.Duration, launch.Outcome, error) {
	p, s := beam.NewPipelineWithRoot()
	build(s)
	if err := explain(sel); err != nil {
		return Metrics{}, 0, launch.Outcome{}, err
	}
	stopProfile, err := startCPUProfile(lf.CPUProfile)
	if err != nil {
		return Metrics{}, 0, launch.Outcome{}, err
	}
	stop := StartProgress(os.Stderr, name, progress)
	start := time.Now()
	out, err := launch.Run(ctx, p, lf)
	stop()
	if perr := stopProfile(); perr != nil && err == nil {
		err = perr
	}
	took := time.Since(start)
	if err != nil {
		return Metrics{}, took, out, fmt.Errorf("pipeline failed: %w", err)
	}
	if out.Plan != nil && out.Plan.Mode == launch.ModeRightFitting && len(out.Plan.Environments) > 1 && !out.Planned {
		fmt.Fprintf(os.Stderr, "%s: right fitting: %s\n", name, out.Plan.Placement())
	}
	if out.Result == nil {
		return Metrics{}, took, out, nil
	}
	m, err := ReadMetrics(out.Result, sel.Report())
	return m, took, out, err
}

// startCPUProfile starts a CPU profile into path (--cpuprofile); the
// returned function stops it and closes the file. An empty path profiles
// nothing.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile %s: %w", path, err)
		}
		return nil
	}, nil
}

// Selector builds the backend selector of bf (--backend, --backend_override)
// over the steps the pipeline builds: an override naming another step is an
// error that lists them, and the explain report knows exactly those. It asks
// lf's target about GPUs: the executor this process would start
// (--gpu_executor) for a run here, the worker container's for remote workers
// (runtime/launch).
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

// Launched reports a launch that produced no metrics to out: the plan of
// --plan_out (its summary, and where its files are), a Dataflow template
// staged with --template_location, or a job submitted with --async.
func Launched(out io.Writer, o launch.Outcome) error {
	switch {
	case o.Planned && o.Plan != nil:
		if err := o.Plan.WriteText(out); err != nil {
			return err
		}
		_, err := fmt.Fprintf(out, "plan written to %s; nothing was run\n", launchPlanDir())
		return err
	case o.Template != "":
		_, err := fmt.Fprintf(out, "Dataflow template staged to %s (--template_location); no job was submitted\n", o.Template)
		return err
	}
	_, err := fmt.Fprintln(out, "job submitted (--async): no metrics to report")
	return err
}

func launchPlanDir() string {
	if f := flag.Lookup("plan_out"); f != nil {
		return f.Value.String()
	}
	return "--plan_out"
}
