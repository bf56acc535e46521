package launch

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/pipelinex"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/extworker"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"github.com/beamgpu/beamgpu/runtime/dataflow"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/runtime/rightfit"

	// Registers Dataflow's flags (--project, --region, --staging_location,
	// --worker_machine_type, --sdk_container_image, ...), which the launcher reads.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
)

// Outcome is what Run did.
type Outcome struct {
	// Result is the runner's result (metrics); nil for a plan and for a
	// job submitted with --async.
	Result beam.PipelineResult
	// Plan describes the pipeline as it was (or, with --plan_out, would
	// be) submitted.
	Plan *Plan
	// Planned reports that --plan_out was given: the plan was written and
	// nothing ran.
	Planned bool
	// Template is the --template_location where the job was staged as a
	// Dataflow template instead of being submitted ("" otherwise).
	Template string
}

// Run marshals p, rewrites it for right fitting (or, for whole-pipeline
// GPU, strips the steps' hints), and runs it on the target of --runner: in
// this process on prism, on Dataflow, or on a portable job server. With
// --plan_out it writes the plan and runs nothing. Call f.Validate before
// constructing p, so that a bad configuration fails before any work.
func Run(ctx context.Context, p *beam.Pipeline, f Flags) (Outcome, error) {
	if !beam.Initialized() {
		return Outcome{}, fmt.Errorf("launch: call beam.Init() before running a pipeline")
	}
	if err := f.Validate(); err != nil {
		return Outcome{}, err
	}
	t, _ := Runner()
	if t == Dataflow {
		return runDataflow(ctx, p, f)
	}
	return runPortable(ctx, p, f, t)
}

// marshal turns p into its proto with env as the default environment and
// Beam's pipeline-wide hints and image overrides applied, as Beam's runners do.
// built, where not nil, sees the built graph first (Dataflow resolves
// cross-language artifacts there, and learns whether the pipeline is
// streaming).
func marshal(p *beam.Pipeline, env *pipepb.Environment, built func([]*graph.MultiEdge, []*graph.Node) error) (*pipepb.Pipeline, error) {
	edges, nodes, err := p.Build()
	if err != nil {
		return nil, err
	}
	if built != nil {
		if err := built(edges, nodes); err != nil {
			return nil, err
		}
	}
	model, err := graphx.Marshal(edges, &graphx.Options{Environment: env, PipelineResourceHints: jobopts.GetPipelineResourceHints()})
	if err != nil {
		return nil, fmt.Errorf("marshalling the pipeline: %w", err)
	}
	if err := pipelinex.ApplySdkImageOverrides(model, jobopts.GetSdkImageOverrides()); err != nil {
		return nil, fmt.Errorf("applying container image overrides: %w", err)
	}
	return model, nil
}

// place applies right fitting (or strips the hints for whole-pipeline GPU,
// with --right_fitting=false, or on prism under auto) and starts the plan.
func place(model *pipepb.Pipeline, f Flags, t Target) (*pipepb.Pipeline, *Plan, error) {
	plan := &Plan{Runner: string(t), Hinted: rightfit.Hinted(model)}
	switch {
	case t == Dataflow && f.wholePipelineGPU():
		rightfit.Strip(model)
		plan.Mode = ModeWholePipeline
	case !f.rightFitting(t):
		rightfit.Strip(model)
		plan.Mode = ModeOneEnvironment
		plan.why = "--right_fitting=false"
		if f.RightFitting == Auto {
			plan.why = "on prism every environment runs in this process: --right_fitting=auto leaves right fitting off"
		}
	default:
		np, res, err := rightfit.Apply(model, rightfit.Options{Accelerator: f.Accelerator})
		if err != nil {
			return nil, nil, fmt.Errorf("right fitting: %w", err)
		}
		model = np
		plan.Mode = ModeRightFitting
		plan.FusionBreaks = res.FusionBreaks
		plan.moved = res.Environments
	}
	plan.describe(model)
	return model, plan, nil
}

// runPortable runs on prism (started here unless --endpoint names one) or
// on a portable job server.
func runPortable(ctx context.Context, p *beam.Pipeline, f Flags, t Target) (Outcome, error) {
	endpoint := *jobopts.Endpoint
	rh, err := f.rehearsal()
	if err != nil {
		return Outcome{}, err
	}
	var env *pipepb.Environment
	var reports string
	if rh != nil {
		// The workers' failure reports (cmd/beamgpu-boot).
		if reports, err = os.MkdirTemp("", "beamgpu-rehearsal-"); err != nil {
			return Outcome{}, err
		}
		defer os.RemoveAll(reports)
		env, err = rh.environment(ctx, reports)
	} else {
		if t == Prism && *jobopts.EnvironmentType == "" {
			*jobopts.EnvironmentType = "loopback"
		}
		getEnvCfg := jobopts.GetEnvironmentConfig
		if jobopts.IsLoopback() && f.PlanOut == "" {
			srv, err := extworker.StartLoopback(ctx, 0)
			if err != nil {
				return Outcome{}, err
			}
			defer srv.Stop(ctx)
			getEnvCfg = srv.EnvironmentConfig
		}
		env, err = graphx.CreateEnvironment(ctx, jobopts.GetEnvironmentUrn(ctx), getEnvCfg)
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("creating the environment: %w", err)
	}
	model, err := marshal(p, env, nil)
	if err != nil {
		return Outcome{}, err
	}
	model, plan, err := place(model, f, t)
	if err != nil {
		return Outcome{}, err
	}
	f.setSharing(plan, model, "")
	if rh != nil {
		if err := nameEnvironments(model); err != nil {
			return Outcome{}, err
		}
	}
	if f.PlanOut != "" {
		return Outcome{Plan: plan, Planned: true}, plan.Write(f.PlanOut, model, nil)
	}
	if t == Prism && endpoint == "" {
		if endpoint, err = localPrism(); err != nil {
			return Outcome{}, err
		}
	}
	opt := &runnerlib.JobOptions{
		Name:         jobopts.GetJobName(),
		Experiments:  jobopts.GetExperiments(),
		Worker:       *jobopts.WorkerBinary,
		RetainDocker: *jobopts.RetainDockerContainers,
		Parallelism:  *jobopts.Parallelism,
		Loopback:     rh == nil && jobopts.IsLoopback(),
	}
	var res beam.PipelineResult
	if rh != nil {
		// The workers retrieve this binary through prism's artifact service,
		// as Dataflow's do: --worker_binary, else this binary where it can be
		// one, else Beam cross-compiles the pipeline from its source.
		opt.Worker = workerBinary()
		if opt.Worker == "" {
			// Beam would cross-compile the pipeline inside Execute, which
			// the rehearsal calls on a goroutine of its own; Beam finds the
			// main package by walking the caller's stack
			// (runnerlib/compile.go, buildWorkerBinary), which on that
			// goroutine ends in this package, and would stage this package's
			// archive as the worker ("exec format error" on the workers).
			// Built here, on the program's own stack, it finds main.
			w, err := buildWorker(ctx, "rehearsal", runnerlib.CompileOpts{})
			if err != nil {
				return Outcome{Plan: plan}, fmt.Errorf("rehearsal: building the worker binary: %w", err)
			}
			defer os.Remove(w)
			opt.Worker = w
		}
		start := time.Now()
		res, err = rh.execute(ctx, model, endpoint, opt, reports)
		rh.cleanUp(opt.Name, opt.Worker, start)
	} else {
		res, err = runnerlib.Execute(ctx, model, endpoint, opt, *jobopts.Async)
	}
	if err != nil {
		return Outcome{Plan: plan}, err
	}
	if *jobopts.Async {
		return Outcome{Plan: plan}, nil
	}
	return Outcome{Result: res, Plan: plan}, nil
}

// setSharing works out how the GPU of a worker is shared (plan.Sharing) and
// hands it to the workers as a pipeline option, which their executors are
// started with.
func (f Flags) setSharing(plan *Plan, model *pipepb.Pipeline, machine string) {
	if !plan.usesGPU() {
		return
	}
	processes, why := f.GPUProcesses, "--gpu_processes"
	if processes == 0 {
		processes, why = sdkProcesses(model, machine, plan)
	}
	s := client.ShareGPU(processes, server.DefaultMaxConcurrent)
	plan.Sharing = &SharingPlan{Sharing: s, Why: why, MPS: plan.mps, GPUs: gpusPerWorker(plan)}
	beam.PipelineOptions.Set(client.OptionSharing, s.String())
}

// gpusPerWorker is the GPU count of a GPU worker: the worker accelerator's
// (whole-pipeline GPU), else the largest of the GPU environments' hints; 1
// where none says.
func gpusPerWorker(plan *Plan) int {
	n := max(1, plan.workerGPUs)
	for _, e := range plan.Environments {
		if h := e.Hints["accelerator"]; h != "" {
			if g, err := dataflow.ParseAccelerator(h); err == nil {
				n = max(n, g.Count)
			}
		}
	}
	return n
}

var prismServer struct {
	once     sync.Once
	endpoint string
	err      error
}

// localPrism starts prism's job server in this process on first use and
// returns its endpoint: every later pipeline of the process uses the same
// server, as Beam's own prism runner does.
func localPrism() (string, error) {
	prismServer.once.Do(func() {
		port, err := freePort()
		if err == nil {
			err = withPrismLogger(func() error {
				_, err := prism.CreateJobServer(context.Background(), prism.Options{Port: port})
				return err
			})
		}
		if err != nil {
			prismServer.err = fmt.Errorf("starting prism: %w", err)
			return
		}
		prismServer.endpoint = fmt.Sprintf("localhost:%d", port)
	})
	return prismServer.endpoint, prismServer.err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
