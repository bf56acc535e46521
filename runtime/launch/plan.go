package launch

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/protox"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/rightfit"
	df "google.golang.org/api/dataflow/v1b3"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// Mode is how a plan places the GPU steps.
type Mode string

// The modes.
const (
	// ModeRightFitting: GPU steps in their own hinted environments.
	ModeRightFitting Mode = "right fitting"
	// ModeWholePipeline: one environment; every Dataflow worker has the
	// GPU of --worker_accelerator; no hints.
	ModeWholePipeline Mode = "whole-pipeline GPU"
	// ModeOneEnvironment: --right_fitting=false, or prism under auto; one
	// environment, no hints.
	ModeOneEnvironment Mode = "one environment"
)

// Plan describes a pipeline as the launcher submits it. Write puts it in a
// directory next to the pipeline proto and, for Dataflow, the job.
type Plan struct {
	Runner string `json:"runner"`
	Mode   Mode   `json:"mode"`
	// Hinted are the steps (composites) that declare resource hints: the
	// steps that run on the GPU.
	Hinted       []string               `json:"gpu_steps"`
	Environments []PlanEnvironment      `json:"environments"`
	FusionBreaks []rightfit.FusionBreak `json:"fusion_breaks,omitempty"`
	Sharing      *SharingPlan           `json:"gpu_sharing,omitempty"`
	Dataflow     *DataflowPlan          `json:"dataflow,omitempty"`
	// Warnings are the Dataflow GPU rules' warnings: what the sources do
	// not rule out but a job may still fail on.
	Warnings []string `json:"warnings,omitempty"`
	// SharedMemory says what the GPU executors need of a worker
	// container's shared memory (SharedMemoryNote), when steps use the GPU.
	SharedMemory string                 `json:"shared_memory,omitempty"`
	Files        []string               `json:"files,omitempty"`
	moved        []rightfit.Environment // environments right fitting made
	why          string                 // why one environment (ModeOneEnvironment)
	mps          bool
	workerGPUs   int // the worker accelerator's count, where there is one
}

// PlanEnvironment is one environment of the pipeline and what runs in it.
type PlanEnvironment struct {
	ID string `json:"id"`
	// Container is the environment's image (docker), or its kind.
	Container string `json:"container"`
	// Hints are its resource hints by short name.
	Hints map[string]string `json:"hints,omitempty"`
	// Steps are the largest transforms all of whose work runs here.
	Steps []string `json:"steps"`
	// Transforms counts its leaf transforms.
	Transforms int `json:"transforms"`
}

// SharingPlan is how a worker's GPU is shared among SDK processes, and why.
type SharingPlan struct {
	client.Sharing
	// MPS reports use_nvidia_mps on the worker accelerator.
	MPS bool `json:"mps"`
	// GPUs is the GPUs of one GPU worker (the accelerator's count:N; 1
	// where it is not known). Each executor uses every GPU its process
	// sees, and on Dataflow every process sees all of them, so each GPU is
	// shared by all Processes: the budget and MaxConcurrent hold per GPU.
	GPUs int `json:"gpus"`
	// Why says where Processes comes from.
	Why string `json:"why"`
}

// DataflowPlan is the Dataflow side of a plan.
type DataflowPlan struct {
	JobName              string   `json:"job_name"`
	Project              string   `json:"project"`
	Region               string   `json:"region"`
	MachineType          string   `json:"machine_type,omitempty"`
	ContainerImage       string   `json:"container_image"`
	WorkerAccelerator    string   `json:"worker_accelerator,omitempty"`
	ServiceOptions       []string `json:"service_options,omitempty"`
	Experiments          []string `json:"experiments"`
	WorkerHarnessThreads int      `json:"worker_harness_threads,omitempty"`
	// Flags are the Dataflow runner flags of the GPU configuration.
	Flags []string `json:"flags"`
	// Labels, TemplateLocation, Update, TransformNameMapping and FlexRSGoal
	// are the job options of those names, as the job gets them.
	Labels               map[string]string `json:"labels,omitempty"`
	TemplateLocation     string            `json:"template_location,omitempty"`
	Update               bool              `json:"update,omitempty"`
	TransformNameMapping map[string]string `json:"transform_name_mapping,omitempty"`
	FlexRSGoal           string            `json:"flexrs_goal,omitempty"`
	// WorkerBinary says which worker binary a submission stages.
	WorkerBinary string `json:"worker_binary"`
}

// usesGPU reports whether any step runs on a GPU worker.
func (p *Plan) usesGPU() bool {
	if p.Mode == ModeWholePipeline {
		return true
	}
	for _, e := range p.Environments {
		if e.Hints["accelerator"] != "" {
			return true
		}
	}
	return false
}

// describe fills p.Environments from the placed pipeline.
func (p *Plan) describe(model *pipepb.Pipeline) {
	ts := model.GetComponents().GetTransforms()
	// envs[id] is the set of environments of id's SDK leaves.
	envs := map[string]map[string]bool{}
	var walk func(id string) map[string]bool
	walk = func(id string) map[string]bool {
		t := ts[id]
		set := map[string]bool{}
		if len(t.GetSubtransforms()) == 0 {
			if e := t.GetEnvironmentId(); e != "" {
				set[e] = true
			}
		}
		for _, c := range t.GetSubtransforms() {
			for e := range walk(c) {
				set[e] = true
			}
		}
		envs[id] = set
		return set
	}
	for _, id := range model.GetRootTransformIds() {
		walk(id)
	}
	steps := map[string][]string{}
	leaves := map[string]int{}
	var cover func(id string)
	cover = func(id string) {
		t := ts[id]
		if set := envs[id]; len(set) == 1 {
			for e := range set {
				steps[e] = append(steps[e], t.GetUniqueName())
			}
			return
		}
		for _, c := range t.GetSubtransforms() {
			cover(c)
		}
	}
	for _, id := range model.GetRootTransformIds() {
		cover(id)
	}
	for _, t := range ts {
		if len(t.GetSubtransforms()) == 0 && t.GetEnvironmentId() != "" {
			leaves[t.GetEnvironmentId()]++
		}
	}
	for id, env := range model.GetComponents().GetEnvironments() {
		pe := PlanEnvironment{ID: id, Container: container(env), Transforms: leaves[id], Steps: steps[id]}
		sort.Strings(pe.Steps)
		if len(env.GetResourceHints()) > 0 {
			pe.Hints = map[string]string{}
			for urn, v := range env.GetResourceHints() {
				pe.Hints[rightfit.HintName(urn)] = string(v)
			}
		}
		p.Environments = append(p.Environments, pe)
	}
	sort.Slice(p.Environments, func(i, j int) bool { return p.Environments[i].ID < p.Environments[j].ID })
}

func container(env *pipepb.Environment) string {
	switch env.GetUrn() {
	case graphx.URNEnvDocker:
		var d pipepb.DockerPayload
		if proto.Unmarshal(env.GetPayload(), &d) == nil {
			return d.GetContainerImage()
		}
	case graphx.URNEnvExternal:
		return "external (loopback: workers in the launching process)"
	case graphx.URNEnvProcess:
		return "process"
	}
	return env.GetUrn()
}

// Placement says in one line which environments the pipeline runs in and
// what each holds: "go (read, assemble, ...), go-gpu [accelerator=...] (landsat/toa_ndvi)".
func (p *Plan) Placement() string {
	var parts []string
	for _, e := range p.Environments {
		s := e.ID
		if len(e.Hints) > 0 {
			s += " [" + formatHints(e.Hints) + "]"
		}
		parts = append(parts, s+" ("+strings.Join(e.Steps, ", ")+")")
	}
	return fmt.Sprintf("%d environments: %s", len(p.Environments), strings.Join(parts, "; "))
}

// WriteText writes the plan's human summary.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Launch plan: runner %s, %s\n", p.Runner, p.Mode)
	switch {
	case len(p.Hinted) > 0 && p.Mode == ModeWholePipeline:
		fmt.Fprintf(&b, "GPU steps (every worker has the GPU; their resource hints were stripped): %s\n", strings.Join(p.Hinted, ", "))
	case len(p.Hinted) > 0 && p.Mode == ModeOneEnvironment:
		fmt.Fprintf(&b, "GPU steps (%s: one environment, their resource hints were stripped): %s\n", p.why, strings.Join(p.Hinted, ", "))
	case len(p.Hinted) > 0:
		fmt.Fprintf(&b, "GPU steps (carry resource hints): %s\n", strings.Join(p.Hinted, ", "))
	default:
		fmt.Fprintf(&b, "GPU steps: none (no step runs on the GPU; see the explain report)\n")
	}
	fmt.Fprintf(&b, "\nEnvironments (%d):\n", len(p.Environments))
	for _, e := range p.Environments {
		hints := "none"
		if len(e.Hints) > 0 {
			hints = formatHints(e.Hints)
		}
		fmt.Fprintf(&b, "  %s\n    container: %s\n    hints:     %s\n    runs:      %d transforms: %s\n",
			e.ID, e.Container, hints, e.Transforms, strings.Join(e.Steps, ", "))
	}
	if len(p.FusionBreaks) > 0 {
		fmt.Fprintf(&b, "\nFusion breaks (%d):\n", len(p.FusionBreaks))
		for _, fb := range p.FusionBreaks {
			fmt.Fprintf(&b, "  %s: reshuffles %s before environment %s\n", fb.Name, fb.PCollection, fb.Environment)
		}
	}
	if s := p.Sharing; s != nil {
		mps := "off"
		if s.MPS {
			mps = "on (use_nvidia_mps): the processes' kernels run side by side on the GPU"
		}
		gpus := max(1, s.GPUs)
		fmt.Fprintf(&b, "\nGPU sharing: %d GPU(s) per worker, each shared by %d SDK process(es) (%s); MPS %s.\n", gpus, s.Processes, s.Why, mps)
		fmt.Fprintf(&b, "  Each executor uses every GPU of its worker; on each: memory budget %.3g of the GPU's memory (%.3g over %d), at most %d batch(es) at once (%d on the worker's %d GPU(s)).\n",
			s.MemoryFraction/float64(s.Processes), s.MemoryFraction, s.Processes, s.MaxConcurrent, s.MaxConcurrent*gpus, gpus)
	}
	if d := p.Dataflow; d != nil {
		fmt.Fprintf(&b, "\nDataflow:\n  job name:        %s\n  project:         %s\n  region:          %s\n", d.JobName, d.Project, d.Region)
		machine := d.MachineType
		if machine == "" {
			machine = "Dataflow's default"
		}
		if p.Mode == ModeRightFitting && p.usesGPU() {
			machine += " (for the environments without hints; Dataflow picks GPU machines for the hinted ones)"
		}
		fmt.Fprintf(&b, "  machine type:    %s\n  container image: %s\n", machine, d.ContainerImage)
		if d.WorkerAccelerator != "" {
			fmt.Fprintf(&b, "  worker GPU:      %s (every worker)\n", d.WorkerAccelerator)
		}
		fmt.Fprintf(&b, "  service options: %s\n  experiments:     %s\n", orNone(d.ServiceOptions), orNone(d.Experiments))
		if d.WorkerHarnessThreads > 0 {
			fmt.Fprintf(&b, "  harness threads: %d\n", d.WorkerHarnessThreads)
		}
		if len(d.Labels) > 0 {
			fmt.Fprintf(&b, "  labels:          %s\n", formatHints(d.Labels))
		}
		if d.FlexRSGoal != "" {
			fmt.Fprintf(&b, "  FlexRS goal:     %s\n", d.FlexRSGoal)
		}
		if d.TemplateLocation != "" {
			fmt.Fprintf(&b, "  template:        staged to %s, not submitted\n", d.TemplateLocation)
		}
		if d.Update {
			fmt.Fprintf(&b, "  update:          replaces the running job named %s\n", d.JobName)
			if len(d.TransformNameMapping) > 0 {
				fmt.Fprintf(&b, "  name mapping:    %s\n", formatHints(d.TransformNameMapping))
			}
		}
		fmt.Fprintf(&b, "  worker binary:   %s\n", d.WorkerBinary)
		fmt.Fprintf(&b, "  GPU flags:       %s\n", strings.Join(d.Flags, " "))
		if d.Project == placeholderProject {
			fmt.Fprintf(&b, "  (no --project given: the plan says %s; a submission needs the real one)\n", placeholderProject)
		}
	}
	if p.SharedMemory != "" {
		fmt.Fprintf(&b, "\nWorker container: %s.\n", p.SharedMemory)
	}
	if len(p.Warnings) > 0 {
		fmt.Fprintf(&b, "\nWarnings (%d; the job is valid by the rules, but check):\n", len(p.Warnings))
		for _, w := range p.Warnings {
			fmt.Fprintf(&b, "  %s\n", w)
		}
	}
	if len(p.Files) > 0 {
		fmt.Fprintf(&b, "\nFiles: %s\n", strings.Join(p.Files, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ",")
}

// Plan file names, in the --plan_out directory.
const (
	FilePlanText     = "plan.txt"
	FilePlanJSON     = "plan.json"
	FilePipeline     = "pipeline.pb"
	FilePipelineText = "pipeline.txtpb"
	FileJob          = "job.json"
)

// Write writes the plan into dir: plan.txt, plan.json, the pipeline proto
// (binary and text) and, when job is not nil, the Dataflow job as JSON.
func (p *Plan) Write(dir string, model *pipepb.Pipeline, job *df.Job) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--plan_out %s: %w", dir, err)
	}
	p.Files = []string{FilePlanText, FilePlanJSON, FilePipeline, FilePipelineText}
	if job != nil {
		p.Files = append(p.Files, FileJob)
	}
	files := map[string][]byte{
		FilePipeline:     protox.MustEncode(model),
		FilePipelineText: []byte(prototext.MarshalOptions{Multiline: true, Indent: "  "}.Format(model)),
	}
	js, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	files[FilePlanJSON] = append(js, '\n')
	if job != nil {
		raw, err := job.MarshalJSON()
		if err != nil {
			return fmt.Errorf("the Dataflow job: %w", err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		pretty, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		files[FileJob] = append(pretty, '\n')
	}
	var text strings.Builder
	if err := p.WriteText(&text); err != nil {
		return err
	}
	files[FilePlanText] = []byte(text.String())
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("--plan_out: %w", err)
		}
	}
	return nil
}

// formatHints writes hints as "accelerator=..., min_ram=...", sorted by name.
func formatHints(hints map[string]string) string {
	var hs []string
	for _, k := range sortedKeys(hints) {
		hs = append(hs, k+"="+hints[k])
	}
	return strings.Join(hs, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
