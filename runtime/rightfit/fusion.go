package rightfit

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	v1pb "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx/v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/pipelinex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/protox"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// The fusion break is Beam Go's own Reshuffle, as its marshaller writes it:
// a composite (beam:transform:reshuffle:v1) of a ParDo that encodes each
// windowed element under a random key, a GroupByKey in the global window
// with an always-firing trigger, and a ParDo that decodes the elements
// again. Runners that know the URN run their own reshuffle; the others run
// the three parts. Rather than write those parts by hand, this file takes
// them from a one-transform pipeline that Beam marshals (the template) and
// splices a copy in front of each hinted stage, pointing its coders at the
// PCollection it breaks.

// template is the marshalled Reshuffle's parts.
type template struct {
	reify, gbk, unreify *pipepb.PTransform
	keyed, grouped      *pipepb.PCollection // outputs of reify and gbk
	coders              map[string]*pipepb.Coder
	windowing           *pipepb.WindowingStrategy // of keyed and grouped
}

var (
	tmplOnce sync.Once
	tmpl     *template
	tmplErr  error
)

// templatePrefix starts the ids of the coders and windowing strategy copied
// from the template.
const templatePrefix = "beamgpu_rf_"

func reshuffleTemplate() (*template, error) {
	tmplOnce.Do(func() { tmpl, tmplErr = buildTemplate() })
	return tmpl, tmplErr
}

func buildTemplate() (*template, error) {
	p, s := beam.NewPipelineWithRoot()
	beam.Reshuffle(s, beam.Impulse(s))
	edges, _, err := p.Build()
	if err != nil {
		return nil, fmt.Errorf("fusion break template: %w", err)
	}
	env, err := graphx.CreateEnvironment(context.Background(), graphx.URNEnvDocker, func(context.Context) string { return "template" })
	if err != nil {
		return nil, fmt.Errorf("fusion break template: %w", err)
	}
	mp, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	if err != nil {
		return nil, fmt.Errorf("fusion break template: %w", err)
	}
	c := mp.GetComponents()
	t := &template{coders: map[string]*pipepb.Coder{}}
	for _, x := range c.GetTransforms() {
		if x.GetSpec().GetUrn() != graphx.URNReshuffle {
			continue
		}
		for _, id := range x.GetSubtransforms() {
			sub := c.GetTransforms()[id]
			switch sub.GetSpec().GetUrn() {
			case graphx.URNGBK:
				t.gbk = sub
			case graphx.URNParDo:
				var pl pipepb.ParDoPayload
				if err := proto.Unmarshal(sub.GetSpec().GetPayload(), &pl); err != nil {
					return nil, fmt.Errorf("fusion break template: %w", err)
				}
				switch pl.GetDoFn().GetUrn() {
				case graphx.URNReshuffleInput:
					t.reify = sub
				case graphx.URNReshuffleOutput:
					t.unreify = sub
				}
			}
		}
	}
	if t.reify == nil || t.gbk == nil || t.unreify == nil {
		return nil, fmt.Errorf("fusion break template: Beam's marshalled Reshuffle does not have the expected reify, GroupByKey and unreify parts")
	}
	t.keyed = c.GetPcollections()[t.reify.GetOutputs()["i0"]]
	t.grouped = c.GetPcollections()[t.gbk.GetOutputs()["i0"]]
	if t.keyed == nil || t.grouped == nil {
		return nil, fmt.Errorf("fusion break template: the Reshuffle's PCollections are missing")
	}
	t.windowing = c.GetWindowingStrategies()[t.keyed.GetWindowingStrategyId()]
	for id, cd := range pipelinex.TrimCoders(c.GetCoders(), t.keyed.GetCoderId(), t.grouped.GetCoderId(), t.windowing.GetWindowCoderId()) {
		t.coders[id] = cd
	}
	return t, nil
}

// breakKey identifies one fusion break: a PCollection read by an environment.
type breakKey struct{ pcoll, env string }

// insertFusionBreaks puts a reshuffle between every moved leaf and each of
// its main inputs produced in another environment, and returns the pipeline
// normalised (composites' inputs and outputs recomputed).
func insertFusionBreaks(p *pipepb.Pipeline, nodes map[string]*node, order []string, moved map[string]string) (*pipepb.Pipeline, []FusionBreak, error) {
	comps := p.GetComponents()
	producer := map[string]*pipepb.PTransform{}
	for _, t := range comps.GetTransforms() {
		if len(t.GetSubtransforms()) == 0 {
			for _, pc := range t.GetOutputs() {
				producer[pc] = t
			}
		}
	}
	var (
		t      *template
		done   = map[breakKey]string{} // -> the broken PCollection
		breaks []FusionBreak
	)
	for _, id := range order {
		env, ok := moved[id]
		if !ok {
			continue
		}
		leaf := nodes[id]
		locals, err := mainInputs(leaf.t)
		if err != nil {
			return nil, nil, err
		}
		for _, local := range locals {
			pc := leaf.t.GetInputs()[local]
			prod := producer[pc]
			if prod == nil || prod.GetEnvironmentId() == "" || prod.GetEnvironmentId() == env {
				continue // a runner transform (GroupByKey, Impulse) or the same stage
			}
			k := breakKey{pc, env}
			out, seen := done[k]
			if !seen {
				if t == nil {
					if t, err = reshuffleTemplate(); err != nil {
						return nil, nil, err
					}
				}
				n := len(breaks) + 1
				parent := nodes[leaf.outermost].parent
				name := breakName(comps, parent, comps.GetTransforms()[leaf.outermost].GetUniqueName(), n)
				compositeID, o, err := spliceReshuffle(comps, t, n, name, pc, prod.GetEnvironmentId(), env)
				if err != nil {
					return nil, nil, err
				}
				out = o
				done[k] = out
				breaks = append(breaks, FusionBreak{Name: name, PCollection: pc, Environment: env})
				if pt := comps.GetTransforms()[parent]; pt != nil {
					pt.Subtransforms = append(pt.Subtransforms, compositeID)
				}
			}
			leaf.t.Inputs[local] = out
		}
	}
	if len(breaks) == 0 {
		return p, nil, nil
	}
	np, err := pipelinex.Normalize(p)
	if err != nil {
		return nil, nil, fmt.Errorf("fusion breaks: %w", err)
	}
	sort.Slice(breaks, func(i, j int) bool { return breaks[i].Name < breaks[j].Name })
	return np, breaks, nil
}

// breakName names the n-th fusion break, placed in the composite parent
// ("" at the root) before the hinted composite named hinted:
// "<parent>/fusion_break_<n>_before_<hinted's last name part>".
func breakName(comps *pipepb.Components, parent, hinted string, n int) string {
	last := hinted[strings.LastIndex(hinted, "/")+1:]
	name := fmt.Sprintf("fusion_break_%d_before_%s", n, last)
	if pt := comps.GetTransforms()[parent]; pt != nil {
		name = pt.GetUniqueName() + "/" + name
	}
	return name
}

// spliceReshuffle adds to comps a copy of the template reshuffling the
// PCollection pc (produced in environment from) for transforms of environment
// to, and returns the id of its composite and of its output PCollection.
func spliceReshuffle(comps *pipepb.Components, t *template, n int, name, pc, from, to string) (string, string, error) {
	in := comps.GetPcollections()[pc]
	if in == nil {
		return "", "", fmt.Errorf("PCollection %q is read but not defined", pc)
	}
	id := fmt.Sprintf("%sbreak%d", templatePrefix, n)

	// The template's coders and windowing strategy, once.
	rename := func(c string) string { return templatePrefix + c }
	for cid, cd := range t.coders {
		if _, ok := comps.GetCoders()[rename(cid)]; ok {
			continue
		}
		cp := proto.Clone(cd).(*pipepb.Coder)
		for i, sub := range cp.ComponentCoderIds {
			cp.ComponentCoderIds[i] = rename(sub)
		}
		comps.Coders[rename(cid)] = cp
	}
	wsID := templatePrefix + "windowing_" + from
	if _, ok := comps.GetWindowingStrategies()[wsID]; !ok {
		ws := proto.Clone(t.windowing).(*pipepb.WindowingStrategy)
		ws.WindowCoderId = rename(ws.WindowCoderId)
		ws.EnvironmentId = from
		comps.WindowingStrategies[wsID] = ws
	}

	pcoll := func(suffix, coder, ws string) string {
		pid := id + "_" + suffix
		x := &pipepb.PCollection{UniqueName: pid, CoderId: coder, WindowingStrategyId: ws, IsBounded: in.GetIsBounded()}
		comps.Pcollections[pid] = x
		return pid
	}
	keyed := pcoll("keyed", rename(t.keyed.GetCoderId()), wsID)
	grouped := pcoll("grouped", rename(t.grouped.GetCoderId()), wsID)
	out := pcoll("out", in.GetCoderId(), in.GetWindowingStrategyId())

	// The ParDos carry the broken PCollection's coder, with every coder it
	// is made of, to encode and decode its elements.
	coderPayloads := map[string][]byte{}
	for cid, cd := range pipelinex.TrimCoders(comps.GetCoders(), in.GetCoderId()) {
		if cd == nil {
			return "", "", fmt.Errorf("PCollection %q: coder %q is not defined", pc, cid)
		}
		coderPayloads[cid] = protox.MustEncode(cd)
	}
	part := func(src *pipepb.PTransform, suffix, input, output, env string) (string, error) {
		x := proto.Clone(src).(*pipepb.PTransform)
		x.UniqueName = name + "/" + suffix
		x.Inputs = map[string]string{"i0": input}
		x.Outputs = map[string]string{"i0": output}
		x.EnvironmentId = env
		if x.GetSpec().GetUrn() == graphx.URNParDo {
			var pl pipepb.ParDoPayload
			if err := proto.Unmarshal(x.GetSpec().GetPayload(), &pl); err != nil {
				return "", err
			}
			urn := pl.GetDoFn().GetUrn()
			pl.DoFn.Payload = []byte(protox.MustEncodeBase64(&v1pb.TransformPayload{
				Urn:       urn,
				Reshuffle: &v1pb.ReshufflePayload{CoderId: in.GetCoderId(), CoderPayloads: coderPayloads},
			}))
			x.Spec.Payload = protox.MustEncode(&pl)
		}
		xid := id + "_" + suffix
		comps.Transforms[xid] = x
		return xid, nil
	}
	var subs []string
	for _, s := range []struct {
		src                  *pipepb.PTransform
		suffix, in, out, env string
	}{
		{t.reify, "reify", pc, keyed, from},
		{t.gbk, "group", keyed, grouped, ""},
		{t.unreify, "unreify", grouped, out, to},
	} {
		xid, err := part(s.src, s.suffix, s.in, s.out, s.env)
		if err != nil {
			return "", "", fmt.Errorf("fusion break %s: %w", name, err)
		}
		subs = append(subs, xid)
	}
	comps.Transforms[id] = &pipepb.PTransform{
		UniqueName:    name,
		Spec:          &pipepb.FunctionSpec{Urn: graphx.URNReshuffle},
		Subtransforms: subs,
		Inputs:        map[string]string{"i0": pc},
		Outputs:       map[string]string{"i0": out},
		EnvironmentId: from,
	}
	return id, out, nil
}
