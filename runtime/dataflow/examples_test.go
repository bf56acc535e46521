package dataflow

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docExample is a GPU configuration as one of Dataflow's pages (or a
// sample Google or Beam publish) writes it, verbatim, with its source. The
// pages write placeholders (GPU_TYPE, GPU_COUNT, ...): fill gives the values
// the test puts in their place, as a user would.
type docExample struct {
	source string
	text   string
	fill   map[string]string
	// want is what the example configures.
	want func(t *testing.T, c Config)
	// invalid, where set, is the rule the filled example breaks (and why
	// that is right); "" where it is a valid job for the beamgpu image.
	invalid string
}

func wantWhole(typ string, count int, driver string, mps bool, machine string) func(*testing.T, Config) {
	return func(t *testing.T, c Config) {
		require.NotNil(t, c.WorkerAccelerator)
		assert.Equal(t, GPU{Type: typ, Count: count, InstallDriver: true, Driver: driver, MPS: mps}, *c.WorkerAccelerator)
		assert.Equal(t, machine, c.MachineType)
		assert.Empty(t, c.ServiceOptions, "the raw worker_accelerator became the typed one")
	}
}

var docExamples = []docExample{
	// Use NVIDIA L4 GPUs: one example per SDK.
	{source: srcL4 + " (Java)", text: `--workerMachineType=G2_MACHINE_TYPE
--dataflowServiceOptions="worker_accelerator=type:nvidia-l4;count:GPU_COUNT;install-nvidia-driver"`,
		fill: map[string]string{"G2_MACHINE_TYPE": "g2-standard-8", "GPU_COUNT": "1"},
		want: wantWhole("nvidia-l4", 1, "", false, "g2-standard-8")},
	{source: srcL4 + " (Python)", text: `--machine_type=G2_MACHINE_TYPE
--dataflow_service_options="worker_accelerator=type:nvidia-l4;count:GPU_COUNT;install-nvidia-driver"`,
		fill: map[string]string{"G2_MACHINE_TYPE": "g2-standard-24", "GPU_COUNT": "2"},
		want: wantWhole("nvidia-l4", 2, "", false, "g2-standard-24")},
	{source: srcL4 + " (Go)", text: `--worker_machine_type=G2_MACHINE_TYPE
--dataflow_service_options="worker_accelerator=type:nvidia-l4;count:GPU_COUNT;install-nvidia-driver"`,
		fill: map[string]string{"G2_MACHINE_TYPE": "g2-standard-8", "GPU_COUNT": "1"},
		want: wantWhole("nvidia-l4", 1, "", false, "g2-standard-8")},

	// Improve performance on a shared GPU by using NVIDIA MPS.
	{source: srcMPS, text: `--dataflow_service_options="worker_accelerator=type:GPU_TYPE;count:1;install-nvidia-driver;use_nvidia_mps"`,
		fill: map[string]string{"GPU_TYPE": "nvidia-l4"},
		want: func(t *testing.T, c Config) {
			require.NotNil(t, c.WorkerAccelerator)
			assert.Equal(t, GPU{Type: "nvidia-l4", Count: 1, InstallDriver: true, MPS: true}, *c.WorkerAccelerator)
		},
		invalid: "machine-type: the page's line names no machine type, which a worker_accelerator needs"},

	// Right fitting: the accelerator hint, its pipeline form, and the
	// Python per-transform form (whose GPU type, nvidia-tesla-l4, is the
	// page's own slip for nvidia-l4: it parses, and the rules refuse it).
	{source: srcRightFitting, text: `accelerator="type:GPU_TYPE;count:GPU_COUNT;machine_type:MACHINE_TYPE;CONFIGURATION_OPTIONS"`,
		fill: map[string]string{"GPU_TYPE": "nvidia-l4", "GPU_COUNT": "1", "MACHINE_TYPE": "g2-standard-16", "CONFIGURATION_OPTIONS": "install-nvidia-driver"},
		want: func(t *testing.T, c Config) {
			require.Len(t, c.RightFitting, 1)
			assert.Equal(t, GPU{Type: "nvidia-l4", Count: 1, MachineType: "g2-standard-16", InstallDriver: true}, c.RightFitting[0])
		}},
	{source: srcRightFitting, text: `    python my_pipeline.py \
        --runner=DataflowRunner \
        --resource_hints=min_ram=numberGB \
        --resource_hints=accelerator="type:type;count:number;install-nvidia-driver" \
        ...`,
		fill: map[string]string{"numberGB": "16GB", "type:type": "type:nvidia-tesla-t4", "count:number": "count:1"},
		want: func(t *testing.T, c Config) {
			assert.Equal(t, int64(16e9), c.MinRAMBytes)
			require.Len(t, c.RightFitting, 1)
			assert.Equal(t, GPU{Type: "nvidia-tesla-t4", Count: 1, InstallDriver: true}, c.RightFitting[0])
		},
		invalid: "gpu-driver: the T4's default driver is a 4xx one, too old for the CUDA 12 image"},
	{source: srcRightFitting, text: `pcoll | MyPTransform().with_resource_hints(
    min_ram="4GB",
    accelerator="type:nvidia-tesla-l4;count:1;install-nvidia-driver")`,
		want: func(t *testing.T, c Config) {
			assert.Equal(t, int64(4e9), c.MinRAMBytes)
			require.Len(t, c.RightFitting, 1)
			assert.Equal(t, GPU{Type: "nvidia-tesla-l4", Count: 1, InstallDriver: true}, c.RightFitting[0])
		},
		invalid: "gpu-type: the page writes nvidia-tesla-l4, Compute Engine's type is nvidia-l4"},

	// The driver a CUDA 12 image needs, as Beam's and Google's samples ask
	// for it on Dataflow.
	{source: srcBeamVLLM, text: `  --machine_type "n1-standard-4" \
  --dataflow_service_options "worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx" \`,
		want: wantWhole("nvidia-tesla-t4", 1, "5xx", false, "n1-standard-4")},
	{source: srcGemma, text: `  --machine_type="g2-standard-4" \
  --dataflow_service_options="worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:5xx" \`,
		want: wantWhole("nvidia-l4", 1, "5xx", false, "g2-standard-4")},
	// Dataflow's older GPU samples gave the accelerator as an experiment.
	{source: "https://github.com/GoogleCloudPlatform/python-docs-samples/tree/main/dataflow/gpu-examples", text: `  --worker_machine_type "n1-standard-4"   \
  --experiment "worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver" \
  --experiment "use_runner_v2"                            \`,
		want: func(t *testing.T, c Config) {
			wantWhole("nvidia-tesla-t4", 1, "", false, "n1-standard-4")(t, c)
			assert.Equal(t, []string{"use_runner_v2"}, c.Experiments)
		},
		invalid: "gpu-driver: the T4's default driver is a 4xx one, too old for the CUDA 12 image"},
	// GPU best practices: one SDK process per worker.
	{source: srcBestPractices, text: `--experiments=no_use_multiple_sdk_containers
--number_of_worker_harness_threads=NUMBER`,
		fill: map[string]string{"NUMBER": "2"},
		want: func(t *testing.T, c Config) {
			assert.True(t, c.NoUseMultipleSDKContainers)
			assert.Equal(t, 2, c.NumberOfWorkerHarnessThreads)
		}},
}

// shellWords splits a command line as a POSIX shell does for these
// examples: words separated by blanks, quotes removed, a backslash at the
// end of a line joining it to the next.
func shellWords(s string) []string {
	s = strings.ReplaceAll(s, "\\\n", " ")
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// TestDataflowExamplesParse: every GPU example of Dataflow's pages (and the
// samples that show the driver), verbatim, parses into the typed
// configuration: through the shell (quotes removed), and as the page writes
// it (quotes kept). Filled in, each is valid for the beamgpu image, or
// breaks the rule the case names.
func TestDataflowExamplesParse(t *testing.T) {
	for _, ex := range docExamples {
		t.Run(ex.source, func(t *testing.T) {
			text := ex.text
			for k, v := range ex.fill {
				text = strings.ReplaceAll(text, k, v)
			}
			// The Python per-transform form: keyword arguments as hints.
			if strings.Contains(text, "with_resource_hints(") {
				text = strings.NewReplacer("min_ram=", "--resource_hints=min_ram=", "accelerator=", "--resource_hints=accelerator=", ",", " ", ")", " ").Replace(text)
			} else if strings.HasPrefix(text, "accelerator=") {
				text = "--resource_hints=" + text
			}
			for _, form := range []struct {
				name string
				args []string
			}{{"shell", shellWords(text)}, {"verbatim", strings.Fields(strings.ReplaceAll(text, "\\\n", " "))}} {
				c, _, err := ParseFlags(form.args)
				require.NoError(t, err, "%s: %q", form.name, form.args)
				ex.want(t, c)
				c.Region = "us-central1"
				err = c.Validate()
				if ex.invalid == "" {
					assert.NoError(t, err, form.name)
					continue
				}
				rule, _, _ := strings.Cut(ex.invalid, ":")
				require.Error(t, err, form.name)
				assert.Contains(t, err.Error(), rule+": ", form.name)
			}
		})
	}
}

func TestSetFlag(t *testing.T) {
	var c Config
	require.NoError(t, c.SetFlag("--region", "europe-west4"))
	require.NoError(t, c.SetFlag("worker_machine_type", "g2-standard-8"))
	require.NoError(t, c.SetFlag("dataflow_service_options", "enable_google_cloud_profiler,worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:latest,enable_prime"))
	require.NoError(t, c.SetFlag("experiments", "use_runner_v2,no_use_multiple_sdk_containers"))
	require.NoError(t, c.SetFlag("flexrs_goal", "FLEXRS_COST_OPTIMIZED"))
	require.NoError(t, c.SetFlag("resource_hints", "min_ram=16GiB"))
	assert.Equal(t, Config{
		Region: "europe-west4", MachineType: "g2-standard-8",
		WorkerAccelerator:          &GPU{Type: "nvidia-l4", Count: 1, InstallDriver: true, Driver: "latest"},
		ServiceOptions:             []string{"enable_google_cloud_profiler"},
		Prime:                      true,
		Experiments:                []string{"use_runner_v2", "no_use_multiple_sdk_containers"},
		NoUseMultipleSDKContainers: true,
		FlexRSGoal:                 "FLEXRS_COST_OPTIMIZED",
		MinRAMBytes:                16 << 30,
	}, c)

	// The same GPU twice is fine; two GPUs are not.
	require.NoError(t, c.SetFlag("dataflow_service_options", "worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:latest"))
	assert.ErrorContains(t, c.SetFlag("dataflow_service_options", "worker_accelerator=type:nvidia-tesla-t4;count:1"),
		`the worker accelerator is already "type:nvidia-l4;count:1;install-nvidia-driver:latest"; give the GPU once`)
	assert.ErrorContains(t, c.SetFlag("dataflow_service_options", "worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:5.x"),
		`driver version "5.x" is not one Dataflow installs`)
	assert.ErrorContains(t, c.SetFlag("number_of_worker_harness_threads", "two"), "not an integer")
	assert.ErrorContains(t, c.SetFlag("resource_hints", "min_ram=lots"), `"lots" is not an amount of memory`)
	assert.ErrorContains(t, c.SetFlag("num_workers", "3"), "--num_workers is not a Dataflow flag the GPU configuration reads")
}

func TestParseFlagsKeepsTheRest(t *testing.T) {
	c, rest, err := ParseFlags([]string{"--runner=dataflow", "--region", "us-east1", "input.txt", "--machine_type=n1-standard-8"})
	require.NoError(t, err)
	assert.Equal(t, []string{"--runner=dataflow", "input.txt"}, rest)
	assert.Equal(t, "us-east1", c.Region)
	assert.Equal(t, "n1-standard-8", c.MachineType)
	_, _, err = ParseFlags([]string{"--region"})
	assert.ErrorContains(t, err, "--region needs a value")
	_, _, err = ParseFlags([]string{"--machine_type=n1-standard-8", "--worker_machine_type=n1-standard-4"})
	assert.ErrorContains(t, err, "the machine type is already n1-standard-8")
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"16000000000": 16e9, "16GB": 16e9, "16GiB": 16 << 30, "1.5GB": 1.5e9, "512MiB": 512 << 20} {
		got, err := ParseBytes(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "GB", "-1GB", "16XB"} {
		_, err := ParseBytes(bad)
		assert.Error(t, err, bad)
	}
}
