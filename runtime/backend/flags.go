package backend

import (
	"flag"
	"fmt"
	"os"
)

// Flags are the command-line flags of backend selection.
type Flags struct {
	Backend     string
	Overrides   string
	ExplainJSON string
	// Executor is --gpu_executor: the GPU executor binary ("": the
	// BEAMGPU_EXECUTOR environment variable, else the worker container's
	// fixed path).
	Executor string
}

// Register adds --backend, --backend_override and --explain_json to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Backend, "backend", string(Auto),
		"implementation for every step: auto (GPU where an executor and device are present, else CPU), cpu, gpu (fail if no GPU), stub (stand-ins, no computation)")
	fs.StringVar(&f.Overrides, "backend_override", "",
		"per-step backend, comma separated step=kind pairs, e.g. ndvi=stub,toa=cpu")
	fs.StringVar(&f.ExplainJSON, "explain_json", "",
		"also write the explain report (implementation per step and why) as JSON to this file")
	fs.StringVar(&f.Executor, "gpu_executor", "",
		"GPU executor binary (empty: $BEAMGPU_EXECUTOR, else /opt/beamgpu/bin/beamgpu-executor, the worker container's path)")
}

// Config turns the flags into a Config for the given steps and executor.
func (f *Flags) Config(steps []Step, ex Executor) (Config, error) {
	def, err := ParseKind(f.Backend)
	if err != nil {
		return Config{}, fmt.Errorf("--backend: %w", err)
	}
	ov, err := ParseOverrides(f.Overrides)
	if err != nil {
		return Config{}, fmt.Errorf("--backend_override: %w", err)
	}
	return Config{Default: def, Overrides: ov, Executor: ex, Steps: steps}, nil
}

// Explain prints the report to stderr and, if --explain_json was given, writes it there.
func (f *Flags) Explain(sel *Selector) error {
	r := sel.Report()
	if err := r.WriteText(os.Stderr); err != nil {
		return err
	}
	if f.ExplainJSON != "" {
		return r.WriteJSONFile(f.ExplainJSON)
	}
	return nil
}
