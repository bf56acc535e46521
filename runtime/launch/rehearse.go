package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The layout of a rehearsal's directory ROOT: the worker image's paths under
// it (containers/build-rehearsal.sh makes it; make rehearse runs that).
const (
	// RehearsalBootWrapper is the PROCESS environments' command, the image's
	// entrypoint (cmd/beamgpu-boot).
	RehearsalBootWrapper = "opt/beamgpu/bin/beamgpu-boot"
	// RehearsalBoot is Beam's Go boot loader, built from the Beam module's
	// sdks/go/container.
	RehearsalBoot = "opt/apache/beam/boot"
	// RehearsalWorkerEnv is containers/worker.env, the image's environment.
	RehearsalWorkerEnv = "opt/beamgpu/worker.env"
	// RehearsalExecutor is the executor, where the image has it
	// (client.DefaultPath).
	RehearsalExecutor = "opt/beamgpu/bin/beamgpu-executor"
)

// The variables beamgpu-boot reads (cmd/beamgpu-boot).
const (
	envRoot        = "BEAMGPU_ROOT"
	envReport      = "BEAMGPU_WORKER_REPORT"
	envEnvironment = "BEAMGPU_ENVIRONMENT"
)

// rehearsalImagePrefix starts a --rehearse value that names a container
// image instead of a directory: prism's DOCKER environments.
const rehearsalImagePrefix = "image:"

// cancelTimeout bounds how long a rehearsal waits, after a worker reported
// that its boot loader failed, for prism to cancel the job.
const cancelTimeout = 30 * time.Second

// rehearsal is a validated --rehearse.
type rehearsal struct {
	root  string // the directory laid out as the image ("" for an image)
	image string // a container image (prism DOCKER environments)
}

// rehearsal checks --rehearse: ROOT must hold the image's layout.
func (f Flags) rehearsal() (*rehearsal, error) {
	if f.Rehearse == "" {
		return nil, nil
	}
	if img, ok := strings.CutPrefix(f.Rehearse, rehearsalImagePrefix); ok {
		if img == "" {
			return nil, fmt.Errorf("--rehearse=%s names no image", f.Rehearse)
		}
		return &rehearsal{image: img}, nil
	}
	root, err := filepath.Abs(f.Rehearse)
	if err != nil {
		return nil, fmt.Errorf("--rehearse=%s: %w", f.Rehearse, err)
	}
	var missing []string
	for _, p := range []string{RehearsalBootWrapper, RehearsalBoot, RehearsalWorkerEnv} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("--rehearse=%s: the directory does not hold the worker image's layout (%s missing): make it with containers/build-rehearsal.sh --out %s (make rehearse does)",
			f.Rehearse, strings.Join(missing, ", "), f.Rehearse)
	}
	return &rehearsal{root: root}, nil
}

// executor is what the launching process probes for the steps' placement:
// the executor the rehearsal's workers start (the image's path under ROOT),
// unless --gpu_executor names one (the workers then get that flag too).
func (r *rehearsal) executor(f *Flags, local backend.Executor) (backend.Executor, error) {
	if r.image != "" {
		return f.imageExecutor()
	}
	if flagValue(client.FlagName) != "" {
		return local, nil
	}
	return client.Probe(filepath.Join(r.root, RehearsalExecutor)), nil
}

// environment is the pipeline's default environment: a PROCESS environment
// whose command is the image's entrypoint under ROOT (or, for an image, a
// DOCKER environment).
func (r *rehearsal) environment(ctx context.Context, reports string) (*pipepb.Environment, error) {
	if r.image != "" {
		return graphx.CreateEnvironment(ctx, graphx.URNEnvDocker, func(context.Context) string { return r.image })
	}
	cfg, err := protojson.Marshal(&pipepb.ProcessPayload{
		Command: filepath.Join(r.root, RehearsalBootWrapper),
		Env:     map[string]string{envRoot: r.root, envReport: reports},
	})
	if err != nil {
		return nil, err
	}
	return graphx.CreateEnvironment(ctx, graphx.URNEnvProcess, func(context.Context) string { return string(cfg) })
}

// nameEnvironments tells each PROCESS environment's worker its environment
// id (right fitting cloned the default one), for its report.
func nameEnvironments(model *pipepb.Pipeline) error {
	for id, env := range model.GetComponents().GetEnvironments() {
		if env.GetUrn() != graphx.URNEnvProcess {
			continue
		}
		pp := &pipepb.ProcessPayload{}
		if err := proto.Unmarshal(env.GetPayload(), pp); err != nil {
			return fmt.Errorf("environment %s: %w", id, err)
		}
		if pp.Env == nil {
			pp.Env = map[string]string{}
		}
		pp.Env[envEnvironment] = id
		payload, err := proto.Marshal(pp)
		if err != nil {
			return fmt.Errorf("environment %s: %w", id, err)
		}
		env.Payload = payload
	}
	return nil
}

// cleanUp removes what the job's workers left on this machine: their
// semi-persistent and working directories under ROOT/tmp and ROOT/work
// (cmd/beamgpu-boot names one of each per worker after its id, which holds
// the job's name), and the copies of
// the worker binary that Beam's boot loader makes to run it, in a directory
// /tmp/binNNN of its own each (boot.go: "the persist dir may be on a noexec
// volume"): in a container /tmp goes with the container, here it stays. A
// copy is known by its name, its size (the staged binary's) and its time
// (after start).
func (r *rehearsal) cleanUp(job, worker string, start time.Time) {
	if r.root == "" || job == "" {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(r.root, "tmp", "*"))
	work, _ := filepath.Glob(filepath.Join(r.root, "work", "*"))
	for _, d := range append(dirs, work...) {
		if strings.Contains(filepath.Base(d), "_"+job+"_") {
			os.RemoveAll(d)
		}
	}
	staged, err := os.Stat(worker)
	if worker == "" || err != nil {
		return
	}
	copies, _ := filepath.Glob("/tmp/bin*/worker")
	for _, c := range copies {
		fi, err := os.Stat(c)
		if err != nil || fi.Size() != staged.Size() || fi.ModTime().Before(start) {
			continue
		}
		if entries, err := os.ReadDir(filepath.Dir(c)); err == nil && len(entries) == 1 {
			os.RemoveAll(filepath.Dir(c))
		}
	}
}

// workerReport is what cmd/beamgpu-boot writes when a worker's boot loader
// fails (its Report).
type workerReport struct {
	Environment string  `json:"environment"`
	WorkerID    string  `json:"worker_id"`
	Boot        string  `json:"boot"`
	Status      string  `json:"status"`
	Seconds     float64 `json:"seconds"`
	Stderr      string  `json:"stderr"`
}

func (w workerReport) String() string {
	var b strings.Builder
	env := w.Environment
	if env == "" {
		env = "?"
	}
	fmt.Fprintf(&b, "the worker of environment %s (worker id %s) failed: Beam's boot loader %s: %s", env, w.WorkerID, w.Boot, w.Status)
	if w.Seconds > 0 {
		fmt.Fprintf(&b, " after %.1f s", w.Seconds)
	}
	if s := strings.TrimSpace(w.Stderr); s != "" {
		fmt.Fprintf(&b, "; its stderr ends:\n%s", indent(lastLines(s, 12)))
	}
	return b.String()
}

// readReports reads the reports in dir, oldest first.
func readReports(dir string) []workerReport {
	names, _ := filepath.Glob(filepath.Join(dir, "worker-*.json"))
	sort.Strings(names)
	var out []workerReport
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			continue
		}
		var r workerReport
		if json.Unmarshal(data, &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// execute runs the job on prism as runPortable does, and watches the
// workers: when one reports that its boot loader failed while the job runs
// (prism would wait for it forever), the job is cancelled and the error is
// the worker's, with the errors the workers logged through prism.
func (r *rehearsal) execute(ctx context.Context, model *pipepb.Pipeline, endpoint string, opt *runnerlib.JobOptions, reports string) (beam.PipelineResult, error) {
	logs := captureWorkerErrors()
	defer logs.restore()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		res beam.PipelineResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := runnerlib.Execute(ctx, model, endpoint, opt, false)
		done <- result{res, err}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case res := <-done:
			if res.err != nil {
				if rs := readReports(reports); len(rs) > 0 {
					return res.res, r.failure(rs, logs, res.err)
				}
			}
			return res.res, res.err
		case <-tick.C:
			rs := readReports(reports)
			if len(rs) == 0 {
				continue
			}
			cancelJob(ctx, endpoint, opt.Name)
			var err error
			select {
			case res := <-done:
				err = res.err
			case <-time.After(cancelTimeout):
				err = fmt.Errorf("prism did not end the job within %v of the cancel", cancelTimeout)
			}
			return nil, r.failure(readReports(reports), logs, err)
		}
	}
}

func (r *rehearsal) failure(rs []workerReport, logs *workerErrors, jobErr error) error {
	var b strings.Builder
	b.WriteString("rehearsal: a worker could not start, so the job was cancelled: ")
	for i, w := range rs {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(w.String())
	}
	if l := logs.lines(); len(l) > 0 {
		fmt.Fprintf(&b, "\nthe workers logged, last:\n%s", indent(strings.Join(l, "\n")))
	}
	if jobErr != nil {
		fmt.Fprintf(&b, "\n(the job: %v)", jobErr)
	}
	return errors.New(b.String())
}

// cancelJob cancels the running jobs named name on the job server.
func cancelJob(ctx context.Context, endpoint, name string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cc, err := grpcx.Dial(ctx, endpoint, 10*time.Second)
	if err != nil {
		return
	}
	defer cc.Close()
	js := jobpb.NewJobServiceClient(cc)
	jobs, err := js.GetJobs(ctx, &jobpb.GetJobsRequest{})
	if err != nil {
		return
	}
	for _, j := range jobs.GetJobInfo() {
		switch j.GetState() {
		case jobpb.JobState_DONE, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED, jobpb.JobState_DRAINED, jobpb.JobState_UPDATED:
			continue
		}
		if j.GetJobName() == name {
			js.Cancel(ctx, &jobpb.CancelJobRequest{JobId: j.GetJobId()})
		}
	}
}

// workerErrors keeps the last errors the workers logged: prism logs what a
// worker sends over Beam's logging service (the boot loader's fatal errors
// among it) in this process, through log/slog, as "[SDK] ...".
type workerErrors struct {
	mu      sync.Mutex
	last    []string
	restore func()
}

// captureWorkerErrors wraps the default logger's handler (the program's
// own, where it set one), so that the workers' errors are kept and still
// logged where the program's diagnostics go, until restore. It starts a
// job: prism's line for the workers it stops at the end of the last one
// is lowered no longer (prismHandler).
func captureWorkerErrors() *workerErrors {
	prismJobDone.Store(false)
	w := &workerErrors{}
	w.restore = setDefault(slog.New(&errorHandler{Handler: defaultHandler(), w: w}))
	return w
}

func (w *workerErrors) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.last...)
}

type errorHandler struct {
	slog.Handler
	w *workerErrors
}

func (h *errorHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && strings.HasPrefix(r.Message, "[SDK] ") {
		h.w.mu.Lock()
		h.w.last = append(h.w.last, firstLines(strings.TrimPrefix(r.Message, "[SDK] "), 4))
		if len(h.w.last) > 6 {
			h.w.last = h.w.last[len(h.w.last)-6:]
		}
		h.w.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

func (h *errorHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &errorHandler{Handler: h.Handler.WithAttrs(as), w: h.w}
}

func (h *errorHandler) WithGroup(name string) slog.Handler {
	return &errorHandler{Handler: h.Handler.WithGroup(name), w: h.w}
}

// firstLines is the first n lines of s, each cut at 300 bytes.
func firstLines(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = append(l[:n], "...")
	}
	return lastLines(strings.Join(l, "\n"), n+1)
}

// lastLines is the last n lines of s, each cut at 300 bytes (the boot
// loader prints its provision info, pipeline options and all, on one line).
func lastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	for i, line := range l {
		if len(line) > 300 {
			l[i] = line[:300] + " ..."
		}
	}
	return strings.Join(l, "\n")
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }
