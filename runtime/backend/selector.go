package backend

import (
	"fmt"
	"sync"
)

// Decision is the selector's answer for one step.
type Decision struct {
	Step  string `json:"step"`
	GPUOp string `json:"gpu_op,omitempty"`
	// Impl is CPU, GPU or Stub.
	Impl Kind `json:"impl"`
	// Requested is what the configuration asked for this step.
	Requested Kind `json:"requested"`
	// Reason says why Impl was chosen.
	Reason string `json:"reason"`
	// Hints are the resource hints the step carries as chosen (only on the GPU).
	Hints Hints `json:"hints"`
}

// Selector resolves steps to implementations and records every decision.
// It is safe for concurrent use.
type Selector struct {
	def       Kind
	overrides map[string]Kind
	gpuOK     bool
	gpuWhy    string

	mu        sync.Mutex
	decisions []Decision
	seen      map[string]int
}

// New validates cfg and returns a Selector. It fails when GPU is requested
// (by default or override) and no executor is available, when an override
// names a step not in cfg.Steps, or when an override asks for the GPU for a
// step that has no GPU op.
func New(cfg Config) (*Selector, error) {
	def := cfg.Default
	if def == "" {
		def = Auto
	}
	if _, err := ParseKind(string(def)); err != nil {
		return nil, err
	}
	ex := cfg.Executor
	if ex == nil {
		ex = NoExecutor{}
	}
	s := &Selector{def: def, overrides: map[string]Kind{}, seen: map[string]int{}}
	s.gpuOK, s.gpuWhy = ex.Available()

	known := map[string]Step{}
	for _, st := range cfg.Steps {
		known[st.Name] = st
	}
	wantGPU := def == GPU
	for name, k := range cfg.Overrides {
		if _, err := ParseKind(string(k)); err != nil {
			return nil, fmt.Errorf("backend override %s: %w", name, err)
		}
		if len(known) > 0 {
			st, ok := known[name]
			if !ok {
				return nil, fmt.Errorf("backend override %s=%s: no step named %q in this pipeline (steps: %s)", name, k, name, stepNames(cfg.Steps))
			}
			if k == GPU && st.GPUOp == "" {
				return nil, fmt.Errorf("backend override %s=gpu: step %q has no GPU implementation", name, name)
			}
		}
		if k == GPU {
			wantGPU = true
		}
		s.overrides[name] = k
	}
	if wantGPU && !s.gpuOK {
		return nil, fmt.Errorf("backend gpu requested but no GPU can be had: %s (use --backend=auto to fall back to the CPU, or --backend=cpu)", s.gpuWhy)
	}
	return s, nil
}

// MustNew is New that panics on error, for tests and examples.
func MustNew(cfg Config) *Selector {
	s, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return s
}

func stepNames(steps []Step) string {
	out := ""
	for i, st := range steps {
		if i > 0 {
			out += ", "
		}
		out += st.Name
	}
	return out
}

// Resolve chooses the implementation of st and records the decision. A step
// resolved twice (the same step used twice in one pipeline) is recorded once.
func (s *Selector) Resolve(st Step) Decision {
	req, src := s.def, "--backend="+string(s.def)
	if k, ok := s.overrides[st.Name]; ok {
		req, src = k, "--backend_override="+st.Name+"="+string(k)
	}
	d := Decision{Step: st.Name, GPUOp: st.GPUOp, Requested: req}
	switch req {
	case CPU:
		d.Impl, d.Reason = CPU, "requested by "+src
	case Stub:
		d.Impl, d.Reason = Stub, "requested by "+src
	case GPU:
		if st.GPUOp == "" {
			d.Impl, d.Reason = CPU, "step has no GPU implementation; runs on the CPU"
		} else {
			d.Impl, d.Reason = GPU, "requested by "+src
		}
	default: // Auto
		switch {
		case st.GPUOp == "":
			d.Impl, d.Reason = CPU, "auto: step has no GPU implementation"
		case s.gpuOK:
			d.Impl, d.Reason = GPU, "auto: GPU executor available"
		default:
			d.Impl, d.Reason = CPU, "auto: "+s.gpuWhy
		}
	}
	if d.Impl == GPU {
		d.Hints = st.Hints
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.seen[st.Name]; ok {
		s.decisions[i] = d
	} else {
		s.seen[st.Name] = len(s.decisions)
		s.decisions = append(s.decisions, d)
	}
	return d
}

// Report returns the decisions made so far, in the order the steps were resolved.
func (s *Selector) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Report{Default: s.def, Decisions: append([]Decision(nil), s.decisions...)}
}

// Default returns the pipeline-wide request.
func (s *Selector) Default() Kind { return s.def }
