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
	return &GPU{Type: typ, Count: count, InstallDriver: true}
}

func mps(typ string, count int) *GPU {
	g := gpu(typ, count)
	g.MPS = true
	return g
}

// whole is a whole-pipeline GPU config in a seed-001 region.
func whole(machine string, g *GPU) Config {
	return Config{Region: "us-central1", MachineType: machine, WorkerAccelerator: g}
}

// fitted is a right-fitting config in a seed-001 region.
func fitted(gs ...GPU) Config {
	return Config{Region: "us-central1", MachineType: "n1-standard-2", RightFitting: gs}
}

func with(c Config, f func(*Config)) Config { f(&c); return c }

const gibBytes = int64(1) << 30

// ruleCase is one case of one rule: want is "" where the rule must pass, else
// substrings the rule's error must contain.
type ruleCase struct {
	rule string
	name string
	cfg  Config
	want []string
}

var ruleCases = []ruleCase{
	// gpu-type (seed 001)
	{"gpu-type", "t4", whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), nil},
	{"gpu-type", "hint l4", fitted(GPU{Type: "nvidia-l4", Count: 1}), nil},
	{"gpu-type", "k80 is not in the seed's usable list", whole("n1-standard-4", gpu("nvidia-tesla-k80", 1)), []string{
		`worker_accelerator "type:nvidia-tesla-k80;count:1;install-nvidia-driver": GPU type "nvidia-tesla-k80" is not a known GPU type; the known types are nvidia-tesla-t4, nvidia-tesla-p4, nvidia-tesla-p100, nvidia-tesla-v100, nvidia-tesla-a100, nvidia-a100-80gb, nvidia-l4, nvidia-h100-80gb, nvidia-h100-mega-80gb`,
	}},
	{"gpu-type", "unknown hint", fitted(GPU{Type: "nvidia-rtx-9000", Count: 1}), []string{
		`right-fitting hint #1 "type:nvidia-rtx-9000;count:1"`, `GPU type "nvidia-rtx-9000" is not a known GPU type`, "nvidia-l4",
	}},

	// gpu-count (seed 001)
	{"gpu-count", "4 t4", whole("n1-standard-4", gpu("nvidia-tesla-t4", 4)), nil},
	{"gpu-count", "8 v100 hint", fitted(GPU{Type: "nvidia-tesla-v100", Count: 8}), nil},
	{"gpu-count", "3 t4, the seed's own example", whole("n1-standard-4", gpu("nvidia-tesla-t4", 3)), []string{
		"3 x nvidia-tesla-t4 is not a valid GPU count; nvidia-tesla-t4 allows 1, 2, 4 (seed 001)",
	}},
	{"gpu-count", "zero", fitted(GPU{Type: "nvidia-l4", Count: 0}), []string{
		`right-fitting hint #1 "type:nvidia-l4;count:0": GPU count 0 is not positive; a worker needs at least 1 GPU`,
	}},
	{"gpu-count", "16 a100 80gb", whole("a2-ultragpu-8g", gpu("nvidia-a100-80gb", 16)), []string{
		"16 x nvidia-a100-80gb is not a valid GPU count; nvidia-a100-80gb allows 1, 2, 4, 8",
	}},

	// machine-type (seed 001)
	{"machine-type", "n1 in the table", whole("n1-highmem-8", gpu("nvidia-tesla-t4", 1)), nil},
	{"machine-type", "n1 custom (seed 000)", whole("n1-custom-8-30720", gpu("nvidia-tesla-t4", 1)), nil},
	{"machine-type", "small predefined n1", whole("n1-standard-1", gpu("nvidia-tesla-t4", 1)), nil},
	{"machine-type", "any machine without worker_accelerator", Config{MachineType: "e2-standard-4"}, nil},
	{"machine-type", "empty", whole("", gpu("nvidia-tesla-t4", 1)), []string{
		`worker_machine_type is empty: worker_accelerator "type:nvidia-tesla-t4;count:1;install-nvidia-driver" needs a machine type to attach to; the known machine types are n1-standard-4,`,
	}},
	{"machine-type", "n2 carries no GPU", whole("n2-standard-8", gpu("nvidia-tesla-t4", 1)), []string{
		`worker_machine_type "n2-standard-8" is not a known GPU machine type; the known machine types are n1-standard-4, n1-standard-8,`,
		"g2-standard-8", "n1-standard-4", "N1 custom shapes (n1-custom-VCPUS-MEMMB)",
	}},
	{"machine-type", "no such n1 size", whole("n1-standard-3", gpu("nvidia-tesla-t4", 1)), []string{
		`worker_machine_type "n1-standard-3" is not a known GPU machine type`,
	}},

	// gpu-machine-family (seed 001)
	{"gpu-machine-family", "t4 on n1", whole("n1-standard-8", gpu("nvidia-tesla-t4", 1)), nil},
	{"gpu-machine-family", "a100 on a2", whole("a2-highgpu-1g", gpu("nvidia-tesla-a100", 1)), nil},
	{"gpu-machine-family", "l4 on g2", whole("g2-standard-8", gpu("nvidia-l4", 1)), nil},
	{"gpu-machine-family", "h100 on a3", whole("a3-highgpu-8g", gpu("nvidia-h100-80gb", 8)), nil},
	{"gpu-machine-family", "a100 80gb on a2 ultra", whole("a2-ultragpu-1g", gpu("nvidia-a100-80gb", 1)), nil},
	{"gpu-machine-family", "l4 on n1", whole("n1-standard-4", gpu("nvidia-l4", 1)), []string{
		"worker_accelerator type nvidia-l4 goes with G2 machine types (g2-standard-*), not with worker_machine_type n1-standard-4",
	}},
	{"gpu-machine-family", "t4 on a2", whole("a2-highgpu-1g", gpu("nvidia-tesla-t4", 1)), []string{
		"worker_accelerator type nvidia-tesla-t4 goes with N1 machine types (n1-standard-*, n1-highmem-*, n1-highcpu-*, N1 custom), not with worker_machine_type a2-highgpu-1g (seed 001)",
	}},
	{"gpu-machine-family", "a100 on n1", whole("n1-standard-16", gpu("nvidia-tesla-a100", 1)), []string{
		"worker_accelerator type nvidia-tesla-a100 goes with A2 machine types",
	}},
	{"gpu-machine-family", "a100 80gb on a2 highgpu", whole("a2-highgpu-1g", gpu("nvidia-a100-80gb", 1)), []string{
		"worker_machine_type a2-highgpu-1g comes with nvidia-tesla-a100 GPUs, not nvidia-a100-80gb (seed 001)",
	}},

	// gpu-count-machine (seed 001)
	{"gpu-count-machine", "4 v100 on n1-standard-32", whole("n1-standard-32", gpu("nvidia-tesla-v100", 4)), nil},
	{"gpu-count-machine", "2 a100 on a2-highgpu-2g", whole("a2-highgpu-2g", gpu("nvidia-tesla-a100", 2)), nil},
	{"gpu-count-machine", "n1 shape outside the table", whole("n1-standard-2", gpu("nvidia-tesla-t4", 1)), nil},
	{"gpu-count-machine", "1 t4 on n1-standard-32", whole("n1-standard-32", gpu("nvidia-tesla-t4", 1)), []string{
		"1 x nvidia-tesla-t4 is not valid on worker_machine_type n1-standard-32; seed 001's table allows 2, 4",
	}},
	{"gpu-count-machine", "p100 on n1-standard-64", whole("n1-standard-64", gpu("nvidia-tesla-p100", 4)), []string{
		"seed 001's table allows no nvidia-tesla-p100 on worker_machine_type n1-standard-64",
	}},
	{"gpu-count-machine", "1 a100 on a2-highgpu-2g", whole("a2-highgpu-2g", gpu("nvidia-tesla-a100", 1)), []string{
		"worker_machine_type a2-highgpu-2g comes with exactly 2 nvidia-tesla-a100, not count 1 (seed 001)",
	}},
	{"gpu-count-machine", "2 l4 on g2-standard-8", whole("g2-standard-8", gpu("nvidia-l4", 2)), []string{
		"worker_machine_type g2-standard-8 comes with exactly 1 nvidia-l4, not count 2",
	}},

	// vcpu-memory-per-gpu (seed 001)
	{"vcpu-memory-per-gpu", "4 v100 on n1-standard-32, the seed's example", whole("n1-standard-32", gpu("nvidia-tesla-v100", 4)), nil},
	{"vcpu-memory-per-gpu", "the table wins: 8 v100 on n1-highmem-96", whole("n1-highmem-96", gpu("nvidia-tesla-v100", 8)), nil},
	{"vcpu-memory-per-gpu", "custom shape within one v100", whole("n1-custom-12-61440", gpu("nvidia-tesla-v100", 1)), nil},
	{"vcpu-memory-per-gpu", "no seed bound for t4", whole("n1-custom-64-245760", gpu("nvidia-tesla-t4", 1)), nil},
	{"vcpu-memory-per-gpu", "2 v100 on n1-standard-32, the seed's example", whole("n1-standard-32", gpu("nvidia-tesla-v100", 2)), []string{
		"worker_machine_type n1-standard-32 has 32 vCPUs but 2 x nvidia-tesla-v100 allow at most 24 (seed 001); attach at least 4",
	}},
	{"vcpu-memory-per-gpu", "custom shape over one v100's memory", whole("n1-custom-8-81920", gpu("nvidia-tesla-v100", 1)), []string{
		"worker_machine_type n1-custom-8-81920 has 80 GB of memory but 1 x nvidia-tesla-v100 allow at most 76 GB (seed 001); attach at least 2",
	}},
	{"vcpu-memory-per-gpu", "4 p100 over the seed's 64 vCPU cap", whole("n1-custom-80-102400", gpu("nvidia-tesla-p100", 4)), []string{
		"worker_machine_type n1-custom-80-102400 has 80 vCPUs but 4 x nvidia-tesla-p100 allow at most 64 (seed 001); no count of nvidia-tesla-p100 allows that, pick a smaller machine type",
	}},

	// min-ram (seed 000, bounds from seed 001)
	{"min-ram", "64 GB on one v100", with(whole("n1-standard-8", gpu("nvidia-tesla-v100", 1)), func(c *Config) { c.MinRAMBytes = 64 * gibBytes }), nil},
	{"min-ram", "no seed bound for t4", with(whole("n1-standard-8", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.MinRAMBytes = 500 * gibBytes }), nil},
	{"min-ram", "100 GB on one v100", with(whole("n1-standard-8", gpu("nvidia-tesla-v100", 1)), func(c *Config) { c.MinRAMBytes = 100 * gibBytes }), []string{
		`worker_accelerator "type:nvidia-tesla-v100;count:1;install-nvidia-driver": min_ram 107374182400 bytes (100 GB) is more than the 76 GB that 1 x nvidia-tesla-v100 allow (seed 001; seed 000: more memory may need more GPUs); attach at least 2`,
	}},
	{"min-ram", "right-fitting hint", with(fitted(GPU{Type: "nvidia-tesla-p100", Count: 4}), func(c *Config) { c.MinRAMBytes = 300 * gibBytes }), []string{
		`right-fitting hint #1 "type:nvidia-tesla-p100;count:4": min_ram 322122547200 bytes (300 GB) is more than the 208 GB that 4 x nvidia-tesla-p100 allow (seed 001; seed 000: more memory may need more GPUs); no count of nvidia-tesla-p100 allows that, lower min_ram`,
	}},
	{"min-ram", "negative", Config{MinRAMBytes: -1}, []string{"min_ram -1 bytes is negative"}},

	// gpu-region (seed 001)
	{"gpu-region", "us-central1", whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), nil},
	{"gpu-region", "no GPU, no region needed", Config{MachineType: "n1-standard-4"}, nil},
	{"gpu-region", "europe-west3 is not in the seed's list", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.Region = "europe-west3" }), []string{
		`region "europe-west3" does not provide GPUs per seed 001, whose GPU regions are us-west1, us-west2, us-central1,`,
	}},
	{"gpu-region", "empty region with right fitting", with(fitted(GPU{Type: "nvidia-l4", Count: 1}), func(c *Config) { c.Region = "" }), []string{
		"region is empty: a job with GPUs must name a region that provides GPUs, one of us-west1,",
	}},

	// right-fitting-exclusive (DESIGN.md)
	{"right-fitting-exclusive", "right fitting only", fitted(GPU{Type: "nvidia-l4", Count: 1, InstallDriver: true}), nil},
	{"right-fitting-exclusive", "worker_accelerator only", whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), nil},
	{"right-fitting-exclusive", "both", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.RightFitting = []GPU{{Type: "nvidia-l4", Count: 1}} }), []string{
		`worker_accelerator "type:nvidia-tesla-t4;count:1;install-nvidia-driver" is combined with 1 right-fitting accelerator hint(s); use one or the other`,
	}},

	// mps-worker-accelerator (seed 002)
	{"mps-worker-accelerator", "mps on worker_accelerator", whole("g2-standard-8", mps("nvidia-l4", 1)), nil},
	{"mps-worker-accelerator", "mps on a hint", fitted(GPU{Type: "nvidia-l4", Count: 1, MPS: true}), []string{
		`right-fitting hint #1 "type:nvidia-l4;count:1;use_nvidia_mps" sets use_nvidia_mps; seed 002 enables MPS only on the worker_accelerator service option`,
	}},

	// mps-single-gpu (seed 002)
	{"mps-single-gpu", "mps with count 1", whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), nil},
	{"mps-single-gpu", "two gpus without mps", whole("n1-standard-4", gpu("nvidia-tesla-t4", 2)), nil},
	{"mps-single-gpu", "mps with count 2", whole("n1-standard-4", mps("nvidia-tesla-t4", 2)), []string{
		`worker_accelerator "type:nvidia-tesla-t4;count:2;install-nvidia-driver;use_nvidia_mps" sets use_nvidia_mps with count 2; MPS is supported only on workers with a single GPU, so count must be 1 (seed 002)`,
	}},

	// mps-multiple-sdk-containers (seed 002)
	{"mps-multiple-sdk-containers", "mps alone", whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), nil},
	{"mps-multiple-sdk-containers", "the experiment without mps", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.NoUseMultipleSDKContainers = true }), nil},
	{"mps-multiple-sdk-containers", "mps with the field", with(whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), func(c *Config) { c.NoUseMultipleSDKContainers = true }), []string{
		"sets use_nvidia_mps together with the experiment no_use_multiple_sdk_containers; MPS shares the GPU among several SDK processes and must not be used with that experiment (seed 002)",
	}},
	{"mps-multiple-sdk-containers", "mps with the raw experiment", with(whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), func(c *Config) { c.Experiments = []string{"no_use_multiple_sdk_containers"} }), []string{
		"together with the experiment no_use_multiple_sdk_containers",
	}},

	// mps-parallelism (seed 002, seed 000)
	{"mps-parallelism", "mps without a thread cap", whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), nil},
	{"mps-parallelism", "a thread cap without mps", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.NumberOfWorkerHarnessThreads = 4 }), nil},
	{"mps-parallelism", "mps with a thread cap", with(whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), func(c *Config) { c.NumberOfWorkerHarnessThreads = 4 }), []string{
		"sets use_nvidia_mps with --number_of_worker_harness_threads=4; MPS pipelines cannot use options that restrict parallelism (seed 002",
	}},

	// mps-prime (seed 002)
	{"mps-prime", "prime without mps", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.Prime = true }), nil},
	{"mps-prime", "mps on prime", with(whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), func(c *Config) { c.Prime = true }), []string{
		"sets use_nvidia_mps on Dataflow Prime (enable_prime); Dataflow Prime does not support MPS (seed 002)",
	}},
	{"mps-prime", "mps with the raw prime option", with(whole("n1-standard-4", mps("nvidia-tesla-t4", 1)), func(c *Config) { c.ServiceOptions = []string{"enable_prime"} }), []string{
		"Dataflow Prime does not support MPS",
	}},

	// typed-accelerator (DESIGN.md)
	{"typed-accelerator", "other service options", with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.ServiceOptions = []string{"enable_google_cloud_profiler"} }), nil},
	{"typed-accelerator", "raw worker_accelerator", Config{ServiceOptions: []string{"worker_accelerator=type:nvidia-tesla-t4;count:4"}}, []string{
		`dataflow_service_options value "worker_accelerator=type:nvidia-tesla-t4;count:4" sets the GPU as a raw string; set Config.WorkerAccelerator`,
	}},

	// flag-values (DESIGN.md)
	{"flag-values", "plain values", Config{Experiments: []string{"use_runner_v2"}, NumberOfWorkerHarnessThreads: 2}, nil},
	{"flag-values", "negative threads", Config{NumberOfWorkerHarnessThreads: -1}, []string{"number_of_worker_harness_threads -1 is negative"}},
	{"flag-values", "comma", Config{Experiments: []string{"a,b"}}, []string{`experiments value "a,b" contains a comma`}},
	{"flag-values", "empty", Config{ServiceOptions: []string{" "}}, []string{"dataflow_service_options has an empty value"}},
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
			// The same error comes out of Validate, wrapped with the rule name.
			verr := tc.cfg.Validate()
			require.Error(t, verr)
			assert.Contains(t, verr.Error(), tc.rule+": ")
			var re *RuleError
			require.ErrorAs(t, verr, &re)
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
		assert.NotEmpty(t, r.Seed, "rule %s has no source", r.Name)
		assert.NotEmpty(t, r.Doc, "rule %s has no doc", r.Name)
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
		WorkerAccelerator:          mps("nvidia-tesla-v100", 2),
		NoUseMultipleSDKContainers: true,
		Prime:                      true,
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
		"gpu-count-machine", "vcpu-memory-per-gpu", "gpu-region",
		"mps-single-gpu", "mps-multiple-sdk-containers", "mps-prime",
	}, got)
	// One line per broken rule.
	assert.Len(t, strings.Split(err.Error(), "\n"), len(got))
}

func TestValidateZeroConfig(t *testing.T) {
	assert.NoError(t, Config{}.Validate())
}

func TestValidateSkip(t *testing.T) {
	cfg := with(whole("n1-standard-4", gpu("nvidia-tesla-t4", 1)), func(c *Config) { c.Region = "us-west4" })
	require.ErrorContains(t, cfg.Validate(), `gpu-region: region "us-west4"`)

	cfg.Skip = []string{"gpu-region"}
	assert.NoError(t, cfg.Validate())

	cfg.Skip = []string{"gpu-regoin"}
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `skip names "gpu-regoin", which is not a rule; the rules are gpu-type, gpu-count,`)
	var re *RuleError
	require.True(t, errors.As(err, &re))
	assert.Equal(t, "gpu-region", re.Rule)
}

// TestSeedTableConsistency checks the N1 table against the per-GPU statements
// of the same seed: every count the table allows stays within the V100 and
// 4 x P100 bounds, but for the one row where the seed contradicts itself.
func TestSeedTableConsistency(t *testing.T) {
	var exceptions []string
	for _, m := range MachineTypes() {
		if !m.inSeedTable() {
			continue
		}
		require.Equal(t, srcSeed001, m.Source)
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
