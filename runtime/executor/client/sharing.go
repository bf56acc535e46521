package client

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
)

// OptionSharing is the pipeline option that carries a job's Sharing to its
// workers: the launcher sets it (Beam passes pipeline options to every
// worker), and each worker's shared client starts its executor with it.
const OptionSharing = "beamgpu_gpu_sharing"

// Environment variables the CUDA executor reads for its device-memory
// budget: the fraction of the GPU's memory all executors on it may use, and
// the number of processes that share it.
const (
	EnvMemoryFraction = "BEAMGPU_GPU_MEMORY_FRACTION"
	EnvProcesses      = "BEAMGPU_GPU_PROCESSES"
)

// Sharing is how each GPU of a worker is shared by the SDK processes of the
// worker, each with its own executor: with NVIDIA MPS (use_nvidia_mps)
// their kernels run side by side; without it the GPU time-slices between
// them. Either way their device memory adds up, so each executor budgets
// MemoryFraction/Processes of it and runs at most MaxConcurrent batches on
// it. On a worker with several GPUs every process sees all of them and
// every executor uses all of them (each GPU shared by all the processes),
// so these hold per GPU, unchanged by the number of GPUs.
type Sharing struct {
	// Processes is the number of SDK processes (executors) on one GPU.
	Processes int `json:"processes"`
	// MaxConcurrent is each executor's bound on batches run at once on
	// each GPU.
	MaxConcurrent int `json:"max_concurrent"`
	// MemoryFraction is the fraction of each GPU's memory the executors
	// may use together.
	MemoryFraction float64 `json:"memory_fraction"`
}

// DefaultMemoryFraction is the share of a GPU's memory the executors use
// together unless told otherwise, leaving room for the CUDA context and for
// the driver.
const DefaultMemoryFraction = 0.8

// ShareGPU returns the Sharing of one GPU among processes SDK processes:
// the memory fraction split evenly, and totalConcurrent batches in flight on
// the GPU split among them (at least one each).
func ShareGPU(processes, totalConcurrent int) Sharing {
	if processes < 1 {
		processes = 1
	}
	if totalConcurrent < 1 {
		totalConcurrent = 1
	}
	return Sharing{Processes: processes, MemoryFraction: DefaultMemoryFraction,
		MaxConcurrent: max(1, int(math.Ceil(float64(totalConcurrent)/float64(processes))))}
}

// String formats s as the pipeline option's value:
// "processes=4,max_concurrent=1,memory_fraction=0.8".
func (s Sharing) String() string {
	return fmt.Sprintf("processes=%d,max_concurrent=%d,memory_fraction=%s",
		s.Processes, s.MaxConcurrent, strconv.FormatFloat(s.MemoryFraction, 'g', -1, 64))
}

// ParseSharing parses String's format.
func ParseSharing(v string) (Sharing, error) {
	var s Sharing
	for _, part := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Sharing{}, fmt.Errorf("GPU executor: sharing %q: %q is not key=value", v, part)
		}
		var err error
		switch k {
		case "processes":
			s.Processes, err = strconv.Atoi(val)
		case "max_concurrent":
			s.MaxConcurrent, err = strconv.Atoi(val)
		case "memory_fraction":
			s.MemoryFraction, err = strconv.ParseFloat(val, 64)
		default:
			return Sharing{}, fmt.Errorf("GPU executor: sharing %q: unknown key %q", v, k)
		}
		if err != nil {
			return Sharing{}, fmt.Errorf("GPU executor: sharing %q: %s: %w", v, k, err)
		}
	}
	if s.Processes < 1 || s.MaxConcurrent < 1 || !(s.MemoryFraction > 0 && s.MemoryFraction <= 1) {
		return Sharing{}, fmt.Errorf("GPU executor: sharing %q: want processes >= 1, max_concurrent >= 1 and 0 < memory_fraction <= 1", v)
	}
	return s, nil
}

// Env returns the executor's environment variables for s.
func (s Sharing) Env() []string {
	return []string{
		EnvProcesses + "=" + strconv.Itoa(s.Processes),
		EnvMemoryFraction + "=" + strconv.FormatFloat(s.MemoryFraction, 'g', -1, 64),
	}
}

// Args returns the executor's serve arguments for s.
func (s Sharing) Args() []string {
	return []string{"--max_concurrent=" + strconv.Itoa(s.MaxConcurrent)}
}

var sharingSource struct {
	sync.Mutex
	get func() string
}

// SetSharingSource sets where shared clients read the Sharing of a new
// executor from: a function returning OptionSharing's value ("" for none).
// The step ops set it to read Beam's pipeline options.
func SetSharingSource(get func() string) {
	sharingSource.Lock()
	defer sharingSource.Unlock()
	sharingSource.get = get
}

// sharedConfig is the Config of a new shared client of path: with the
// Sharing the source gives, if any. A malformed value is reported on stderr
// and ignored: the executor then takes the whole GPU.
// EnvMaxArena, when set, bounds the shared memory of one connection to the
// process's executor (Config.MaxArena, in bytes; default 16 GiB): a batch
// that needs more is split, or under --backend=auto run on the CPU.
const EnvMaxArena = "BEAMGPU_MAX_ARENA"

func sharedConfig(path string) Config {
	cfg := Config{Path: path, CallFloor: envDuration(EnvCallFloor), StallAfter: envDuration(EnvStallAfter)}
	if v := os.Getenv(EnvMaxArena); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			cfg.MaxArena = n
		} else {
			slog.Warn("beamgpu: ignoring an environment variable: want a positive number of bytes", "variable", EnvMaxArena, "value", v)
		}
	}
	sharingSource.Lock()
	get := sharingSource.get
	sharingSource.Unlock()
	if get == nil {
		return cfg
	}
	v := get()
	if v == "" {
		return cfg
	}
	s, err := ParseSharing(v)
	if err != nil {
		slog.Warn("beamgpu: ignoring a pipeline option", "option", OptionSharing, "error", err)
		return cfg
	}
	cfg.Args, cfg.Env = s.Args(), s.Env()
	return cfg
}
