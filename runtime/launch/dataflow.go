package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/protox"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/gcpopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow/dataflowlib"
	"github.com/beamgpu/beamgpu/runtime/dataflow"
)

// DefaultImage is Dataflow's own Go SDK container, used when no
// --sdk_container_image is given: it has no GPU executor.
var DefaultImage = "gcr.io/cloud-dataflow/v1beta3/beam_go_sdk:" + core.SdkVersion

// Placeholders stand in a plan for what only a submission needs.
const (
	placeholderProject = "PROJECT"
	placeholderStaging = "gs://STAGING_BUCKET/staging"
)

// runDataflow plans or submits p to Dataflow, with the GPU configuration
// validated after placement (when the right-fitting hints are known) and
// before anything is staged.
func runDataflow(ctx context.Context, p *beam.Pipeline, f Flags) (Outcome, error) {
	cfg, err := f.gpuConfig()
	if err != nil {
		return Outcome{}, err
	}
	image := cfg.ContainerImage
	if image == "" {
		image = DefaultImage
	}
	env, err := graphx.CreateEnvironment(ctx, graphx.URNEnvDocker, func(context.Context) string { return image })
	if err != nil {
		return Outcome{}, fmt.Errorf("creating the environment: %w", err)
	}
	model, err := marshal(p, env)
	if err != nil {
		return Outcome{}, err
	}
	model, plan, err := place(model, f, Dataflow)
	if err != nil {
		return Outcome{}, err
	}
	for _, e := range plan.moved {
		if v, ok := e.Hints["accelerator"]; ok {
			g, err := dataflow.ParseAccelerator(v)
			if err != nil {
				return Outcome{}, fmt.Errorf("environment %s: %w", e.ID, err)
			}
			cfg.RightFitting = append(cfg.RightFitting, g)
		}
	}
	if err := cfg.Validate(); err != nil {
		return Outcome{}, fmt.Errorf("invalid Dataflow GPU configuration:\n%w", err)
	}
	if plan.usesGPU() && cfg.ContainerImage == "" {
		return Outcome{}, fmt.Errorf("the job has GPU steps (%s) but no --sdk_container_image: Dataflow's default container has no GPU executor; build and push the beamgpu worker image (make image) and pass it", strings.Join(plan.Hinted, ", "))
	}
	plan.mps = cfg.WorkerAccelerator != nil && cfg.WorkerAccelerator.MPS
	f.setSharing(plan, model, cfg.MachineType)
	planOnly := f.PlanOut != ""
	opts, err := jobOptions(ctx, cfg, planOnly)
	if err != nil {
		return Outcome{}, err
	}
	flags, _ := cfg.Flags() // validated above
	plan.Dataflow = &DataflowPlan{
		JobName: opts.Name, Project: opts.Project, Region: opts.Region,
		MachineType: cfg.MachineType, ContainerImage: image,
		ServiceOptions: opts.DataflowServiceOptions, Experiments: opts.Experiments,
		WorkerHarnessThreads: cfg.NumberOfWorkerHarnessThreads, Flags: flags,
	}
	if cfg.WorkerAccelerator != nil {
		plan.Dataflow.WorkerAccelerator = cfg.WorkerAccelerator.Hint()
	}

	staging := flagValue("staging_location")
	if staging == "" {
		staging = placeholderStaging
	}
	id := fmt.Sprintf("go-beamgpu-%d", time.Now().UnixNano())
	workerURL := strings.TrimSuffix(staging, "/") + "/" + id + "/worker"
	modelURL := strings.TrimSuffix(staging, "/") + "/" + id + "/model"
	if planOnly {
		// As staged: the default environment (and its clones, which share
		// its dependencies) fetch the worker binary from workerURL.
		if err := graphx.UpdateDefaultEnvWorkerType(graphx.URNArtifactURLType,
			protox.MustEncode(&pipepb.ArtifactUrlPayload{Url: workerURL}), model); err != nil {
			return Outcome{}, err
		}
		sum := sha256.Sum256(protox.MustEncode(model))
		job, err := dataflowlib.Translate(ctx, model, opts, workerURL, modelURL, hex.EncodeToString(sum[:]))
		if err != nil {
			return Outcome{}, fmt.Errorf("translating the Dataflow job: %w", err)
		}
		return Outcome{Plan: plan, Planned: true}, plan.Write(f.PlanOut, model, job)
	}
	res, err := dataflowlib.Execute(ctx, model, opts, workerURL, modelURL, flagValue("dataflow_endpoint"), *jobopts.Async)
	if err != nil {
		return Outcome{Plan: plan}, err
	}
	if *jobopts.Async {
		return Outcome{Plan: plan}, nil
	}
	return Outcome{Result: res, Plan: plan}, nil
}

// notPipelineOptions are flags that configure the launch, not the workers:
// Beam's Dataflow runner leaves the same ones out of the job's pipeline
// options, and the launcher's --plan_out is a path on this machine.
var notPipelineOptions = map[string]bool{
	"dataflow_endpoint": true, "staging_location": true, "worker_harness_container_image": true,
	"sdk_container_image": true, "labels": true, "service_account_email": true, "num_workers": true,
	"max_num_workers": true, "disk_size_gb": true, "disk_type": true, "disk_provisioned_iops": true,
	"disk_provisioned_throughput_mibps": true, "autoscaling_algorithm": true, "zone": true,
	"network": true, "subnetwork": true, "no_use_public_ips": true, "template_location": true,
	"worker_machine_type": true, "machine_type": true, "min_cpu_platform": true,
	"dataflow_worker_jar": true, "worker_region": true, "worker_zone": true, "teardown_policy": true,
	"cpu_profiling": true, "session_recording": true, "update": true, "transform_name_mapping": true,
	"endpoint": true, "job_name": true, "environment_type": true, "environment_config": true,
	"experiments": true, "async": true, "retain_docker_containers": true, "parallelism": true,
	"project": true, "region": true, "runner": true, "plan_out": true,
}

// secretWords mark option names whose values a plan never shows.
var secretWords = []string{"token", "secret", "password", "passwd", "credential", "api_key", "apikey", "private_key"}

// Redacted is what a plan shows instead of a secret option's value.
const Redacted = "<redacted>"

// jobOptions collects the Dataflow job options from cfg and Beam's flags,
// as Beam's Dataflow runner does. For a plan, the project and staging
// location may be placeholders and nothing is looked up.
func jobOptions(ctx context.Context, cfg dataflow.Config, planOnly bool) (*dataflowlib.JobOptions, error) {
	project := *gcpopts.Project
	if project == "" {
		if planOnly {
			project = placeholderProject
		} else if project = gcpopts.GetProjectFromFlagOrEnvironment(ctx); project == "" {
			return nil, fmt.Errorf("no Google Cloud project: pass --project")
		}
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("no Dataflow region: pass --region (for example us-central1)")
	}
	if !planOnly && flagValue("staging_location") == "" {
		return nil, fmt.Errorf("no staging location: pass --staging_location=gs://BUCKET/PATH")
	}
	experiments := cfg.ExperimentList()
	for _, e := range []string{"beam_fn_api", "use_runner_v2", "use_unified_worker", "use_portable_job_submission"} {
		if !containsSub(experiments, e) {
			experiments = append(experiments, e)
		}
	}
	if v := flagValue("min_cpu_platform"); v != "" {
		experiments = append(experiments, "min_cpu_platform="+v)
	}
	hooks.SerializeHooksToOptions()
	beam.PipelineOptions.LoadOptionsFromFlags(notPipelineOptions)
	raw := beam.PipelineOptions.Export()
	for k := range raw.Options {
		for _, w := range secretWords {
			if strings.Contains(strings.ToLower(k), w) {
				raw.Options[k] = Redacted
			}
		}
	}
	opts := &dataflowlib.JobOptions{
		Name:                   jobopts.GetJobName(),
		Experiments:            experiments,
		DataflowServiceOptions: cfg.ServiceOptionList(),
		Options:                raw,
		Project:                project,
		Region:                 cfg.Region,
		Zone:                   flagValue("zone"),
		KmsKey:                 flagValue("dataflow_kms_key"),
		Network:                flagValue("network"),
		Subnetwork:             flagValue("subnetwork"),
		NoUsePublicIPs:         flagValue("no_use_public_ips") == "true",
		DiskType:               flagValue("disk_type"),
		MachineType:            cfg.MachineType,
		ServiceAccountEmail:    flagValue("service_account_email"),
		WorkerRegion:           flagValue("worker_region"),
		WorkerZone:             flagValue("worker_zone"),
		ContainerImage:         cfg.ContainerImage,
		FlexRSGoal:             flagValue("flexrs_goal"),
		Algorithm:              flagValue("autoscaling_algorithm"),
		TempLocation:           flagValue("temp_location"),
		Worker:                 *jobopts.WorkerBinary,
		WorkerHarnessThreads:   int64(cfg.NumberOfWorkerHarnessThreads),
	}
	if opts.ContainerImage == "" {
		opts.ContainerImage = DefaultImage
	}
	for name, dst := range map[string]*int64{"num_workers": &opts.NumWorkers, "max_num_workers": &opts.MaxNumWorkers, "disk_size_gb": &opts.DiskSizeGb} {
		if v := flagValue(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("--%s=%s: %w", name, v, err)
			}
			*dst = n
		}
	}
	if opts.TempLocation == "" {
		staging := flagValue("staging_location")
		if staging == "" {
			staging = placeholderStaging
		}
		opts.TempLocation = strings.TrimSuffix(staging, "/") + "/tmp"
	}
	return opts, nil
}

func containsSub(list []string, s string) bool {
	for _, v := range list {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}
