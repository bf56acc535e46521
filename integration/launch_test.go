package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beamgpu/beamgpu/runtime/launch"
	"github.com/beamgpu/beamgpu/runtime/rightfit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// The launcher is tested through the pipelines' own binaries, as a user
// runs them (and as make plan does): built once per test run, all in one go
// build, with the settings go test builds with (cgo as go env says), so that
// the packages they share with the tests are compiled once. The rehearsal's
// worker binaries, which must be static, are workerBin's.
//
// They are kept between runs, in a directory of the user's cache for each
// checkout (like exampleCopy's): go build leaves a binary whose build ID
// is what it would link alone, so that a run whose sources did not change
// links nothing (a link of the three takes a minute on 2 cores, five at a
// load of 25). Without the VCS stamp (-buildvcs=false) a commit alone does
// not change them.
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// pipelines are the main packages pipelineBin builds.
var pipelines = []string{"landsat", "fashion", "infer"}

func pipelineBin(t *testing.T, name string) string {
	t.Helper()
	binOnce.Do(func() { binDir, binErr = buildPipelines("bin", pipelines) })
	require.NoError(t, binErr)
	return filepath.Join(binDir, name)
}

var (
	workerOnce sync.Once
	workerDir  string
	workerErr  error
)

// workerBin is the landsat pipeline built with CGO_ENABLED=0, as the worker
// image's binaries are: a binary that can be its own worker (the rehearsal).
func workerBin(t *testing.T, name string) string {
	t.Helper()
	workerOnce.Do(func() { workerDir, workerErr = buildPipelines("static", []string{"landsat"}, "CGO_ENABLED=0") })
	require.NoError(t, workerErr)
	return filepath.Join(workerDir, name)
}

// buildPipelines builds the pipelines names into the directory kind of
// this checkout's binaries, with env added to the environment.
func buildPipelines(kind string, names []string, env ...string) (string, error) {
	if err := statSources(); err != nil {
		return "", err
	}
	checkout, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	h := sha256.Sum256([]byte(checkout))
	dir := filepath.Join(cache, "beamgpu", "integration-"+hex.EncodeToString(h[:6]), kind)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	args := []string{"build", "-buildvcs=false", "-o", dir + string(filepath.Separator)}
	for _, p := range names {
		args = append(args, "github.com/beamgpu/beamgpu/pipelines/"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return dir, nil
}

// statSources stats every Go source of the checkout. go test caches a
// passing result by the files the test binary opened: a test that builds
// binaries from the sources calls it, so that a change to any of them runs
// the test again.
func statSources() error {
	return filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
			_, err = os.Stat(path)
		}
		return err
	})
}

// runBin runs a pipeline binary and returns its exit status, stdout and stderr.
func runBin(t *testing.T, name string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(pipelineBin(t, name), append([]string{"--progress=0"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, stdout.String(), stderr.String()
}

// planned is a plan written by a pipeline binary, read back.
type planned struct {
	plan     launch.Plan
	pipeline *pipepb.Pipeline
	job      map[string]any
	dir      string
}

func plan(t *testing.T, name string, args ...string) planned {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plan")
	base := []string{"--runner=dataflow", "--region=us-central1", "--plan_out=" + dir}
	// A pipeline's own flag may be given once: --output only if args has none.
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--output=") }) {
		base = append(base, "--output="+filepath.Join(t.TempDir(), "out"))
	}
	args = append(base, args...)
	code, stdout, stderr := runBin(t, name, args...)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "nothing was run")
	var p planned
	p.dir = dir
	js, err := os.ReadFile(filepath.Join(dir, launch.FilePlanJSON))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &p.plan))
	pb, err := os.ReadFile(filepath.Join(dir, launch.FilePipeline))
	require.NoError(t, err)
	p.pipeline = &pipepb.Pipeline{}
	require.NoError(t, proto.Unmarshal(pb, p.pipeline))
	jj, err := os.ReadFile(filepath.Join(dir, launch.FileJob))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(jj, &p.job))
	txt, err := os.ReadFile(filepath.Join(dir, launch.FilePlanText))
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(txt)), strings.TrimSpace(stdout[:strings.Index(stdout, "plan written")]), "plan.txt is what was printed")
	return p
}

// leafEnv returns the environment of every SDK leaf transform whose unique
// name starts with prefix.
func leafEnvs(p *pipepb.Pipeline, prefix string) []string {
	var out []string
	for _, t := range p.GetComponents().GetTransforms() {
		if len(t.GetSubtransforms()) == 0 && t.GetEnvironmentId() != "" && strings.HasPrefix(t.GetUniqueName(), prefix) {
			out = append(out, t.GetEnvironmentId())
		}
	}
	return out
}

func (p planned) envHints(id string) map[string][]byte {
	return p.pipeline.GetComponents().GetEnvironments()[id].GetResourceHints()
}

func (p planned) images() []any {
	pools := p.job["environment"].(map[string]any)["workerPools"].([]any)
	return pools[0].(map[string]any)["sdkHarnessContainerImages"].([]any)
}

const image = "us-central1-docker.pkg.dev/example/beamgpu/worker:test"

// Right fitting: the GPU steps' transforms, and only they, sit in an
// environment with the accelerator hint, after a fusion break; the Dataflow
// job has one container entry per environment and no worker_accelerator.
func TestPlanRightFitting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pipeline  string
		gpu, cpu  []string
		gpuSteps  []string
		extraArgs []string
	}{
		{"landsat", []string{"toa_ndvi/", "composite/"}, []string{"scan/", "read/", "write/"}, []string{"composite", "toa_ndvi"}, nil},
		{"fashion", []string{"standardize/", "RunInference/mlp/"}, []string{"decode/", "RunInference/batch.Elements/"}, []string{"RunInference/mlp", "standardize"}, nil},
	} {
		t.Run(tc.pipeline, func(t *testing.T) {
			p := plan(t, tc.pipeline, append([]string{"--sdk_container_image=" + image}, tc.extraArgs...)...)
			assert.Equal(t, launch.ModeRightFitting, p.plan.Mode)
			assert.Equal(t, tc.gpuSteps, p.plan.Hinted)
			require.Len(t, p.pipeline.GetComponents().GetEnvironments(), 2)
			assert.Empty(t, p.envHints("go"), "the default environment carries no hints")
			gpuHints := p.envHints("go-gpu")
			assert.Equal(t, "type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx", string(gpuHints[rightfit.URNAccelerator]))
			assert.Equal(t, "16000000000", string(gpuHints[rightfit.URNMinRAM]))
			for _, prefix := range tc.gpu {
				envs := leafEnvs(p.pipeline, prefix)
				require.NotEmpty(t, envs, prefix)
				for _, e := range envs {
					assert.Equal(t, "go-gpu", e, prefix)
				}
			}
			for _, prefix := range tc.cpu {
				envs := leafEnvs(p.pipeline, prefix)
				require.NotEmpty(t, envs, prefix)
				for _, e := range envs {
					assert.Equal(t, "go", e, prefix)
				}
			}
			require.NotEmpty(t, p.plan.FusionBreaks)
			reshuffles := 0
			for _, tr := range p.pipeline.GetComponents().GetTransforms() {
				if tr.GetSpec().GetUrn() == graphx.URNReshuffle && strings.Contains(tr.GetUniqueName(), "fusion_break") {
					reshuffles++
				}
				for k := range tr.GetAnnotations() {
					assert.False(t, strings.HasPrefix(k, rightfit.AnnotationPrefix), "annotation %s left on %s", k, tr.GetUniqueName())
				}
			}
			assert.Equal(t, len(p.plan.FusionBreaks), reshuffles)
			assert.Len(t, p.images(), 2, "one container entry per environment")
			js, _ := os.ReadFile(filepath.Join(p.dir, launch.FileJob))
			assert.NotContains(t, string(js), "worker_accelerator")
			assert.Contains(t, string(js), image)
		})
	}
}

// Whole-pipeline GPU: worker_accelerator in the job's service options, one
// environment, no resource hints anywhere.
func TestPlanWholePipelineGPU(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"landsat", "fashion"} {
		t.Run(name, func(t *testing.T) {
			p := plan(t, name, "--sdk_container_image="+image, "--worker_machine_type=g2-standard-8",
				"--worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps")
			assert.Equal(t, launch.ModeWholePipeline, p.plan.Mode)
			require.Len(t, p.pipeline.GetComponents().GetEnvironments(), 1)
			for id, env := range p.pipeline.GetComponents().GetEnvironments() {
				assert.Empty(t, env.GetResourceHints(), id)
			}
			assert.Empty(t, p.plan.FusionBreaks)
			opts := p.job["environment"].(map[string]any)["serviceOptions"].([]any)
			assert.Contains(t, opts, "worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps")
			require.NotNil(t, p.plan.Sharing)
			assert.True(t, p.plan.Sharing.MPS)
			assert.Equal(t, 1, p.plan.Sharing.Processes)
			txt, _ := os.ReadFile(filepath.Join(p.dir, launch.FilePlanText))
			assert.Contains(t, string(txt), "MPS on")
			assert.Contains(t, string(txt), "GPU steps (every worker has the GPU; their resource hints were stripped): ")
			assert.NotContains(t, string(txt), "carry resource hints")
		})
	}
}

// Dataflow's own form of the whole-pipeline GPU, the raw service option of
// its L4 page, plans as the typed flag does (and is checked as it is).
func TestPlanRawWorkerAccelerator(t *testing.T) {
	t.Parallel()
	p := plan(t, "landsat", "--sdk_container_image="+image, "--worker_machine_type=g2-standard-8",
		"--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver,enable_google_cloud_profiler")
	assert.Equal(t, launch.ModeWholePipeline, p.plan.Mode)
	require.Len(t, p.pipeline.GetComponents().GetEnvironments(), 1)
	opts := p.job["environment"].(map[string]any)["serviceOptions"].([]any)
	assert.Equal(t, []any{"worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver", "enable_google_cloud_profiler"}, opts)
	assert.Equal(t, "type:nvidia-l4;count:1;install-nvidia-driver", p.plan.Dataflow.WorkerAccelerator)
}

// The job options of Beam's Dataflow runner reach the job: labels and the
// job name in job.json, the template location and the worker binary in the
// plan; the plan says what the workers' containers need, and the rules'
// warnings.
func TestPlanJobOptions(t *testing.T) {
	t.Parallel()
	p := plan(t, "landsat", "--sdk_container_image="+image, "--region=me-central2", "--job_name=landsat-nightly",
		`--labels={"team":"geo","cost-center":"42"}`, "--template_location=gs://b/templates/landsat",
		"--worker_binary=/opt/beamgpu/bin/landsat", "--max_num_workers=8")
	assert.Equal(t, map[string]any{"team": "geo", "cost-center": "42"}, p.job["labels"])
	assert.Equal(t, "landsat-nightly", p.job["name"])
	pools := p.job["environment"].(map[string]any)["workerPools"].([]any)
	assert.EqualValues(t, 8, pools[0].(map[string]any)["autoscalingSettings"].(map[string]any)["maxNumWorkers"])
	require.NotNil(t, p.plan.Dataflow)
	assert.Equal(t, "gs://b/templates/landsat", p.plan.Dataflow.TemplateLocation)
	assert.Equal(t, "/opt/beamgpu/bin/landsat (--worker_binary)", p.plan.Dataflow.WorkerBinary)
	txt, err := os.ReadFile(filepath.Join(p.dir, launch.FilePlanText))
	require.NoError(t, err)
	for _, want := range []string{
		"labels:          cost-center=42, team=geo",
		"template:        staged to gs://b/templates/landsat, not submitted",
		"worker binary:   /opt/beamgpu/bin/landsat (--worker_binary)",
		"Worker container: each GPU executor moves batches through shared memory",
		"check `df -h /dev/shm` on a first worker",
		"Warnings (2; the job is valid by the rules, but check):",
		"gpu-region: region me-central2 is not known to offer nvidia-tesla-t4 to Dataflow",
		// No --executor_ops: the plan says what it could not check.
		"executor-ops: the GPU steps (composite, toa_ndvi) were not checked against the ops the worker image's executor serves (no --executor_ops)",
	} {
		assert.Contains(t, string(txt), want)
	}
	// Beam's own refusal: a transform name mapping updates streaming jobs.
	code, _, stderr := runBin(t, "landsat", "--runner=dataflow", "--region=us-central1", "--sdk_container_image="+image,
		"--plan_out="+filepath.Join(t.TempDir(), "p"), "--output="+t.TempDir(), "--update", `--transform_name_mapping={"a":"b"}`)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "--transform_name_mapping is for updating a streaming pipeline, and this pipeline is batch")
}

// The fashion pipeline plans for Dataflow with everything on Cloud Storage:
// images, model, training set and outputs, offline (a plan lists nothing).
func TestPlanFashionOnCloudStorage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--input=gs://b/fashion/t10k-images-idx3-ubyte.gz", "--model_path=gs://b/models/mlp.bgmlp"},
		{"--input=gs://b/fashion", "--model=knn", "--data_dir=gs://b/fashion"},
		{}, // the embedded test set and model: read from the binary on the workers
	} {
		p := plan(t, "fashion", append([]string{"--sdk_container_image=" + image, "--output=gs://b/out"}, args...)...)
		assert.Equal(t, launch.ModeRightFitting, p.plan.Mode, "%q", args)
		assert.NotEmpty(t, p.plan.Hinted)
	}
}

func TestFashionHelpBeam(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runBin(t, "fashion", "--help_beam")
	assert.Equal(t, 0, code)
	for _, f := range []string{"-sdk_container_image", "-worker_binary", "-labels", "-template_location", "-dataflow_service_options"} {
		assert.Contains(t, stdout, f)
	}
	for _, name := range []string{"fashion", "landsat"} {
		code, _, stderr := runBin(t, name, "--help")
		assert.Equal(t, 0, code)
		assert.Contains(t, stderr, "'"+name+" --help_beam' lists them")
		assert.Contains(t, stderr, `--right_fitting (default "auto")`)
		assert.Contains(t, stderr, "--cpuprofile")
	}
}

// GPU sharing follows the processes per GPU: with --gpu_processes=4 each
// executor budgets a quarter of the memory and runs one batch at a time.
func TestPlanGPUSharing(t *testing.T) {
	t.Parallel()
	p := plan(t, "landsat", "--sdk_container_image="+image, "--gpu_processes=4")
	require.NotNil(t, p.plan.Sharing)
	assert.Equal(t, 4, p.plan.Sharing.Processes)
	assert.Equal(t, 1, p.plan.Sharing.MaxConcurrent)
	opts := p.job["environment"].(map[string]any)["sdkPipelineOptions"].(map[string]any)["beam:option:go_options:v1"].(map[string]any)["options"].(map[string]any)
	assert.Equal(t, "processes=4,max_concurrent=1,memory_fraction=0.8", opts["beamgpu_gpu_sharing"], "the workers get the sharing as a pipeline option")
}

// On a worker with several GPUs every executor uses all of them, each GPU
// shared by all the worker's SDK processes: the budget and the concurrent
// batches hold per GPU, and the plan says how many GPUs a worker has
// (whole-pipeline GPU: the worker accelerator's count; right fitting: the
// hint's).
func TestPlanGPUSharingOnSeveralGPUs(t *testing.T) {
	t.Parallel()
	p := plan(t, "landsat", "--sdk_container_image="+image, "--gpu_processes=2", "--worker_machine_type=a2-highgpu-4g",
		"--worker_accelerator=type:nvidia-tesla-a100;count:4;install-nvidia-driver")
	require.NotNil(t, p.plan.Sharing)
	assert.Equal(t, 4, p.plan.Sharing.GPUs)
	assert.Equal(t, 2, p.plan.Sharing.Processes)
	assert.Equal(t, 1, p.plan.Sharing.MaxConcurrent)
	txt, _ := os.ReadFile(filepath.Join(p.dir, launch.FilePlanText))
	assert.Contains(t, string(txt), "GPU sharing: 4 GPU(s) per worker, each shared by 2 SDK process(es) (--gpu_processes)")
	assert.Contains(t, string(txt), "on each: memory budget 0.4 of the GPU's memory (0.8 over 2), at most 1 batch(es) at once (4 on the worker's 4 GPU(s))")

	rf := plan(t, "landsat", "--sdk_container_image="+image, "--gpu_accelerator=type:nvidia-l4;count:2;install-nvidia-driver:5xx")
	require.NotNil(t, rf.plan.Sharing)
	assert.Equal(t, 2, rf.plan.Sharing.GPUs, "the right-fitted environment's hint")
}

// Nothing in a plan is a credential: a service-account key named by
// GOOGLE_APPLICATION_CREDENTIALS is never read into it.
func TestPlanHoldsNoCredentials(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key.json")
	require.NoError(t, os.WriteFile(key, []byte(`{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----SECRET-MATERIAL"}`), 0o600))
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", key)
	p := plan(t, "landsat", "--sdk_container_image="+image, "--project=my-project", "--service_account_email=runner@my-project.iam.gserviceaccount.com")
	entries, err := os.ReadDir(p.dir)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(p.dir, e.Name()))
		require.NoError(t, err)
		for _, bad := range []string{"SECRET-MATERIAL", "PRIVATE KEY", key} {
			assert.NotContains(t, string(data), bad, e.Name())
		}
	}
}

// Every invalid configuration is refused with its rule, before anything is
// read, built or written.
func TestInvalidGPUConfigurationsAreRejected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"T4 on an A2 machine", []string{"--worker_machine_type=a2-highgpu-1g", "--worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx"}, "gpu-machine-family"},
		{"3 T4s", []string{"--worker_machine_type=n1-standard-8", "--worker_accelerator=type:nvidia-tesla-t4;count:3;install-nvidia-driver:5xx"}, "gpu-count"},
		{"too many vCPUs for one V100", []string{"--worker_machine_type=n1-standard-32", "--worker_accelerator=type:nvidia-tesla-v100;count:1;install-nvidia-driver:5xx"}, "vcpu-memory-per-gpu"},
		{"not a region", []string{"--region=mars", "--worker_machine_type=n1-standard-8", "--worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx"}, "gpu-region"},
		{"P100 cannot load compute_70 PTX", []string{"--worker_machine_type=n1-standard-8", "--worker_accelerator=type:nvidia-tesla-p100;count:1;install-nvidia-driver:5xx"}, "gpu-compute-capability"},
		{"no driver", []string{"--worker_machine_type=g2-standard-8", "--worker_accelerator=type:nvidia-l4;count:1"}, "gpu-driver"},
		{"the T4's default driver is 4xx", []string{"--worker_machine_type=n1-standard-8", "--worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver"}, "gpu-driver"},
		{"a 4xx driver on a right-fitted L4", []string{"--gpu_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:4xx"}, "gpu-driver"},
		{"hint machine_type of another family", []string{"--gpu_accelerator=type:nvidia-l4;count:1;machine_type:n1-standard-8;install-nvidia-driver:5xx"}, "gpu-machine-family"},
		{"MPS with 2 GPUs", []string{"--worker_machine_type=n1-standard-8", "--worker_accelerator=type:nvidia-tesla-t4;count:2;install-nvidia-driver:5xx;use_nvidia_mps"}, "mps-single-gpu"},
		{"MPS with one SDK container", []string{"--worker_machine_type=n1-standard-8", "--experiments=no_use_multiple_sdk_containers", "--worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx;use_nvidia_mps"}, "mps-multiple-sdk-containers"},
		{"MPS on Prime", []string{"--dataflow_service_options=enable_prime", "--worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx;use_nvidia_mps"}, "mps-prime"},
		{"hints with worker_accelerator", []string{"--worker_machine_type=n1-standard-8", "--gpu_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:5xx", "--worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx"}, "right-fitting-exclusive"},
		{"FlexRS with GPUs", []string{"--worker_machine_type=g2-standard-8", "--flexrs_goal=FLEXRS_COST_OPTIMIZED", "--worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:5xx"}, "gpu-flexrs"},
		{"raw worker_accelerator, checked as the typed one", []string{"--dataflow_service_options=worker_accelerator=type:nvidia-tesla-t4;count:1"}, "gpu-driver"},
		{"two GPUs, typed and raw", []string{"--worker_machine_type=g2-standard-8", "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver", "--worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:5xx"}, "give two GPUs; give one"},
		{"bad driver version", []string{"--worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:newest"}, `driver version "newest" is not one Dataflow installs`},
		{"image without a registry", []string{"--sdk_container_image=beamgpu-worker:dev"}, "--sdk_container_image=beamgpu-worker:dev names no registry"},
		{"unknown right-fitting GPU", []string{"--gpu_accelerator=type:nvidia-rtx-9000;count:1;install-nvidia-driver:5xx"}, "gpu-type"},
		{"bad accelerator syntax", []string{"--worker_accelerator=nvidia-tesla-t4"}, "--worker_accelerator"},
		{"unknown runner", []string{"--runner=direct"}, "--runner=direct"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "plan")
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"--runner=dataflow", "--region=us-central1", "--sdk_container_image=" + image, "--plan_out=" + dir, "--output=" + out}, tc.args...)
			code, stdout, stderr := runBin(t, "landsat", args...)
			assert.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.NoDirExists(t, dir, "nothing is planned")
			assert.NoDirExists(t, out, "nothing is read or written")
		})
	}
	// A GPU job needs the worker image: Dataflow's own has no executor.
	code, _, stderr := runBin(t, "landsat", "--runner=dataflow", "--region=us-central1", "--backend=gpu",
		"--plan_out="+filepath.Join(t.TempDir(), "p"), "--output="+filepath.Join(t.TempDir(), "o"))
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "sdk_container_image")
}

// The right-fitted pipeline runs on prism when asked (--right_fitting): two
// environments (a loopback worker each), GPU steps through an
// out-of-process executor, and outputs byte-identical to the CPU run's. By
// default (auto) prism runs one environment: its workers are all in this
// process, and the fusion breaks would only hold data in memory. The
// outputs are the same.
func TestRightFittedLandsatOnPrism(t *testing.T) {
	t.Parallel()
	cpuOut := t.TempDir()
	code, stdout, stderr := runBin(t, "landsat", "--backend=cpu", "--output="+cpuOut)
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	assert.NotContains(t, stderr, `msg="right fitting"`)
	for _, fitted := range []bool{true, false} {
		gpuOut := t.TempDir()
		args := []string{"--backend=gpu", "--gpu_executor=" + executorPath, "--output=" + gpuOut}
		if fitted {
			args = append(args, "--right_fitting")
		}
		code, stdout, stderr = runBin(t, "landsat", args...)
		require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
		if fitted {
			assert.Contains(t, stderr, `msg="right fitting" pipeline=landsat environments="2 environments: go (`)
			assert.Contains(t, stderr, "go-gpu [accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx, min_ram=16000000000] (composite,")
		} else {
			assert.NotContains(t, stderr, `msg="right fitting"`)
		}
		assert.Contains(t, stdout, "1 done, 0 failed")
		var files int
		require.NoError(t, filepath.WalkDir(cpuOut, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(path) == ".json" && filepath.Base(path) == "summary.json" {
				return err
			}
			rel, _ := filepath.Rel(cpuOut, path)
			want, _ := os.ReadFile(path)
			got, err := os.ReadFile(filepath.Join(gpuOut, rel))
			require.NoError(t, err)
			assert.Equal(t, want, got, "%s (right fitting %v)", rel, fitted)
			files++
			return nil
		}))
		assert.Greater(t, files, 8)
	}
}

// A Dataflow submission refuses paths the workers cannot reach, before
// anything is read or submitted (plans are not held to it).
func TestDataflowSubmissionNeedsWorkerPaths(t *testing.T) {
	t.Parallel()
	base := []string{"--runner=dataflow", "--region=us-central1", "--project=p", "--staging_location=gs://b/s", "--sdk_container_image=" + image}
	code, _, stderr := runBin(t, "landsat", base...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--input: the dataflow workers cannot read this machine's files")
	code, _, stderr = runBin(t, "landsat", append(base, "--input=gs://b/scenes", "--output="+t.TempDir())...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--output="+os.TempDir())
	// The fashion pipeline's embedded data is in the workers' binary; its
	// local paths are refused as landsat's are.
	code, _, stderr = runBin(t, "fashion", base...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--output=out/fashion: the dataflow workers cannot read a path on this machine")
	code, _, stderr = runBin(t, "fashion", append(base, "--output=gs://b/o", "--model_path=/tmp/m.bgmlp")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--model_path=/tmp/m.bgmlp: the dataflow workers cannot read a path on this machine")
	code, _, stderr = runBin(t, "fashion", append(base, "--output=gs://b/o", "--model=knn")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--data_dir=/usr/share/datasets/fashion-mnist: the dataflow workers cannot read a path on this machine")
}

// Any portable job server, by endpoint: here a prism job server started by
// the test, with the pipeline's workers in loopback.
func TestPortableJobServerByEndpoint(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	_, err := prism.CreateJobServer(context.Background(), prism.Options{Port: port})
	require.NoError(t, err)
	out := t.TempDir()
	code, stdout, stderr := runBin(t, "landsat", "--runner=portable", fmt.Sprintf("--endpoint=localhost:%d", port),
		"--environment_type=loopback", "--backend=gpu", "--gpu_executor="+executorPath, "--output="+out)
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	assert.Contains(t, stdout, "1 done, 0 failed")
	assert.Contains(t, stderr, `environments="2 environments`)
	assert.FileExists(t, filepath.Join(out, "LC08_L1TP_195025_20130707_20170503_01_T1", "ndvi.npy"))

	code, _, stderr = runBin(t, "landsat", "--runner=portable", "--output="+out)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "needs --endpoint")
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "localhost:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A pipeline that used the GPU executor leaves nothing of it behind: the
// executor, seeing its parent gone, shuts down and removes its socket
// directory, even though its stderr (a pipe to the pipeline) is closed by
// then.
func TestExecutorLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	cmd := exec.Command(pipelineBin(t, "fashion"), "--progress=0", "--backend=gpu", "--gpu_executor="+executorPath,
		"--output="+t.TempDir())
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "10000 predicted")
	assert.Eventually(t, func() bool {
		left, _ := filepath.Glob(filepath.Join(tmp, "beamgpu-executor-*"))
		return len(left) == 0
	}, 10*time.Second, 50*time.Millisecond, "the executor's socket directory is removed")
}
