package dataflow

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SetFlag applies one Dataflow runner flag to c, as the Beam runner reads it:
//
//	region, worker_machine_type (or machine_type), sdk_container_image,
//	number_of_worker_harness_threads, flexrs_goal, experiments and
//	dataflow_service_options (comma-separated lists), and resource_hints
//	(accelerator=... and min_ram=..., repeatable)
//
// A raw worker_accelerator=... among the service options, the form Dataflow's
// pages give (srcL4, srcMPS), is parsed into c.WorkerAccelerator, so it is
// validated like the typed form; enable_prime sets c.Prime. A resource hint
// accelerator=... is right fitting's syntax and joins c.RightFitting. It
// returns an error for a flag it does not know, for a value that does not
// parse, and for a GPU given twice. Values may carry the quotes of a shell
// line ("..."), as the pages write them.
func (c *Config) SetFlag(name, value string) error {
	name = flagName(name)
	value = unquote(value)
	switch name {
	case "region":
		c.Region = value
	case "worker_machine_type", "machine_type":
		if c.MachineType != "" && c.MachineType != value {
			return fmt.Errorf("--%s=%s: the machine type is already %s", name, value, c.MachineType)
		}
		c.MachineType = value
	case "sdk_container_image", "worker_harness_container_image":
		c.ContainerImage = value
	case "number_of_worker_harness_threads":
		if value == "" {
			return nil
		}
		n, err := strconv.Atoi(value)
		if err != nil {
			return fmt.Errorf("--%s=%s: not an integer", name, value)
		}
		c.NumberOfWorkerHarnessThreads = n
	case "flexrs_goal":
		c.FlexRSGoal = value
	case "experiments":
		for _, e := range splitValues(value) {
			if strings.HasPrefix(e, workerAcceleratorKey+"=") {
				// The older form of Dataflow's GPU samples:
				// --experiment "worker_accelerator=type:...".
				if err := c.SetFlag("dataflow_service_options", e); err != nil {
					return fmt.Errorf("--experiments: %w", err)
				}
				continue
			}
			if e == ExperimentNoMultipleSDKContainers {
				c.NoUseMultipleSDKContainers = true
			}
			if !slices.Contains(c.Experiments, e) {
				c.Experiments = append(c.Experiments, e)
			}
		}
	case "dataflow_service_options":
		for _, o := range splitValues(value) {
			switch {
			case strings.HasPrefix(o, workerAcceleratorKey+"="):
				g, err := ParseAccelerator(o)
				if err != nil {
					return fmt.Errorf("--dataflow_service_options: %w", err)
				}
				if c.WorkerAccelerator != nil && *c.WorkerAccelerator != g {
					return fmt.Errorf("--dataflow_service_options=%s: the worker accelerator is already %q; give the GPU once", o, c.WorkerAccelerator.Hint())
				}
				c.WorkerAccelerator = &g
			case o == OptionEnablePrime:
				c.Prime = true
			default:
				if !slices.Contains(c.ServiceOptions, o) {
					c.ServiceOptions = append(c.ServiceOptions, o)
				}
			}
		}
	case "resource_hints":
		key, v, _ := strings.Cut(value, "=")
		switch key {
		case "accelerator", "beam:resources:accelerator:v1":
			g, err := ParseAccelerator(v)
			if err != nil {
				return fmt.Errorf("--resource_hints=%s: %w", value, err)
			}
			c.RightFitting = append(c.RightFitting, g)
		case "min_ram", "beam:resources:min_ram_bytes:v1":
			n, err := ParseBytes(unquote(v))
			if err != nil {
				return fmt.Errorf("--resource_hints=%s: %w", value, err)
			}
			c.MinRAMBytes = n
		}
	default:
		return fmt.Errorf("--%s is not a Dataflow flag the GPU configuration reads", name)
	}
	return nil
}

// ParseFlags reads a Config from command-line arguments as a user types
// them, "--name=value" or "--name value", with the shell's quotes around
// values kept or removed: the form of Dataflow's documentation (a test holds
// every example of its GPU pages). Arguments that are not Dataflow flags
// the configuration reads are returned in rest.
func ParseFlags(args []string) (c Config, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		name = flagName(name)
		if !knownFlag(name) {
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return c, rest, fmt.Errorf("--%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if err := c.SetFlag(name, value); err != nil {
			return c, rest, err
		}
	}
	return c, rest, nil
}

func knownFlag(name string) bool {
	switch name {
	case "region", "worker_machine_type", "machine_type", "sdk_container_image", "worker_harness_container_image",
		"number_of_worker_harness_threads", "flexrs_goal", "experiments", "dataflow_service_options", "resource_hints":
		return true
	}
	return false
}

// flagName returns the Go and Python spelling of a flag given in any of
// the spellings Dataflow's pages use: --worker_machine_type (Go),
// --machine_type (Python), --workerMachineType (Java); --experiment is
// Python's alias of --experiments.
func flagName(name string) string {
	name = strings.TrimLeft(name, "-")
	switch name {
	case "experiment":
		return "experiments"
	case "flexRSGoal":
		return "flexrs_goal"
	}
	var b strings.Builder
	for i, r := range name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unquote drops one pair of matching shell quotes around s.
func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// splitValues splits a comma-separated flag value (Beam Go's
// --experiments and --dataflow_service_options) into trimmed values.
func splitValues(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(unquote(v)); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// ParseBytes reads a min_ram value as Beam does: a plain byte count, or a
// number with a unit (16GB is 16e9 bytes, 16GiB is 16*2^30).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%q is not an amount of memory (want bytes, or a number with a unit such as 16GB or 16GiB)", s)
	}
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[strings.ToUpper(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q", s, unit)
	}
	return int64(f * mult), nil
}
