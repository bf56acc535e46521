package dataflow

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Helpers that build configs for the cases.

func gpu(typ string, count int) *GPU {
	return &GPU{Type: typ, Count: count, InstallDriver: true, Driver: DefaultDriver}
}

func mps(typ string, count int) *GPU {
	g := gpu(typ, count)
	g.MPS = true
	return g
}

// hint is a right-fitting hint with the 5xx driver.
func hint(typ string, count int) GPU { return *gpu(typ, count) }

// whole is a whole-pipeline GPU config in a region known to offer GPUs.
func whole(machine string, g *GPU) Config {
	return Config{Region: "us-central1", MachineType: machine, WorkerAccelerator: g}
}

// fitted is a right-fitting config in a region known to offer GPUs.
func fitted(gs ...GPU) Config {
	return Config{Region: "us-central1", MachineType: "n1-standard-2", RightFitting: gs}
}

func with(c Config, f func(*Config)) Config { f(&c); return c }

func driver(g *GPU, v string) *GPU { g.Driver = v; return g }

const gibBytes = int64(1) << 30

// ruleCase is one case of one rule: want is nil where the rule must pass,
// else substrings the rule's finding must contain; warn marks a finding that
// is a warning (Validate passes, Warnings reports it).
type ruleCase struct {
	rule string
	name string
	cfg  Config
	want []string
	warn bool
}

var ruleCases = []ruleCase{
	// gpu-type
	{"gpu-type", "t4", whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), nil, false},
	{"gpu-type", "hint l4", fitted(hint("nvidia-l4", 1)), nil, false},
	{"gpu-type", "k80 ended its support", whole("n1-standard-4", gpu("nvidia-tesla-k80", 1)), []string{
		`worker_accelerator "type:nvidia-tesla-k80;count:1;install-nvidia-driver:5xx": GPU type "nvidia-tesla-k80" is not a known GPU type; the known types are nvidia-tesla-t4, nvidia-tesla-p4, nvidia-tesla-p100, nvidia-tesla-v100, nvidia-tesla-a100, nvidia-a100-80gb, nvidia-l4, nvidia-h100-80gb, nvidia-h100-mega-80gb (--skip_gpu_rules=gpu-type`,
	}, false},
	{"gpu-type", "unknown hint", fitted(hint("nvidia-rtx-9000", 1)), []string{
		`right-fitting hint #1 "type:nvidia-rtx-9000;count:1;install-nvidia-driver:5xx"`, `GPU type "nvidia-rtx-9000" is not a known GPU type`, "nvidia-l4",
	}, false},

	// gpu-compute-capability
	{"gpu-compute-capability", "t4 is 7.5", whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), nil, false},
	{"gpu-compute-capability", "v100 is 7.0, the PTX's own", whole("n1-standard-8", gpu("nvidia-tesla-v100", 1)), nil, false},
	{"gpu-compute-capability", "p100 is 6.0", whole("n1-standard-8", gpu("nvidia-tesla-p100", 1)), []string{
		`worker_accelerator "type:nvidia-tesla-p100;count:1;install-nvidia-driver:5xx": nvidia-tesla-p100 has compute capability 6.0, and the GPU kernels' PTX is built for compute_70 (cmd/beamgpu-ptx (-arch=compute_70)): it cannot load them`,
	}, false},
	{"gpu-compute-capability", "p4 hint is 6.1", fitted(hint("nvidia-tesla-p4", 1)), []string{
		"nvidia-tesla-p4 has compute capability 6.1",
	}, false},

	// gpu-count
	{"gpu-count", "4 t4", whole("n1-standard-4", gpu("nvidia-tesla-t4", 4)), nil, false},
	{"gpu-count", "8 v100 hint", fitted(hint("nvidia-tesla-v100", 8)), nil, false},
	{"gpu-count", "3 t4", whole("n1-standard-4", gpu("nvidia-tesla-t4", 3)), []string{
		"3 x nvidia-tesla-t4 is not a valid GPU count; nvidia-tesla-t4 comes in 1, 2, 4 (https://cloud.google.com/compute/docs/gpus)",
	}, false},
	{"gpu-count", "zero", fitted(hint("nvidia-l4", 0)), []string{
		`right-fitting hint #1 "type:nvidia-l4;count:0;install-nvidia-driver:5xx": GPU count 0 is not positive; a worker needs at least 1 GPU`,
	}, false},
	{"gpu-count", "16 a100 80gb", whole("a2-ultragpu-8g", gpu("nvidia-a100-80gb", 16)), []string{
		"16 x nvidia-a100-80gb is not a valid GPU count; nvidia-a100-80gb comes in 1, 2, 4, 8",
	}, false},

	// gpu-driver
	{"gpu-driver", "5xx on a t4 (Beam's vLLM notebook)", whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), nil, false},
	{"gpu-driver", "latest", whole("n1-standard-4", driver(gpu("nvidia-tesla-t4", 1), "latest")), nil, false},
	{"gpu-driver", "exact 535", whole("n1-standard-4", driver(gpu("nvidia-tesla-t4", 1), "535.104.05")), nil, false},
	{"gpu-driver", "R550 branch", fitted(*driver(gpu("nvidia-tesla-t4", 1), "R550")), nil, false},
	{"gpu-driver", "l4's default is 525+", whole("g2-standard-8", driver(gpu("nvidia-l4", 1), "")), nil, false},
	{"gpu-driver", "no driver", whole("g2-standard-8", &GPU{Type: "nvidia-l4", Count: 1}), []string{
		`worker_accelerator "type:nvidia-l4;count:1" does not ask for the NVIDIA driver: Dataflow then installs none and the worker container has no libcuda, so every GPU op would fail; add install-nvidia-driver:5xx (https://cloud.google.com/dataflow/docs/guides/right-fitting)`,
	}, false},
	{"gpu-driver", "t4's default is 4xx", whole("n1-standard-4", driver(gpu("nvidia-tesla-t4", 1), "")), []string{
		`worker_accelerator "type:nvidia-tesla-t4;count:1;install-nvidia-driver" asks for Dataflow's default driver, which on a nvidia-tesla-t4 is a 4xx one (https://github.com/apache/beam/blob/master/examples/notebooks/beam-ml/run_inference_vllm.ipynb); the worker image is CUDA 12 and needs R525 or newer`,
		"ask for install-nvidia-driver:5xx (or :latest)",
	}, false},
	{"gpu-driver", "4xx", fitted(*driver(gpu("nvidia-l4", 1), "4xx")), []string{
		`right-fitting hint #1 "type:nvidia-l4;count:1;install-nvidia-driver:4xx" asks for a 4xx driver, but the worker image is CUDA 12 and needs R525 or newer`,
	}, false},
	{"gpu-driver", "exact 470", whole("n1-standard-4", driver(gpu("nvidia-tesla-t4", 1), "470.223.02")), []string{
		"asks for driver 470.223.02, but the worker image is CUDA 12 and needs R525 or newer",
	}, false},
	{"gpu-driver", "a100's default is undocumented", whole("a2-highgpu-1g", driver(gpu("nvidia-tesla-a100", 1), "default")), []string{
		"asks for Dataflow's default driver, and no Dataflow page says which it is on a nvidia-tesla-a100; the worker image needs R525 or newer",
	}, true},

	// machine-type
	{"machine-type", "n1 in the table", whole("n1-highmem-8", gpu("nvidia-tesla-t4", 1)), nil, false},
	{"machine-type", "n1 custom", whole("n1-custom-8-30720", gpu("nvidia-tesla-t4", 1)), nil, false},
	{"machine-type", "small predefined n1", whole("n1-standard-1", gpu("nvidia-tesla-t4", 1)), nil, false},
	{"machine-type", "any machine without worker_accelerator", Config{MachineType: "e2-standard-4"}, nil, false},
	{"machine-type", "hint with a g2 machine", fitted(GPU{Type: "nvidia-l4", Count: 1, MachineType: "g2-standard-16", InstallDriver: true, Driver: "5xx"}), nil, false},
	{"machine-type", "empty", whole("", gpu("nvidia-tesla-t4", 1)), []string{
		`worker_machine_type is empty: worker_accelerator "type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx" needs a machine type to attach to; the known machine types are n1-standard-4,`,
	}, false},
	{"machine-type", "n2 carries no GPU", whole("n2-standard-8", gpu("nvidia-tesla-t4", 1)), []string{
		`worker_machine_type "n2-standard-8" is not a known GPU machine type; the known machine types are n1-standard-4, n1-standard-8,`,
		"g2-standard-8", "N1 custom shapes (n1-custom-VCPUS-MEMMB)",
	}, false},
	{"machine-type", "no such n1 size", whole("n1-standard-3", gpu("nvidia-tesla-t4", 1)), []string{
		`worker_machine_type "n1-standard-3" is not a known GPU machine type`,
	}, false},
	{"machine-type", "hint with an e2 machine", fitted(GPU{Type: "nvidia-l4", Count: 1, MachineType: "e2-standard-8", InstallDriver: true}), []string{
		`right-fitting hint #1 "type:nvidia-l4;count:1;machine_type:e2-standard-8;install-nvidia-driver": machine_type "e2-standard-8" is not a known GPU machine type`,
	}, false},

	// gpu-machine-family
	{"gpu-machine-family", "t4 on n1", whole("n1-standard-8", gpu("nvidia-tesla-t4", 1)), nil, false},
	{"gpu-machine-family", "a100 on a2", whole("a2-highgpu-1g", gpu("nvidia-tesla-a100", 1)), nil, false},
	{"gpu-machine-family", "l4 on g2", whole("g2-standard-8", gpu("nvidia-l4", 1)), nil, false},
	{"gpu-machine-family", "h100 on a3", whole("a3-highgpu-8g", gpu("nvidia-h100-80gb", 8)), nil, false},
	{"gpu-machine-family", "a100 80gb on a2 ultra", whole("a2-ultragpu-1g", gpu("nvidia-a100-80gb", 1)), nil, false},
	{"gpu-machine-family", "hint t4 on its n1 machine", fitted(GPU{Type: "nvidia-tesla-t4", Count: 1, MachineType: "n1-standard-16", InstallDriver: true, Driver: "5xx"}), nil, false},
	{"gpu-machine-family", "l4 on n1", whole("n1-standard-4", gpu("nvidia-l4", 1)), []string{
		"GPU type nvidia-l4 goes with G2 machine types (g2-standard-*), not with machine type n1-standard-4",
	}, false},
	{"gpu-machine-family", "t4 on a2", whole("a2-highgpu-1g", gpu("nvidia-tesla-t4", 1)), []string{
		"GPU type nvidia-tesla-t4 goes with N1 machine types (n1-standard-*, n1-highmem-*, n1-highcpu-*, N1 custom), not with machine type a2-highgpu-1g (https://cloud.google.com/compute/docs/gpus)",
	}, false},
	{"gpu-machine-family", "a100 80gb on a2 highgpu", whole("a2-highgpu-1g", gpu("nvidia-a100-80gb", 1)), []string{
		"machine type a2-highgpu-1g comes with nvidia-tesla-a100 GPUs, not nvidia-a100-80gb",
	}, false},
	{"gpu-machine-family", "hint l4 on an n1 machine_type", fitted(GPU{Type: "nvidia-l4", Count: 1, MachineType: "n1-standard-8", InstallDriver: true, Driver: "5xx"}), []string{
		`right-fitting hint #1 "type:nvidia-l4;count:1;machine_type:n1-standard-8;install-nvidia-driver:5xx": GPU type nvidia-l4 goes with G2 machine types`,
	}, false},

	// gpu-count-machine
	{"gpu-count-machine", "4 v100 on n1-standard-32", whole("n1-standard-32", gpu("nvidia-tesla-v100", 4)), nil, false},
	{"gpu-count-machine", "2 a100 on a2-highgpu-2g", whole("a2-highgpu-2g", gpu("nvidia-tesla-a100", 2)), nil, false},
	{"gpu-count-machine", "n1 shape outside AI Platform Training's table", whole("n1-standard-2", gpu("nvidia-tesla-t4", 1)), nil, false},
	{"gpu-count-machine", "1 t4 on n1-standard-32: a warning now", whole("n1-standard-32", gpu("nvidia-tesla-t4", 1)), []string{
		"AI Platform Training's GPU table lists 2, 4 x nvidia-tesla-t4 on machine type n1-standard-32, not 1",
	}, true},
	{"gpu-count-machine", "1 a100 on a2-highgpu-2g", whole("a2-highgpu-2g", gpu("nvidia-tesla-a100", 1)), []string{
		"machine type a2-highgpu-2g comes with exactly 2 nvidia-tesla-a100, not count 1",
	}, false},
	{"gpu-count-machine", "2 l4 on g2-standard-8", whole("g2-standard-8", gpu("nvidia-l4", 2)), []string{
		"machine type g2-standard-8 comes with exactly 1 nvidia-l4, not count 2",
	}, false},
	{"gpu-count-machine", "hint: 2 l4 on its g2-standard-24", fitted(GPU{Type: "nvidia-l4", Count: 2, MachineType: "g2-standard-24", InstallDriver: true, Driver: "5xx"}), nil, false},
	{"gpu-count-machine", "hint: 1 l4 on g2-standard-24", fitted(GPU{Type: "nvidia-l4", Count: 1, MachineType: "g2-standard-24", InstallDriver: true, Driver: "5xx"}), []string{
		`right-fitting hint #1 "type:nvidia-l4;count:1;machine_type:g2-standard-24;install-nvidia-driver:5xx": machine type g2-standard-24 comes with exactly 2 nvidia-l4, not count 1`,
	}, false},

	// vcpu-memory-per-gpu
	{"vcpu-memory-per-gpu", "4 v100 on n1-standard-32, AI Platform Training's example", whole("n1-standard-32", gpu("nvidia-tesla-v100", 4)), nil, false},
	{"vcpu-memory-per-gpu", "the table wins: 8 v100 on n1-highmem-96", whole("n1-highmem-96", gpu("nvidia-tesla-v100", 8)), nil, false},
	{"vcpu-memory-per-gpu", "custom shape within one v100", whole("n1-custom-12-61440", gpu("nvidia-tesla-v100", 1)), nil, false},
	{"vcpu-memory-per-gpu", "no known bound for t4", whole("n1-custom-64-245760", gpu("nvidia-tesla-t4", 1)), nil, false},
	{"vcpu-memory-per-gpu", "2 v100 on n1-standard-32, AI Platform Training's example", whole("n1-standard-32", gpu("nvidia-tesla-v100", 2)), []string{
		"machine type n1-standard-32 has 32 vCPUs but 2 x nvidia-tesla-v100 allow at most 24 (https://cloud.google.com/ai-platform/training/docs/using-gpus); attach at least 4",
	}, false},
	{"vcpu-memory-per-gpu", "custom shape over one v100's memory", whole("n1-custom-8-81920", gpu("nvidia-tesla-v100", 1)), []string{
		"machine type n1-custom-8-81920 has 80 GB of memory but 1 x nvidia-tesla-v100 allow at most 76 GB (https://cloud.google.com/ai-platform/training/docs/using-gpus); attach at least 2",
	}, false},
	{"vcpu-memory-per-gpu", "4 p100 over AI Platform Training's 64 vCPU cap", whole("n1-custom-80-102400", gpu("nvidia-tesla-p100", 4)), []string{
		"machine type n1-custom-80-102400 has 80 vCPUs but 4 x nvidia-tesla-p100 allow at most 64 (https://cloud.google.com/ai-platform/training/docs/using-gpus); no count of nvidia-tesla-p100 allows that, pick a smaller machine type",
	}, false},

	// min-ram
	{"min-ram", "64 GB on one v100", with(whole("n1-standard-8", gpu("nvidia-tesla-v100", 1)), func(c *Config) { c.MinRAMBytes = 64 * gibBytes }), nil, false},
	{"min-ram", "no known bound for t4", with(whole("n1-standard-8", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.MinRAMBytes = 500 * gibBytes }), nil, false},
	{"min-ram", "100 GB on one v100", with(whole("n1-standard-8", gpu("nvidia-tesla-v100", 1)), func(c *Config) { c.MinRAMBytes = 100 * gibBytes }), []string{
		`worker_accelerator "type:nvidia-tesla-v100;count:1;install-nvidia-driver:5xx": min_ram 107374182400 bytes (100 GB) is more than the 76 GB that 1 x nvidia-tesla-v100 allow (https://cloud.google.com/ai-platform/training/docs/using-gpus; Dataflow's GPU best practices: more memory may need more GPUs); attach at least 2`,
	}, false},
	{"min-ram", "right-fitting hint", with(fitted(hint("nvidia-tesla-v100", 2)), func(c *Config) { c.MinRAMBytes = 700 * gibBytes }), []string{
		`right-fitting hint #1 "type:nvidia-tesla-v100;count:2;install-nvidia-driver:5xx": min_ram 751619276800 bytes (700 GB) is more than the 152 GB that 2 x nvidia-tesla-v100 allow (https://cloud.google.com/ai-platform/training/docs/using-gpus; Dataflow's GPU best practices: more memory may need more GPUs); no count of nvidia-tesla-v100 allows that, lower min_ram`,
	}, false},
	{"min-ram", "negative", Config{MinRAMBytes: -1}, []string{"min_ram -1 bytes is negative"}, false},

	// gpu-region
	{"gpu-region", "us-central1", whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), nil, false},
	{"gpu-region", "europe-west3 runs public L4 jobs", with(whole("g2-standard-8", gpu("nvidia-l4", 1)), func(c *Config) { c.Region = "europe-west3" }), nil, false},
	{"gpu-region", "us-west4 runs public L4 jobs", with(whole("g2-standard-8", gpu("nvidia-l4", 1)), func(c *Config) { c.Region = "us-west4" }), nil, false},
	{"gpu-region", "no GPU, no region needed", Config{MachineType: "n1-standard-4"}, nil, false},
	{"gpu-region", "a region not known to offer GPUs is a warning", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.Region = "me-central2" }), []string{
		"region me-central2 is not known to offer nvidia-tesla-t4 to Dataflow (the regions known to offer GPUs are us-west1,",
		"Dataflow refuses the job at submission if it does not",
	}, true},
	{"gpu-region", "empty region with right fitting", with(fitted(hint("nvidia-l4", 1)), func(c *Config) { c.Region = "" }), []string{
		"region is empty: a job with GPUs must name a region that offers them, such as us-west1,",
	}, false},
	{"gpu-region", "not a region name", with(fitted(hint("nvidia-l4", 1)), func(c *Config) { c.Region = "us central" }), []string{
		`region "us central" is not a Google Cloud region name (such as us-central1)`,
	}, false},

	// right-fitting-exclusive
	{"right-fitting-exclusive", "right fitting only", fitted(hint("nvidia-l4", 1)), nil, false},
	{"right-fitting-exclusive", "worker_accelerator only", whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), nil, false},
	{"right-fitting-exclusive", "both", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.RightFitting = []GPU{hint("nvidia-l4", 1)} }), []string{
		`worker_accelerator "type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx" is combined with 1 right-fitting accelerator hint(s); use one or the other`,
	}, false},

	// right-fitting-flexrs
	{"right-fitting-flexrs", "flexrs without hints", with(Config{Region: "us-central1"}, func(c *Config) { c.FlexRSGoal = "COST_OPTIMIZED" }), nil, false},
	{"right-fitting-flexrs", "flexrs with a gpu hint", with(fitted(hint("nvidia-l4", 1)), func(c *Config) { c.FlexRSGoal = "COST_OPTIMIZED" }), []string{
		"--flexrs_goal=COST_OPTIMIZED is combined with right-fitting resource hints; right fitting doesn't support FlexRS (https://cloud.google.com/dataflow/docs/guides/right-fitting)",
	}, false},
	{"right-fitting-flexrs", "flexrs with a min_ram hint", with(Config{Region: "us-central1"}, func(c *Config) { c.FlexRSGoal = "SPEED_OPTIMIZED"; c.MinRAMBytes = 16e9 }), []string{
		"right fitting doesn't support FlexRS",
	}, false},

	// gpu-flexrs
	{"gpu-flexrs", "gpu without flexrs", whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), nil, false},
	{"gpu-flexrs", "worker_accelerator with flexrs", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.FlexRSGoal = "COST_OPTIMIZED" }), []string{
		"FlexRS doesn't support GPUs (https://cloud.google.com/dataflow/docs/guides/flexrs)",
	}, false},

	// gpu-runner-v2
	{"gpu-runner-v2", "runner v2 experiment", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.Experiments = []string{"use_runner_v2"} }), nil, false},
	{"gpu-runner-v2", "runner v2 off", with(fitted(hint("nvidia-l4", 1)), func(c *Config) { c.Experiments = []string{"disable_runner_v2"} }), []string{
		"experiment disable_runner_v2 turns off Dataflow Runner v2, which GPU jobs need (https://cloud.google.com/dataflow/docs/gpu/troubleshoot-gpus)",
	}, false},

	// prime-machine-type
	{"prime-machine-type", "prime with right-fitting hints", with(fitted(hint("nvidia-l4", 1)), func(c *Config) { c.MachineType = ""; c.Prime = true }), nil, false},
	{"prime-machine-type", "prime with a machine type", with(whole("g2-standard-8", gpu("nvidia-l4", 1)), func(c *Config) { c.Prime = true }), []string{
		"worker_machine_type g2-standard-8 is set on Dataflow Prime (enable_prime), which does not support designating machine types",
	}, false},

	// mps-worker-accelerator
	{"mps-worker-accelerator", "mps on worker_accelerator", whole("g2-standard-8", mps("nvidia-l4", 1)), nil, false},
	{"mps-worker-accelerator", "mps on a hint", fitted(*mps("nvidia-l4", 1)), []string{
		`right-fitting hint #1 "type:nvidia-l4;count:1;install-nvidia-driver:5xx;use_nvidia_mps" sets use_nvidia_mps; Dataflow enables MPS only on the worker_accelerator service option`,
	}, false},

	// mps-single-gpu
	{"mps-single-gpu", "mps with count 1", whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), nil, false},
	{"mps-single-gpu", "two gpus without mps", whole("n1-standard-4", gpu("nvidia-tesla-t4", 2)), nil, false},
	{"mps-single-gpu", "mps with count 2", whole("n1-standard-4", mps("nvidia-tesla-t4", 2)), []string{
		`worker_accelerator "type:nvidia-tesla-t4;count:2;install-nvidia-driver:5xx;use_nvidia_mps" sets use_nvidia_mps with count 2; MPS is supported only on workers with a single GPU, so count must be 1 (https://cloud.google.com/dataflow/docs/gpu/use-nvidia-mps)`,
	}, false},

	// mps-multiple-sdk-containers
	{"mps-multiple-sdk-containers", "mps alone", whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), nil, false},
	{"mps-multiple-sdk-containers", "the experiment without mps", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.NoUseMultipleSDKContainers = true }), nil, false},
	{"mps-multiple-sdk-containers", "mps with the field", with(whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), func(c *Config) { c.NoUseMultipleSDKContainers = true }), []string{
		"sets use_nvidia_mps together with the experiment no_use_multiple_sdk_containers; MPS shares the GPU among several SDK processes and must not be used with that experiment",
	}, false},
	{"mps-multiple-sdk-containers", "mps with the raw experiment", with(whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), func(c *Config) { c.Experiments = []string{"no_use_multiple_sdk_containers"} }), []string{
		"together with the experiment no_use_multiple_sdk_containers",
	}, false},

	// mps-parallelism
	{"mps-parallelism", "mps without a thread cap", whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), nil, false},
	{"mps-parallelism", "a thread cap without mps", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.NumberOfWorkerHarnessThreads = 4 }), nil, false},
	{"mps-parallelism", "mps with a thread cap", with(whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), func(c *Config) { c.NumberOfWorkerHarnessThreads = 4 }), []string{
		"sets use_nvidia_mps with --number_of_worker_harness_threads=4; MPS pipelines cannot use options that restrict parallelism",
	}, false},

	// mps-prime
	{"mps-prime", "prime without mps", with(fitted(hint("nvidia-tesla-t4", 1)), func(c *Config) { c.MachineType = ""; c.Prime = true }), nil, false},
	{"mps-prime", "mps on prime", with(whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), func(c *Config) { c.Prime = true }), []string{
		"sets use_nvidia_mps on Dataflow Prime (enable_prime); Dataflow Prime does not support MPS",
	}, false},
	{"mps-prime", "mps with the raw prime option", with(whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), func(c *Config) { c.ServiceOptions = []string{"enable_prime"} }), []string{
		"Dataflow Prime does not support MPS",
	}, false},

	// typed-accelerator
	{"typed-accelerator", "other service options", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.ServiceOptions = []string{"enable_google_cloud_profiler"} }), nil, false},
	{"typed-accelerator", "raw worker_accelerator in Go", Config{ServiceOptions: []string{"worker_accelerator=type:nvidia-tesla-t4;count:4"}}, []string{
		`dataflow_service_options value "worker_accelerator=type:nvidia-tesla-t4;count:4" sets the GPU as a raw string in Config.ServiceOptions; set Config.WorkerAccelerator (Config.SetFlag parses the raw form into it)`,
	}, false},

	// flag-values
	{"flag-values", "plain values", Config{Experiments: []string{"use_runner_v2"}, NumberOfWorkerHarnessThreads: 2}, nil, false},
	{"flag-values", "negative threads", Config{NumberOfWorkerHarnessThreads: -1}, []string{"number_of_worker_harness_threads -1 is negative"}, false},
	{"flag-values", "comma", Config{Experiments: []string{"a,b"}}, []string{`experiments value "a,b" contains a comma`}, false},
	{"flag-values", "empty", Config{ServiceOptions: []string{" "}}, []string{"dataflow_service_options has an empty value"}, false},
}

func ruleByName(t *testing.T, name string) Rule {
	t.Helper()
	i := slices.IndexFunc(rules, func(r Rule) bool { return r.Name == name })
	require.GreaterOrEqual(t, i, 0, "no rule %q", name)
	return rules[i]
}

// TestRules runs each case against its own rule alone.
func TestRules(t *testing.T) {
	for _, tc := range ruleCases {
		t.Run(tc.rule+"/"+tc.name, func(t *testing.T) {
			err := ruleByName(t, tc.rule).Check(tc.cfg)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			// The same finding comes out of Validate (a refusal, wrapped with
			// the rule name) or Warnings (a warning, Validate passing).
			var found []*RuleError
			if tc.warn {
				for _, w := range tc.cfg.Warnings() {
					if w.Rule == tc.rule {
						found = append(found, w)
					}
				}
				require.Len(t, found, 1)
				assert.True(t, found[0].Warning)
				for _, f := range tc.cfg.findings() {
					if f.Rule == tc.rule {
						assert.True(t, f.Warning, "a warning case refuses: %v", f)
					}
				}
				return
			}
			verr := tc.cfg.Validate()
			require.Error(t, verr)
			assert.Contains(t, verr.Error(), tc.rule+": ")
			var re *RuleError
			require.ErrorAs(t, verr, &re)
			assert.False(t, re.Warning)
		})
	}
}

// TestEveryRuleHasCases: each rule of the table has at least one passing and
// one failing case, and every row says where it comes from.
func TestEveryRuleHasCases(t *testing.T) {
	for _, r := range Rules() {
		var pass, fail int
		for _, tc := range ruleCases {
			if tc.rule == r.Name {
				if tc.want == nil {
					pass++
				} else {
					fail++
				}
			}
		}
		assert.Positive(t, pass, "rule %s has no passing case", r.Name)
		assert.Positive(t, fail, "rule %s has no failing case", r.Name)
		assert.NotEmpty(t, r.Source, "rule %s has no source", r.Name)
		assert.NotEmpty(t, r.Doc, "rule %s has no doc", r.Name)
	}
}

// TestRuleSourcesAreDataflowFirst: no rule rests on AI Platform Training's GPU page alone (AI
// Platform Training's page); every rule but the project's own cites a
// Dataflow or Compute Engine page, or the file it checks against.
func TestRuleSourcesAreDataflowFirst(t *testing.T) {
	for _, r := range Rules() {
		if r.Source == srcDesign {
			continue
		}
		assert.Regexp(t, `https://cloud\.google\.com/(dataflow|compute)/|cmd/beamgpu-ptx`, r.Source, "rule %s", r.Name)
	}
}

// TestPassingCasesAreValid: every passing case is a whole valid config, so
// the rules do not contradict each other on good input.
func TestPassingCasesAreValid(t *testing.T) {
	for _, tc := range ruleCases {
		if tc.want == nil {
			assert.NoError(t, tc.cfg.Validate(), "%s/%s", tc.rule, tc.name)
		}
	}
}

func TestValidateJoinsEveryBrokenRule(t *testing.T) {
	cfg := Config{
		Region:                     "mars-north1",
		MachineType:                "n1-standard-32",
		WorkerAccelerator:          driver(mps("nvidia-tesla-v100", 2), "4xx"),
		NoUseMultipleSDKContainers: true,
		Prime:                      true,
		FlexRSGoal:                 "COST_OPTIMIZED",
	}
	err := cfg.Validate()
	require.Error(t, err)
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var re *RuleError
		require.ErrorAs(t, e, &re)
		got = append(got, re.Rule)
	}
	assert.Equal(t, []string{
		"gpu-driver", "vcpu-memory-per-gpu", "gpu-flexrs", "prime-machine-type",
		"mps-single-gpu", "mps-multiple-sdk-containers", "mps-prime",
	}, got)
	// One line per broken rule.
	assert.Len(t, strings.Split(err.Error(), "\n"), len(got))
	// The warnings are apart: 2 V100s on n1-standard-32 is not in AI Platform Training's
	// table, and mars-north1 is not known to offer GPUs.
	var warned []string
	for _, w := range cfg.Warnings() {
		warned = append(warned, w.Rule)
	}
	assert.Equal(t, []string{"gpu-count-machine", "gpu-region"}, warned)
}

func TestValidateZeroConfig(t *testing.T) {
	assert.NoError(t, Config{}.Validate())
	assert.Empty(t, Config{}.Warnings())
}

func TestValidateSkip(t *testing.T) {
	cfg := with(whole("n1-standard-4", gpu("nvidia-tesla-p100", 1)), func(c *Config) { c.Region = "us-west4" })
	require.ErrorContains(t, cfg.Validate(), `gpu-compute-capability: worker_accelerator "type:nvidia-tesla-p100`)

	cfg.Skip = []string{"gpu-compute-capability"}
	assert.NoError(t, cfg.Validate())

	cfg.Skip = []string{"gpu-compute-capabilty"}
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `skip names "gpu-compute-capabilty", which is not a rule; the rules are gpu-type, gpu-compute-capability,`)
	var re *RuleError
	require.True(t, errors.As(err, &re))
	assert.Equal(t, "skip", re.Rule)
}

// TestSeedTableConsistency checks the N1 table against the per-GPU statements
// of the same seed: every count the table allows stays within the V100 and
// 4 x P100 bounds, but for the one row where that page contradicts itself.
func TestSeedTableConsistency(t *testing.T) {
	var exceptions []string
	for _, m := range MachineTypes() {
		if !m.inSeedTable() {
			continue
		}
		require.Equal(t, srcAIPlatform, m.Source)
		for typ, counts := range m.GPUs {
			tt, ok := lookupGPU(typ)
			require.True(t, ok, typ)
			for _, n := range counts {
				require.Contains(t, tt.Counts, n, "%s on %s", typ, m.Name)
				l := tt.limit(n)
				if (l.VCPUs > 0 && m.VCPUs > l.VCPUs) || (l.MemGB > 0 && m.MemGB > l.MemGB) {
					exceptions = append(exceptions, m.Name+"/"+typ)
				}
			}
		}
	}
	// 8 x 76 GB = 608 GB < 624 GB of n1-highmem-96: the table wins (see
	// checkVCPUMemory).
	assert.Equal(t, []string{"n1-highmem-96/nvidia-tesla-v100"}, exceptions)
}
