package launch

import (
	"context"
	"flag"
	"io"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/beamgpu/beamgpu/runtime/dataflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsSecretName(t *testing.T) {
	for _, name := range []string{"my_access_key", "api_key", "apiKey", "ApiKey", "db-password", "github_token", "client_secret",
		"gcp.credentials", "passwd", "privateKey", "auth", "PRIVATE_KEY", "accesskey"} {
		assert.True(t, IsSecretName(name), name)
	}
	for _, name := range []string{"input", "output", "beamgpu_gpu_sharing", "monkey", "keyboard_layout", "tokenizer_path", "secretary", "author"} {
		assert.False(t, IsSecretName(name), name)
	}
}

func TestRedactOptionsCopies(t *testing.T) {
	in := runtime.RawOptions{Options: map[string]string{"my_access_key": "AKIA-REAL", "input": "gs://b/x"}}
	out := RedactOptions(in)
	assert.Equal(t, map[string]string{"my_access_key": Redacted, "input": "gs://b/x"}, out.Options)
	assert.Equal(t, "AKIA-REAL", in.Options["my_access_key"], "the submitted options keep the value")
}

func TestCheckImage(t *testing.T) {
	for _, ok := range []string{"", "us-central1-docker.pkg.dev/p/beamgpu/worker:v1", "gcr.io/p/worker",
		"localhost:5000/worker:dev", "docker.io/library/ubuntu:22.04",
		"europe-docker.pkg.dev/p/r/w@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"} {
		assert.NoError(t, CheckImage(ok), ok)
	}
	for bad, want := range map[string]string{
		"beamgpu-worker:dev":                     "names no registry: Dataflow's workers would pull it from Docker Hub",
		"team/worker:dev":                        "names no registry",
		"gcr.io/p/Worker:v1":                     `"p/Worker" is not a valid image path`,
		"gcr.io/p/worker:v 1":                    `tag "v 1" is not a valid tag`,
		"gcr.io/p/worker@sha256:xyz":             `digest "sha256:xyz" is not ALGORITHM:HEX`,
		"us-central1-docker.pkg.dev/p/r/w:a:b:c": "is not a valid",
	} {
		err := CheckImage(bad)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), want, bad)
	}
}

// setFlags sets Beam's (and the launcher's) flags for one test and restores
// them after.
func setFlags(t *testing.T, kv map[string]string) {
	t.Helper()
	for k, v := range kv {
		f := flag.Lookup(k)
		require.NotNil(t, f, k)
		old := f.Value.String()
		require.NoError(t, flag.Set(k, v))
		t.Cleanup(func() { _ = flag.Set(k, old) })
	}
}

var secretFlag = flag.String("my_access_key", "", "a secret option of a user's pipeline (for the tests)")

// The job options are what Beam's own Dataflow runner would send: labels,
// the template location, update and its name mapping reach them, and the
// options are not redacted (only the written plan is).
func TestJobOptionsParity(t *testing.T) {
	if !beam.Initialized() {
		beam.Init()
	}
	setFlags(t, map[string]string{
		"labels": `{"team":"geo","cost-center":"42"}`, "template_location": "gs://b/templates/landsat",
		"update": "true", "transform_name_mapping": `{"old/read":"read"}`, "job_name": "landsat-nightly",
		"my_access_key": "AKIA-REAL", "num_workers": "2", "max_num_workers": "8", "disk_size_gb": "100",
		"disk_provisioned_iops": "3000", "autoscaling_algorithm": "THROUGHPUT_BASED", "teardown_policy": "TEARDOWN_NEVER",
		"worker_zone": "us-central1-b", "no_use_public_ips": "true", "service_account_email": "runner@p.iam.gserviceaccount.com",
		"worker_binary": "/opt/beamgpu/bin/landsat",
	})
	cfg := dataflow.Config{Region: "us-central1", MachineType: "n1-standard-4", Experiments: []string{"use_runner_v2"}}
	opts, err := jobOptions(context.Background(), cfg, "gcr.io/p/w:1", true, true)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"team": "geo", "cost-center": "42"}, opts.Labels)
	assert.Equal(t, "gs://b/templates/landsat", opts.TemplateLocation)
	assert.True(t, opts.Update)
	assert.Equal(t, map[string]string{"old/read": "read"}, opts.TransformNameMapping)
	assert.Equal(t, "landsat-nightly", opts.Name)
	require.Equal(t, "AKIA-REAL", *secretFlag)
	assert.Equal(t, "AKIA-REAL", opts.Options.Options["my_access_key"], "submitted unredacted")
	assert.Equal(t, Redacted, RedactOptions(opts.Options).Options["my_access_key"])
	assert.Equal(t, int64(2), opts.NumWorkers)
	assert.Equal(t, int64(8), opts.MaxNumWorkers)
	assert.Equal(t, int64(100), opts.DiskSizeGb)
	assert.Equal(t, int64(3000), opts.DiskProvisionedIops)
	assert.Equal(t, "THROUGHPUT_BASED", opts.Algorithm)
	assert.Equal(t, "TEARDOWN_NEVER", opts.TeardownPolicy)
	assert.Equal(t, "us-central1-b", opts.WorkerZone)
	assert.True(t, opts.NoUsePublicIPs)
	assert.Equal(t, "/opt/beamgpu/bin/landsat", opts.Worker)
	assert.Equal(t, []string{"use_runner_v2", "beam_fn_api", "use_unified_worker", "use_portable_job_submission",
		"enable_streaming_engine", "enable_windmill_service"}, opts.Experiments)
	for _, k := range []string{"labels", "template_location", "update", "transform_name_mapping", "job_name", "worker_binary"} {
		_, shown := opts.Options.Options[k]
		assert.Equal(t, k == "worker_binary", shown, "%s as a pipeline option (Beam's runner shows worker_binary only)", k)
	}
}

// Beam's checks on the same options.
func TestJobOptionsRefusals(t *testing.T) {
	if !beam.Initialized() {
		beam.Init()
	}
	cfg := dataflow.Config{Region: "us-central1"}
	for _, tc := range []struct {
		name      string
		flags     map[string]string
		streaming bool
		want      string
	}{
		{"mapping for a batch pipeline", map[string]string{"update": "true", "transform_name_mapping": `{"a":"b"}`}, false, "--transform_name_mapping is for updating a streaming pipeline"},
		{"mapping without update", map[string]string{"transform_name_mapping": `{"a":"b"}`}, true, "--transform_name_mapping without --update"},
		{"mapping not JSON", map[string]string{"update": "true", "transform_name_mapping": `a=b`}, true, "--transform_name_mapping=a=b: want a JSON object"},
		{"labels not JSON", map[string]string{"labels": "team=geo"}, false, `--labels=team=geo: want a JSON object of strings`},
		{"autoscaling", map[string]string{"autoscaling_algorithm": "FAST"}, false, "--autoscaling_algorithm=FAST: want NONE or THROUGHPUT_BASED"},
		{"public IPs both ways", map[string]string{"use_public_ips": "true", "no_use_public_ips": "true"}, false, "contradict each other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setFlags(t, tc.flags)
			_, err := jobOptions(context.Background(), cfg, "gcr.io/p/w:1", tc.streaming, true)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := jobOptions(context.Background(), dataflow.Config{Region: "us-central1", FlexRSGoal: "CHEAP"}, "gcr.io/p/w:1", false, true)
	assert.ErrorContains(t, err, "--flexrs_goal=CHEAP: want FLEXRS_UNSPECIFIED")
	_, err = jobOptions(context.Background(), dataflow.Config{Region: "us-central1", Experiments: []string{"disable_runner_v2"}}, "gcr.io/p/w:1", false, true)
	assert.ErrorContains(t, err, "no longer supports turning off the portable runner")
}

func TestWorkerBinaryNote(t *testing.T) {
	setFlags(t, map[string]string{"worker_binary": ""})
	// A go test binary is never its own worker: it lives in go-build.
	_, ok := selfAsWorker()
	assert.False(t, ok)
	assert.Contains(t, workerBinaryNote(workerBinary()), "--worker_binary="+ImageWorkerBinaries+"/<pipeline>")
	setFlags(t, map[string]string{"worker_binary": "/opt/beamgpu/bin/fashion"})
	assert.Equal(t, "/opt/beamgpu/bin/fashion (--worker_binary)", workerBinaryNote(workerBinary()))
}

// --right_fitting takes true, false, auto or no value; auto (the default)
// right-fits for Dataflow and portable job servers and not on prism.
func TestRightFittingFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want Switch
	}{
		{nil, Auto}, {[]string{"--right_fitting"}, On}, {[]string{"--right_fitting=true"}, On},
		{[]string{"--right_fitting=false"}, Off}, {[]string{"--right_fitting=auto"}, Auto},
	} {
		var f Flags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		f.Register(fs)
		require.NoError(t, fs.Parse(c.args), "%v", c.args)
		assert.Equal(t, c.want, f.RightFitting, "%v", c.args)
		for _, target := range []Target{Prism, Dataflow, Portable} {
			want := c.want == On || c.want == Auto && target != Prism
			assert.Equal(t, want, f.rightFitting(target), "%v on %s", c.args, target)
		}
	}
	var f Flags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	assert.ErrorContains(t, fs.Parse([]string{"--right_fitting=maybe"}), "want true, false or auto")
	assert.Equal(t, "auto", Auto.String())
}
