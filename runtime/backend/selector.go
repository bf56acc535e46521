package backend

import (
	"fmt"
	"sync"
)

// Decision is the selector's answer for one step.
type Decision struct {
	Step string `json:"step"`
	// Use is the step's use this decision is for (Step.Use), "" for a step
	// used once.
	Use   string `json:"use,omitempty"`
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

// Label is the decision's step in the explain report: "onnx[resnet50.onnx]"
// for a use, else the step's name.
func (d Decision) Label() string { return label(d.Step, d.Use) }

// Selector resolves steps to implementations and records every decision.
// It is safe for concurrent use.
type Selector struct {
	def       Kind
	overrides map[string]Kind
	gpuOK     bool
	gpuWhy    string
	ex        Executor
	known     map[string]Step // nil: any step
	steps     []Step
	names     string

	mu        sync.Mutex
	decisions []Decision
	seen      map[string]int
}

// New validates cfg and returns a Selector. It fails when GPU is requested
// (by default or override) and no executor is available or a step's use
// cannot run there (Step.NoGPU), when an override names a step not in
// cfg.Steps, or when an override asks for the GPU for a step that has no
// GPU op.
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
	s := &Selector{def: def, overrides: map[string]Kind{}, seen: map[string]int{}, ex: ex}
	s.gpuOK, s.gpuWhy = ex.Available()

	if len(cfg.Steps) > 0 {
		s.known = map[string]Step{}
		for _, st := range cfg.Steps {
			s.known[st.Name] = st
		}
		s.steps = append([]Step(nil), cfg.Steps...)
		s.names = stepNames(cfg.Steps)
	}
	wantGPU := def == GPU
	for name, k := range cfg.Overrides {
		if _, err := ParseKind(string(k)); err != nil {
			return nil, fmt.Errorf("backend override %s: %w", name, err)
		}
		if s.known != nil {
			st, ok := s.known[name]
			if !ok {
				return nil, fmt.Errorf("backend override %s=%s: no step named %q in this pipeline (steps: %s)", name, k, name, s.names)
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
	if wantGPU {
		for _, st := range cfg.Steps {
			if st.GPUOp == "" || s.request(st.Name) != GPU {
				continue
			}
			if err := s.gpuRefused(st); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// gpuRefused is the error of a GPU request for st that cannot be met: a use
// that cannot run on the GPU (NoGPU), or an op the executor does not serve.
func (s *Selector) gpuRefused(st Step) error {
	why := st.NoGPU
	if why == "" {
		if ok, w := s.serves(st.GPUOp); !ok {
			why = w
		}
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("backend gpu requested for step %q but %s (use --backend=auto to run it on the CPU, or --backend_override=%s=cpu)", st.Label(), why, st.Name)
}

// request is what the configuration asks for step name.
func (s *Selector) request(name string) Kind {
	if k, ok := s.overrides[name]; ok {
		return k
	}
	return s.def
}

// serves asks the executor whether it serves op (executors that cannot say
// are taken to serve every op).
func (s *Selector) serves(op string) (bool, string) {
	if os, ok := s.ex.(OpServer); ok {
		return os.Serves(op)
	}
	return true, ""
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
// resolved twice (the same step used twice in one pipeline) is recorded once;
// its uses (Step.Use) once each. When the configuration listed the
// pipeline's steps, a step not among them is an error: the pipeline builds a
// step it did not declare, so its flags and explain report would not know
// it. So is a GPU request for a use that cannot run there (Step.NoGPU) that
// New did not see.
func (s *Selector) Resolve(st Step) (Decision, error) {
	if s.known != nil {
		if _, ok := s.known[st.Name]; !ok {
			return Decision{}, fmt.Errorf("step %q is not one of this pipeline's steps (%s): add it to backend.Config.Steps", st.Name, s.names)
		}
	}
	req, src := s.def, "--backend="+string(s.def)
	if k, ok := s.overrides[st.Name]; ok {
		req, src = k, "--backend_override="+st.Name+"="+string(k)
	}
	d := Decision{Step: st.Name, Use: st.Use, GPUOp: st.GPUOp, Requested: req}
	switch req {
	case CPU:
		d.Impl, d.Reason = CPU, "requested by "+src
	case Stub:
		d.Impl, d.Reason = Stub, "requested by "+src
	case GPU:
		if st.GPUOp == "" {
			d.Impl, d.Reason = CPU, "step has no GPU implementation; runs on the CPU"
		} else if st.NoGPU != "" {
			return d, s.gpuRefused(st)
		} else {
			d.Impl, d.Reason = GPU, "requested by "+src
		}
	default: // Auto
		switch ok, why := s.serves(st.GPUOp); {
		case st.GPUOp == "":
			d.Impl, d.Reason = CPU, "auto: step has no GPU implementation"
		case st.NoGPU != "":
			d.Impl, d.Reason = CPU, "auto: "+st.NoGPU
		case !s.gpuOK:
			d.Impl, d.Reason = CPU, "auto: "+s.gpuWhy
		case !ok:
			d.Impl, d.Reason = CPU, "auto: "+why
		default:
			d.Impl, d.Reason = GPU, "auto: GPU executor available"
		}
	}
	if d.Impl == GPU {
		d.Hints = st.Hints
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.seen[st.Label()]; ok {
		s.decisions[i] = d
	} else {
		s.seen[st.Label()] = len(s.decisions)
		s.decisions = append(s.decisions, d)
	}
	return d, nil
}

// Steps returns the steps of the configuration, in its order (nil when it
// listed none).
func (s *Selector) Steps() []Step { return append([]Step(nil), s.steps...) }

// Report returns the decisions made so far, in the order the steps were resolved.
func (s *Selector) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Report{Default: s.def, Decisions: append([]Decision(nil), s.decisions...)}
}

// Default returns the pipeline-wide request.
func (s *Selector) Default() Kind { return s.def }
