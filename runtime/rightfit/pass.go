package rightfit

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/resource"
	"google.golang.org/protobuf/proto"
)

// Options configure Apply.
type Options struct {
	// Accelerator, if set, replaces the accelerator hint of every placed
	// environment that has one: the GPU the launcher was asked for (for
	// example "type:nvidia-l4;count:1;install-nvidia-driver") instead of the
	// one the steps declare.
	Accelerator string
}

// Environment is one environment Apply created: a clone of Base that carries
// Hints, holding the leaf transforms of the hinted composites with exactly
// those hints.
type Environment struct {
	// ID is the environment's id in the pipeline, e.g. "go-gpu".
	ID string `json:"id"`
	// Base is the id of the environment it was cloned from ("go").
	Base string `json:"base"`
	// Hints are its resource hints: short name (accelerator, min_ram, ...)
	// to value.
	Hints map[string]string `json:"hints"`
	// Composites are the unique names of the outermost hinted composites
	// whose transforms run in it, sorted.
	Composites []string `json:"composites"`
	// Transforms are the unique names of the leaf transforms moved into it,
	// sorted.
	Transforms []string `json:"transforms"`
}

// FusionBreak is one fusion break Apply inserted: a reshuffle of
// PCollection before the transforms of Environment that read it.
type FusionBreak struct {
	// Name is the reshuffle's unique name.
	Name string `json:"name"`
	// PCollection is the id of the PCollection it breaks.
	PCollection string `json:"pcollection"`
	// Environment is the environment of the transforms after it.
	Environment string `json:"environment"`
}

// Result says what Apply did.
type Result struct {
	// Environments are the environments created, sorted by id; empty when
	// the pipeline had no hinted composite.
	Environments []Environment `json:"environments"`
	// FusionBreaks are the reshuffles inserted, sorted by name.
	FusionBreaks []FusionBreak `json:"fusion_breaks"`
}

// Hinted returns the unique names of the outermost composites of p that carry
// resource hints (set with Scope), sorted.
func Hinted(p *pipepb.Pipeline) []string {
	var out []string
	ts := p.GetComponents().GetTransforms()
	var walk func(id string)
	walk = func(id string) {
		t := ts[id]
		if annotationHints(t.GetAnnotations()) != nil {
			out = append(out, t.GetUniqueName())
			return
		}
		for _, c := range t.GetSubtransforms() {
			walk(c)
		}
	}
	for _, id := range p.GetRootTransformIds() {
		walk(id)
	}
	sort.Strings(out)
	return out
}

// Strip removes the hint annotations of Scope from every transform of p,
// leaving everything in place: for a job whose every worker has the GPU
// (Dataflow's worker_accelerator), where per-step hints must not be set.
func Strip(p *pipepb.Pipeline) {
	for _, t := range p.GetComponents().GetTransforms() {
		for k := range t.GetAnnotations() {
			if strings.HasPrefix(k, AnnotationPrefix) {
				delete(t.Annotations, k)
			}
		}
	}
}

// node is a transform as the walk sees it.
type node struct {
	id        string
	t         *pipepb.PTransform
	hints     resource.Hints // merged from the root down; empty if not hinted
	hinted    bool
	outermost string // id of the outermost hinted ancestor (or itself)
	parent    string // id of the parent composite, "" at the root
}

// Apply rewrites p for right fitting and returns the rewritten pipeline (p
// itself is changed too, and must not be used afterwards). Every leaf transform that
// runs in an SDK environment and sits inside a composite with resource
// hints moves to a clone of its environment carrying the hints, merged as
// Beam merges nested hints (inner accelerator wins, largest min_ram wins,
// the environment's own pipeline-wide hints outermost). Leaves with the same
// environment and merged hints share one clone. Where such a leaf reads a
// PCollection (as main input) that a transform of another environment
// produces, a reshuffle is inserted between them: a fusion break, so that
// the runner starts a new stage, on the hinted workers, there. The hint
// annotations are removed. Everything else is left as it was.
//
// A clone shares its base environment's dependencies (the same
// ArtifactInformation values), so that the runners' update of the default
// environment's worker artifact (runnerlib.Execute, dataflowlib.Execute)
// applies to the clones too.
func Apply(p *pipepb.Pipeline, opts Options) (*pipepb.Pipeline, Result, error) {
	comps := p.GetComponents()
	ts := comps.GetTransforms()
	nodes := map[string]*node{}
	var order []string
	var walk func(id, parent string, outer resource.Hints, hinted bool, outermost string) error
	walk = func(id, parent string, outer resource.Hints, hinted bool, outermost string) error {
		t, ok := ts[id]
		if !ok {
			return fmt.Errorf("transform %q is listed but not defined", id)
		}
		n := &node{id: id, t: t, parent: parent, hints: outer, hinted: hinted, outermost: outermost}
		if own := annotationHints(t.GetAnnotations()); own != nil {
			hs, err := decodeHints(own)
			if err != nil {
				return fmt.Errorf("transform %q: resource hint %w", t.GetUniqueName(), err)
			}
			n.hints = hs.MergeWithOuter(outer)
			if !n.hinted {
				n.outermost = id
			}
			n.hinted = true
		}
		nodes[id] = n
		order = append(order, id)
		for _, c := range t.GetSubtransforms() {
			if err := walk(c, id, n.hints, n.hinted, n.outermost); err != nil {
				return err
			}
		}
		return nil
	}
	for _, id := range p.GetRootTransformIds() {
		if err := walk(id, "", resource.Hints{}, false, ""); err != nil {
			return nil, Result{}, err
		}
	}

	// Group the hinted SDK leaves by base environment and merged hints.
	type group struct {
		env    *Environment
		leaves []*node
	}
	groups := map[string]*group{}
	var groupKeys []string
	for _, id := range order {
		n := nodes[id]
		if !n.hinted || len(n.t.GetSubtransforms()) > 0 || n.t.GetEnvironmentId() == "" {
			continue
		}
		base := n.t.GetEnvironmentId()
		env, ok := comps.GetEnvironments()[base]
		if !ok {
			return nil, Result{}, fmt.Errorf("transform %q: environment %q is not defined", n.t.GetUniqueName(), base)
		}
		envHints, err := decodeHints(env.GetResourceHints())
		if err != nil {
			return nil, Result{}, fmt.Errorf("environment %q: resource hint %w", base, err)
		}
		payloads := n.hints.MergeWithOuter(envHints).Payloads()
		if opts.Accelerator != "" {
			if _, has := payloads[URNAccelerator]; has {
				payloads[URNAccelerator] = []byte(opts.Accelerator)
			}
		}
		key := base + "\x00" + FormatHints(payloads)
		g := groups[key]
		if g == nil {
			g = &group{env: &Environment{Base: base, Hints: map[string]string{}}}
			for urn, v := range payloads {
				g.env.Hints[HintName(urn)] = string(v)
			}
			g.env.ID = newEnvID(comps, base, payloads)
			clone := proto.Clone(env).(*pipepb.Environment)
			clone.Dependencies = env.Dependencies // shared on purpose: see Apply's doc
			clone.ResourceHints = payloads
			comps.Environments[g.env.ID] = clone
			groups[key] = g
			groupKeys = append(groupKeys, key)
		}
		g.leaves = append(g.leaves, n)
	}

	var res Result
	moved := map[string]string{} // leaf id -> new environment
	for _, key := range groupKeys {
		g := groups[key]
		for _, n := range g.leaves {
			n.t.EnvironmentId = g.env.ID
			moved[n.id] = g.env.ID
			g.env.Transforms = append(g.env.Transforms, n.t.GetUniqueName())
			if c := ts[n.outermost].GetUniqueName(); !slices.Contains(g.env.Composites, c) {
				g.env.Composites = append(g.env.Composites, c)
			}
		}
		sort.Strings(g.env.Transforms)
		sort.Strings(g.env.Composites)
		res.Environments = append(res.Environments, *g.env)
	}
	sort.Slice(res.Environments, func(i, j int) bool { return res.Environments[i].ID < res.Environments[j].ID })

	// A hinted composite whose leaves all moved to one environment says so.
	for _, id := range order {
		n := nodes[id]
		if n.hinted && len(n.t.GetSubtransforms()) > 0 {
			if env := commonEnv(ts, id, moved); env != "" {
				n.t.EnvironmentId = env
			}
		}
	}

	np, breaks, err := insertFusionBreaks(p, nodes, order, moved)
	if err != nil {
		return nil, Result{}, err
	}
	res.FusionBreaks = breaks
	Strip(np)
	return np, res, nil
}

// commonEnv returns the environment every moved leaf under id shares, or ""
// if they differ or none moved.
func commonEnv(ts map[string]*pipepb.PTransform, id string, moved map[string]string) string {
	env := ""
	ok := true
	var walk func(id string)
	walk = func(id string) {
		t := ts[id]
		if len(t.GetSubtransforms()) == 0 {
			if e, m := moved[id]; m {
				if env != "" && env != e {
					ok = false
				}
				env = e
			}
			return
		}
		for _, c := range t.GetSubtransforms() {
			walk(c)
		}
	}
	walk(id)
	if !ok {
		return ""
	}
	return env
}

// newEnvID names a new environment after its base: "go-gpu" for one with an
// accelerator, "go-hinted" otherwise, with a number where taken.
func newEnvID(comps *pipepb.Components, base string, payloads map[string][]byte) string {
	stem := base + "-hinted"
	if _, ok := payloads[URNAccelerator]; ok {
		stem = base + "-gpu"
	}
	id := stem
	for i := 2; ; i++ {
		if _, taken := comps.GetEnvironments()[id]; !taken {
			return id
		}
		id = fmt.Sprintf("%s-%d", stem, i)
	}
}

// mainInputs returns the local names of t's inputs that are not side inputs.
func mainInputs(t *pipepb.PTransform) ([]string, error) {
	var side map[string]*pipepb.SideInput
	if t.GetSpec().GetUrn() == graphx.URNParDo {
		var pl pipepb.ParDoPayload
		if err := proto.Unmarshal(t.GetSpec().GetPayload(), &pl); err != nil {
			return nil, fmt.Errorf("transform %q: ParDo payload: %w", t.GetUniqueName(), err)
		}
		side = pl.GetSideInputs()
	}
	var out []string
	for local := range t.GetInputs() {
		if _, isSide := side[local]; !isSide {
			out = append(out, local)
		}
	}
	sort.Strings(out)
	return out, nil
}
