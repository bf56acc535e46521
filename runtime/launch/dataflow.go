package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/protox"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/gcpopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow/dataflowlib"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/hooks/perf"
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
	image, err := containerImage(cfg.ContainerImage)
	if err != nil {
		return Outcome{}, err
	}
	planOnly := f.PlanOut != ""
	env, err := graphx.CreateEnvironment(ctx, graphx.URNEnvDocker, func(context.Context) string { return image })
	if err != nil {
		return Outcome{}, fmt.Errorf("creating the environment: %w", err)
	}
	var streaming bool
	var artifacts []string
	id := fmt.Sprintf("go-beamgpu-%d", time.Now().UnixNano())
	staging := flagValue("staging_location")
	if staging == "" {
		staging = placeholderStaging
	}
	model, err := marshal(p, env, func(edges []*graph.MultiEdge, nodes []*graph.Node) error {
		streaming = !graph.Bounded(nodes)
		if planOnly {
			return nil
		}
		// Cross-language artifacts are staged as Beam's Dataflow runner
		// stages them (none in beamgpu's own pipelines).
		project := *gcpopts.Project
		if project == "" {
			project = gcpopts.GetProjectFromFlagOrEnvironment(ctx)
		}
		var err error
		artifacts, err = dataflowlib.ResolveXLangArtifacts(ctx, edges, project, joinURL(staging, id, "xlang"))
		if err != nil {
			return fmt.Errorf("resolving cross-language artifacts: %w", err)
		}
		return nil
	})
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
	for _, w := range cfg.Warnings() {
		plan.Warnings = append(plan.Warnings, w.Error())
	}
	plan.Warnings = append(plan.Warnings, f.imageOpsWarnings()...)
	if plan.usesGPU() && f.ExecutorOps == "" {
		steps := "every step"
		if len(plan.Hinted) > 0 {
			steps = strings.Join(plan.Hinted, ", ")
		}
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("executor-ops: the GPU steps (%s) were not checked against the ops the worker image's executor serves (no --executor_ops): an image whose executor lacks one runs that step on the CPU of its GPU worker; pass --executor_ops=out/image/executor-ops.txt (make image writes it) or a file with the image's label %s (docker inspect)", steps, ImageOpsLabel))
	}
	if plan.usesGPU() && cfg.ContainerImage == "" {
		return Outcome{}, fmt.Errorf("the job has GPU steps (%s) but no --sdk_container_image: Dataflow's default container has no GPU executor; build and push the beamgpu worker image (make image) and pass it", strings.Join(plan.Hinted, ", "))
	}
	plan.mps = cfg.WorkerAccelerator != nil && cfg.WorkerAccelerator.MPS
	if cfg.WorkerAccelerator != nil {
		plan.workerGPUs = cfg.WorkerAccelerator.Count
	}
	f.setSharing(plan, model, cfg.MachineType)
	opts, err := jobOptions(ctx, cfg, image, streaming, planOnly)
	if err != nil {
		return Outcome{}, err
	}
	opts.ArtifactURLs = artifacts
	flags, _ := cfg.Flags() // validated above
	plan.Dataflow = &DataflowPlan{
		JobName: opts.Name, Project: opts.Project, Region: opts.Region,
		MachineType: cfg.MachineType, ContainerImage: image,
		ServiceOptions: opts.DataflowServiceOptions, Experiments: opts.Experiments,
		WorkerHarnessThreads: cfg.NumberOfWorkerHarnessThreads, Flags: flags,
		Labels: opts.Labels, TemplateLocation: opts.TemplateLocation, Update: opts.Update,
		TransformNameMapping: opts.TransformNameMapping, FlexRSGoal: opts.FlexRSGoal,
		WorkerBinary: workerBinaryNote(opts.Worker),
	}
	if cfg.WorkerAccelerator != nil {
		plan.Dataflow.WorkerAccelerator = cfg.WorkerAccelerator.Hint()
	}
	if plan.usesGPU() {
		plan.SharedMemory = SharedMemoryNote
	}

	workerURL := joinURL(staging, id, "worker")
	modelURL := joinURL(staging, id, "model")
	if planOnly {
		// As staged: the default environment (and its clones, which share
		// its dependencies) fetch the worker binary from workerURL.
		if err := graphx.UpdateDefaultEnvWorkerType(graphx.URNArtifactURLType,
			protox.MustEncode(&pipepb.ArtifactUrlPayload{Url: workerURL}), model); err != nil {
			return Outcome{}, err
		}
		sum := sha256.Sum256(protox.MustEncode(model))
		// The plan is written to this machine and read by people: options
		// whose names suggest a secret are redacted there, and only there.
		shown := *opts
		shown.Options = RedactOptions(opts.Options)
		job, err := dataflowlib.Translate(ctx, model, &shown, workerURL, modelURL, hex.EncodeToString(sum[:]))
		if err != nil {
			return Outcome{}, fmt.Errorf("translating the Dataflow job: %w", err)
		}
		return Outcome{Plan: plan, Planned: true}, plan.Write(f.PlanOut, model, job)
	}
	for _, w := range plan.Warnings {
		slog.Warn("dataflow: the plan warns", "warning", w)
	}
	if opts.Worker == "" {
		// Beam's Execute would cross-compile the pipeline silently; built
		// here, the build says what it builds and how long it took. The
		// architecture is Beam's choice (arm64 on Tau T2A machines).
		var copts runnerlib.CompileOpts
		if strings.HasPrefix(opts.MachineType, "t2a") {
			copts.Arch = "arm64"
		}
		w, err := buildWorker(ctx, "Dataflow", copts)
		if err != nil {
			return Outcome{Plan: plan}, fmt.Errorf("building the worker binary: %w", err)
		}
		defer os.Remove(w)
		opts.Worker = w
	}
	res, err := dataflowlib.Execute(ctx, model, opts, workerURL, modelURL, flagValue("dataflow_endpoint"), *jobopts.Async)
	if err != nil {
		return Outcome{Plan: plan}, err
	}
	if opts.TemplateLocation != "" {
		// Beam's Execute stages the job as a template and submits nothing.
		return Outcome{Plan: plan, Template: opts.TemplateLocation}, nil
	}
	if *jobopts.Async || res == nil {
		return Outcome{Plan: plan}, nil
	}
	return Outcome{Result: res, Plan: plan}, nil
}

// SharedMemoryNote says what the executor needs of a worker container's
// shared memory; plans with GPU steps carry it.
const SharedMemoryNote = "each GPU executor moves batches through shared memory (an arena per connection, sized to the largest batch's inputs and outputs, plus side data such as a kNN reference set, held once): " +
	"where arenas are files in /dev/shm, /dev/shm must hold them (a container's default is 64 MiB; Fashion-MNIST's kNN reference set alone is 188 MB); where they are memfd, they count against the container's memory. " +
	"A batch over the space fails as out-of-memory and is split, a write past a full tmpfs kills the executor (SIGBUS): check `df -h /dev/shm` on a first worker"

// joinURL joins a gs:// (or local) location and path parts with single slashes.
func joinURL(base string, parts ...string) string {
	return strings.TrimSuffix(base, "/") + "/" + strings.Join(parts, "/")
}

// containerImage is the image of the job's environment: --sdk_container_image,
// else the deprecated --worker_harness_container_image, else Dataflow's own
// Go container, as Beam's Dataflow runner chooses (both flags is an error,
// as there).
func containerImage(sdk string) (string, error) {
	legacy := flagValue("worker_harness_container_image")
	switch {
	case sdk != "" && legacy != "" && sdk != legacy:
		return "", fmt.Errorf("--worker_harness_container_image and --sdk_container_image are both set; pass only --sdk_container_image (the other is deprecated)")
	case sdk != "":
		return sdk, nil
	case legacy != "":
		return legacy, CheckImage(legacy)
	}
	if cfg := *jobopts.EnvironmentConfig; cfg != "" && cfg != core.DefaultDockerImage {
		return cfg, CheckImage(cfg)
	}
	return DefaultImage, nil
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

// jobOptions collects the Dataflow job options from cfg and Beam's flags,
// as Beam's Dataflow runner (runners/dataflow, getJobOptions) does, with the
// same checks: labels and the transform name mapping are JSON, a mapping
// needs --update and a streaming pipeline, the autoscaling algorithm and
// FlexRS goal are Dataflow's values, Runner v2 cannot be turned off, and
// exactly one of --use_public_ips and --no_use_public_ips wins. For a plan
// the project and staging location may be placeholders and nothing is
// looked up. The options are the ones submitted: nothing is redacted here
// (RedactOptions is for the written plan).
func jobOptions(ctx context.Context, cfg dataflow.Config, image string, streaming, planOnly bool) (*dataflowlib.JobOptions, error) {
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
	staging := flagValue("staging_location")
	if !planOnly && staging == "" {
		return nil, fmt.Errorf("no staging location: pass --staging_location=gs://BUCKET/PATH")
	}
	var labels map[string]string
	if v := flagValue("labels"); v != "" {
		if err := json.Unmarshal([]byte(v), &labels); err != nil {
			return nil, fmt.Errorf("--labels=%s: want a JSON object of strings, such as {\"team\":\"geo\"}: %w", v, err)
		}
	}
	if v := flagValue("cpu_profiling"); v != "" && !planOnly {
		perf.EnableProfCaptureHook("gcs_profile_writer", v)
	}
	if v := flagValue("autoscaling_algorithm"); v != "" && v != "NONE" && v != "THROUGHPUT_BASED" {
		return nil, fmt.Errorf("--autoscaling_algorithm=%s: want NONE or THROUGHPUT_BASED", v)
	}
	switch cfg.FlexRSGoal {
	case "", "FLEXRS_UNSPECIFIED", "FLEXRS_SPEED_OPTIMIZED", "FLEXRS_COST_OPTIMIZED":
	default:
		return nil, fmt.Errorf("--flexrs_goal=%s: want FLEXRS_UNSPECIFIED, FLEXRS_SPEED_OPTIMIZED or FLEXRS_COST_OPTIMIZED", cfg.FlexRSGoal)
	}
	update := flagValue("update") == "true"
	var mapping map[string]string
	if v := flagValue("transform_name_mapping"); v != "" {
		switch {
		case !streaming:
			return nil, fmt.Errorf("--transform_name_mapping is for updating a streaming pipeline, and this pipeline is batch")
		case !update:
			return nil, fmt.Errorf("--transform_name_mapping without --update: the pipeline would not be updated")
		}
		if err := json.Unmarshal([]byte(v), &mapping); err != nil {
			return nil, fmt.Errorf("--transform_name_mapping=%s: want a JSON object of old to new transform names: %w", v, err)
		}
	}
	noPublicIPs, err := noUsePublicIPs()
	if err != nil {
		return nil, err
	}

	experiments := cfg.ExperimentList()
	for _, e := range experiments {
		for _, off := range []string{"disable_runner_v2", "disable_prime_runner_v2", "disable_portable_runner", "enable_streaming_java_runner"} {
			if strings.Contains(e, off) {
				return nil, fmt.Errorf("experiment %s: Beam's Dataflow runner no longer supports turning off the portable runner (Runner v2)", e)
			}
		}
	}
	defaults := []string{"beam_fn_api", "use_runner_v2", "use_unified_worker", "use_portable_job_submission"}
	if streaming {
		defaults = append(defaults, "enable_streaming_engine", "enable_windmill_service")
	}
	for _, e := range defaults {
		if !containsSub(experiments, e) {
			experiments = append(experiments, e)
		}
	}
	if v := flagValue("min_cpu_platform"); v != "" {
		experiments = append(experiments, "min_cpu_platform="+v)
	}
	hooks.SerializeHooksToOptions()
	beam.PipelineOptions.LoadOptionsFromFlags(notPipelineOptions)
	opts := &dataflowlib.JobOptions{
		Name:                   jobopts.GetJobName(),
		Streaming:              streaming,
		Experiments:            experiments,
		DataflowServiceOptions: cfg.ServiceOptionList(),
		Options:                beam.PipelineOptions.Export(),
		Project:                project,
		Region:                 cfg.Region,
		Zone:                   flagValue("zone"),
		KmsKey:                 flagValue("dataflow_kms_key"),
		Network:                flagValue("network"),
		Subnetwork:             flagValue("subnetwork"),
		NoUsePublicIPs:         noPublicIPs,
		DiskType:               flagValue("disk_type"),
		MachineType:            cfg.MachineType,
		Labels:                 labels,
		ServiceAccountEmail:    flagValue("service_account_email"),
		WorkerRegion:           flagValue("worker_region"),
		WorkerZone:             flagValue("worker_zone"),
		ContainerImage:         image,
		FlexRSGoal:             cfg.FlexRSGoal,
		Update:                 update,
		TransformNameMapping:   mapping,
		Algorithm:              flagValue("autoscaling_algorithm"),
		TempLocation:           flagValue("temp_location"),
		TemplateLocation:       flagValue("template_location"),
		Worker:                 workerBinary(),
		WorkerHarnessThreads:   int64(cfg.NumberOfWorkerHarnessThreads),
		TeardownPolicy:         flagValue("teardown_policy"),
	}
	for name, dst := range map[string]*int64{
		"num_workers": &opts.NumWorkers, "max_num_workers": &opts.MaxNumWorkers, "disk_size_gb": &opts.DiskSizeGb,
		"disk_provisioned_iops": &opts.DiskProvisionedIops, "disk_provisioned_throughput_mibps": &opts.DiskProvisionedThroughputMibps,
	} {
		if v := flagValue(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("--%s=%s: %w", name, v, err)
			}
			*dst = n
		}
	}
	if opts.TempLocation == "" {
		if staging == "" {
			staging = placeholderStaging
		}
		opts.TempLocation = joinURL(staging, "tmp")
	}
	return opts, nil
}

// noUsePublicIPs is Beam's reconciliation of --use_public_ips (default
// true) and --no_use_public_ips (default false): the flag that was passed
// wins; both passed and contradicting is an error.
func noUsePublicIPs() (bool, error) {
	no := flagValue("no_use_public_ips") == "true"
	use := flagValue("use_public_ips") != "false"
	if use != no {
		return no, nil
	}
	useSet, noSet := flagPassed("use_public_ips"), flagPassed("no_use_public_ips")
	switch {
	case useSet && !noSet:
		return !use, nil
	case useSet && noSet:
		return no, fmt.Errorf("--use_public_ips=%t and --no_use_public_ips=%t contradict each other; pass one", use, no)
	}
	return no, nil
}

func flagPassed(name string) bool {
	found := false
	flag.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

func containsSub(list []string, s string) bool {
	for _, v := range list {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}

// Redacted is what a plan shows instead of a secret option's value.
const Redacted = "<redacted>"

// secretWords are the words of an option name that mark its value as
// secret in a written plan: "my_access_key", "apiKey", "db-password",
// "github_token" all have one.
var secretWords = map[string]bool{
	"token": true, "tokens": true, "secret": true, "secrets": true, "password": true, "passwords": true,
	"passwd": true, "pwd": true, "passphrase": true, "credential": true, "credentials": true,
	"key": true, "keys": true, "apikey": true, "accesskey": true, "privatekey": true,
	"auth": true, "authorization": true, "cookie": true, "signature": true,
}

// IsSecretName reports whether an option's name suggests that its value is
// a secret: one of its words (split at '_', '-', '.', and lower-to-upper
// case changes) is one of secretWords.
func IsSecretName(name string) bool {
	var words []string
	var w strings.Builder
	flush := func() {
		if w.Len() > 0 {
			words = append(words, strings.ToLower(w.String()))
			w.Reset()
		}
	}
	prevLower := false
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ':
			flush()
			prevLower = false
			continue
		case r >= 'A' && r <= 'Z' && prevLower:
			flush()
		}
		w.WriteRune(r)
		prevLower = r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
	}
	flush()
	for _, w := range words {
		if secretWords[w] {
			return true
		}
	}
	return secretWords[strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(name))]
}

// RedactOptions returns a copy of opts whose secret-looking options
// (IsSecretName) read Redacted: for the plan written to disk. The options
// submitted to Dataflow are never redacted, or the workers would receive
// "<redacted>" for a value they need.
func RedactOptions(opts runtime.RawOptions) runtime.RawOptions {
	out := runtime.RawOptions{Options: map[string]string{}}
	for k, v := range opts.Options {
		if IsSecretName(k) {
			v = Redacted
		}
		out.Options[k] = v
	}
	return out
}
