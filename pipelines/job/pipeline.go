package job

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/launch"
	"github.com/beamgpu/beamgpu/transforms/step"
)

// Pipeline is a pipeline program: what Main builds, runs and reports.
// Build is required; the rest is optional.
type Pipeline struct {
	// Name names the program in errors ("name: ..."), progress lines and
	// --help.
	Name string
	// Usage, when set, writes the top of --help: what the program does and
	// how to call it. Main lists the flags after it.
	Usage func(w io.Writer)
	// OwnFlags are the names of the program's own flags (registered on
	// flag.CommandLine), listed by --help before the flags of package job.
	OwnFlags []string
	// Flags are the flags of package job. Nil: Main registers them on
	// flag.CommandLine. A program whose tests change them registers its
	// own (Flags.Register) and sets this.
	Flags *Flags
	// Steps returns the steps Build applies, in their order: the backend
	// selector knows exactly these (an override naming another step is an
	// error that lists them; see step.Backends). Main calls it once the
	// flags are parsed, so the steps may depend on them. Use Steps(...) for
	// a fixed list.
	Steps func() []step.Any
	// WorkerPaths returns the paths, by flag, that the pipeline's workers
	// read or write. When the workers are not this process (Dataflow, a
	// portable job server with containers), a local path is an error
	// before anything runs: they cannot read this machine's files.
	WorkerPaths func() []Path
	// Build constructs the pipeline in s. It applies its steps with
	// r.Options() (the backend selector), so that the explain report lists
	// them. An error is a configuration error: nothing runs and the exit
	// status is 2.
	Build func(ctx context.Context, s beam.Scope, r *Run) error
	// Report, when set, writes the end of a run's summary once the
	// pipeline has run: the program's own counts, and an error when the
	// run failed (exit status 1), e.g. counts that do not reconcile. Nil:
	// each step's counts (Result.PrintSteps). It is not called when
	// nothing ran here (a plan, a Dataflow template, an --async job).
	Report func(ctx context.Context, w io.Writer, res *Result) error
	// Logger, when set, becomes the default logger (slog.SetDefault) once
	// Main has initialised Beam: the diagnostics of beamgpu's packages and
	// Beam's own go through it. Nil: Beam's default, a text handler on
	// stderr at --log_level and --log_kind. (A logger set before Main would
	// be replaced there: Beam's initialisation installs its own.)
	Logger *slog.Logger
}

// Steps returns a Pipeline.Steps of a fixed list.
func Steps(steps ...step.Any) func() []step.Any {
	return func() []step.Any { return slices.Clone(steps) }
}

// Path is a path a pipeline's workers read or write, and the flag that
// named it (for the error).
type Path struct {
	Flag, Path string
}

// Flags are the flags Main registers: backend selection, the launcher's,
// and the run's own.
type Flags struct {
	Backend backend.Flags
	Launch  launch.Flags
	// Progress is --progress: the interval of the progress lines while the
	// pipeline runs (0: none).
	Progress time.Duration
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	f.Backend.Register(fs)
	f.Launch.Register(fs)
	fs.DurationVar(&f.Progress, "progress", 10*time.Second, "interval of progress lines while the pipeline runs (0: none)")
}

// flagNames are the flags of Flags, in the order --help lists them.
var flagNames = []string{"progress", "backend", "backend_override", "explain_json", "gpu_executor",
	"plan_out", "right_fitting", "worker_accelerator", "gpu_accelerator", "gpu_processes", "skip_gpu_rules", "cpuprofile"}

// Run is what a pipeline's Build gets: the run's backend selector, the
// options its steps are applied with, the steps that run their stand-ins,
// and a place for cleanups.
type Run struct {
	ctx   context.Context
	sel   *backend.Selector
	steps []step.Any
	flags *Flags

	mu          sync.Mutex
	cleanups    []func()
	interrupted atomic.Bool
	cleanOnce   sync.Once
	cleanedUp   bool // under mu: the cleanups have been taken to run
}

// Interrupted reports whether the run was stopped (SIGINT or SIGTERM in
// Main, or its context cancelled); a cleanup says so and what was finished.
func (r *Run) Interrupted() bool {
	return r.interrupted.Load() || r.ctx != nil && r.ctx.Err() != nil
}

// The runs Execute is running, for Main to interrupt.
var active struct {
	sync.Mutex
	runs map[*Run]bool
	// stopping: interruptRuns was called; a run that starts after it is
	// interrupted from the start (its cleanups run as they are registered).
	stopping bool
}

func (r *Run) setActive(on bool) {
	active.Lock()
	defer active.Unlock()
	if active.runs == nil {
		active.runs = map[*Run]bool{}
	}
	if on {
		active.runs[r] = true
		if active.stopping {
			r.interrupted.Store(true)
			r.mu.Lock()
			r.cleanedUp = true
			r.mu.Unlock()
		}
	} else {
		delete(active.runs, r)
	}
}

// interruptRuns marks every running run interrupted and runs its cleanups.
func interruptRuns() {
	active.Lock()
	active.stopping = true
	var runs []*Run
	for r := range active.runs {
		runs = append(runs, r)
	}
	active.Unlock()
	for _, r := range runs {
		r.interrupted.Store(true)
		r.cleanup()
	}
}

// Selector returns the backend selector of the run.
func (r *Run) Selector() *backend.Selector { return r.sel }

// Flags returns the run's flags of package job: Build reads, e.g., whether
// the run only writes a plan (Flags().Launch.PlanOut), which reads nothing
// remote.
func (r *Run) Flags() *Flags { return r.flags }

// Options returns the options every step of the pipeline is applied with:
// step.Using(the run's selector).
func (r *Run) Options() []step.Option { return []step.Option{step.Using(r.sel)} }

// StubSteps returns the names of the pipeline's steps that run their
// stand-ins (--backend=stub, or an override), in the order of
// Pipeline.Steps: a run with any computes nothing real for them, and its
// outputs are not results.
func (r *Run) StubSteps() []string {
	var out []string
	for _, s := range r.steps {
		if d, err := r.sel.Resolve(s.Backend()); err == nil && d.Impl == backend.Stub {
			out = append(out, s.Name())
		}
	}
	return out
}

// Cleanup registers f to run once the run is over, whether it succeeded,
// failed or was interrupted (latest first), as testing.T's Cleanup does.
//
// A cleanup registered once the cleanups have run (the run was interrupted
// while it was being built) runs at once.
func (r *Run) Cleanup(f func()) {
	r.mu.Lock()
	if r.cleanedUp {
		r.mu.Unlock()
		f()
		return
	}
	r.cleanups = append(r.cleanups, f)
	r.mu.Unlock()
}

// cleanup runs the cleanups once; a concurrent caller (Main, on a signal,
// while the run ends) waits until they are done.
func (r *Run) cleanup() {
	r.cleanOnce.Do(func() {
		r.mu.Lock()
		fs := r.cleanups
		r.cleanups, r.cleanedUp = nil, true
		r.mu.Unlock()
		for i := len(fs) - 1; i >= 0; i-- {
			fs[i]()
		}
	})
}
