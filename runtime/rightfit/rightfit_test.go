package rightfit

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/resource"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func identity(b []byte) []byte { return b }

func init() { register.Function1x1(identity) }

const (
	t4 = "type:nvidia-tesla-t4;count:1;install-nvidia-driver"
	l4 = "type:nvidia-l4;count:1;install-nvidia-driver"
)

// marshal builds a pipeline: cpu -> gpu{ first, inner{ second } } -> after,
// with 16 GB on gpu and an L4 with 8 GB on inner, and pipeline-wide hints
// envHints on the default environment.
func marshal(t *testing.T, envHints ...resource.Hint) *pipepb.Pipeline {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	in := beam.ParDo(s.Scope("cpu"), identity, beam.Impulse(s))
	gs := Scope(s, "gpu", resource.Accelerator(t4), resource.MinRAMBytes(16e9))
	x := beam.ParDo(gs.Scope("first"), identity, in)
	is := Scope(gs, "inner", resource.Accelerator(l4), resource.MinRAMBytes(8e9))
	x = beam.ParDo(is.Scope("second"), identity, x)
	beam.ParDo(s.Scope("after"), identity, x)
	edges, _, err := p.Build()
	require.NoError(t, err)
	env, err := graphx.CreateEnvironment(context.Background(), graphx.URNEnvDocker, func(context.Context) string { return "img" })
	require.NoError(t, err)
	mp, err := graphx.Marshal(edges, &graphx.Options{Environment: env, PipelineResourceHints: resource.NewHints(envHints...)})
	require.NoError(t, err)
	return mp
}

// leafEnvs maps each leaf transform's unique name to its environment.
func leafEnvs(p *pipepb.Pipeline) map[string]string {
	out := map[string]string{}
	for _, t := range p.GetComponents().GetTransforms() {
		if len(t.GetSubtransforms()) == 0 {
			out[t.GetUniqueName()] = t.GetEnvironmentId()
		}
	}
	return out
}

func TestApplyMovesHintedLeavesAndMergesNestedHints(t *testing.T) {
	p := marshal(t, resource.MinRAMBytes(4e9), resource.CPUCount(2))
	assert.Equal(t, []string{"gpu"}, Hinted(p))
	np, res, err := Apply(p, Options{})
	require.NoError(t, err)

	envs := leafEnvs(np)
	assert.Equal(t, "go", envs["cpu/rightfit.identity"])
	assert.Equal(t, "go", envs["after/rightfit.identity"])
	assert.Equal(t, "go-gpu", envs["gpu/first/rightfit.identity"])
	assert.Equal(t, "go-gpu-2", envs["gpu/inner/second/rightfit.identity"])

	require.Len(t, res.Environments, 2)
	outer, inner := res.Environments[0], res.Environments[1]
	assert.Equal(t, "go-gpu", outer.ID)
	assert.Equal(t, "go", outer.Base)
	// The pipeline-wide cpu_count stays; min_ram is the largest of the
	// environment's 4 GB and the composite's 16 GB.
	assert.Equal(t, map[string]string{"accelerator": t4, "min_ram": "16000000000", "cpu_count": "2"}, outer.Hints)
	assert.Equal(t, []string{"gpu/first/rightfit.identity"}, outer.Transforms)
	// Inner accelerator wins; the larger min_ram (outer 16 GB) wins.
	assert.Equal(t, map[string]string{"accelerator": l4, "min_ram": "16000000000", "cpu_count": "2"}, inner.Hints)
	assert.Equal(t, []string{"gpu"}, inner.Composites)

	got := np.GetComponents().GetEnvironments()
	require.Contains(t, got, "go-gpu")
	assert.Equal(t, []byte(t4), got["go-gpu"].GetResourceHints()[URNAccelerator])
	assert.Equal(t, []byte("4000000000"), got["go"].GetResourceHints()[URNMinRAM], "the default environment keeps its own hints")
	assert.Same(t, got["go"].GetDependencies()[0], got["go-gpu"].GetDependencies()[0], "clones share the worker artifact")

	// No hint annotation is left.
	for _, tr := range np.GetComponents().GetTransforms() {
		for k := range tr.GetAnnotations() {
			assert.False(t, strings.HasPrefix(k, AnnotationPrefix), "%s keeps %s", tr.GetUniqueName(), k)
		}
	}
}

func TestApplyInsertsAFusionBreakBeforeEachHintedStage(t *testing.T) {
	np, res, err := Apply(marshal(t), Options{})
	require.NoError(t, err)
	// cpu (go) -> first (go-gpu) and first (go-gpu) -> second (go-gpu-2)
	// cross environments; second -> after does not enter a hinted one.
	require.Len(t, res.FusionBreaks, 2)
	ts := np.GetComponents().GetTransforms()
	byName := map[string]*pipepb.PTransform{}
	for _, tr := range ts {
		byName[tr.GetUniqueName()] = tr
	}
	for _, b := range res.FusionBreaks {
		r := byName[b.Name]
		require.NotNil(t, r, b.Name)
		assert.Equal(t, graphx.URNReshuffle, r.GetSpec().GetUrn())
		require.Len(t, r.GetSubtransforms(), 3)
		assert.Equal(t, graphx.URNGBK, ts[r.GetSubtransforms()[1]].GetSpec().GetUrn())
		assert.Equal(t, b.Environment, ts[r.GetSubtransforms()[2]].GetEnvironmentId(), "the decoding half runs with the hinted stage")
	}
	first := byName["gpu/first/rightfit.identity"]
	out := first.GetInputs()
	require.Len(t, out, 1)
	for _, pc := range out {
		assert.True(t, strings.HasPrefix(pc, templatePrefix), "gpu/first reads the fusion break's output, not %s", pc)
	}
	assert.Contains(t, byName, "fusion_break_1_before_gpu")
}

func TestApplyAcceleratorOverride(t *testing.T) {
	_, res, err := Apply(marshal(t), Options{Accelerator: "type:nvidia-tesla-v100;count:2;install-nvidia-driver"})
	require.NoError(t, err)
	require.Len(t, res.Environments, 1, "with one accelerator both composites share one environment")
	assert.Equal(t, "type:nvidia-tesla-v100;count:2;install-nvidia-driver", res.Environments[0].Hints["accelerator"])
	assert.Equal(t, []string{"gpu/first/rightfit.identity", "gpu/inner/second/rightfit.identity"}, res.Environments[0].Transforms)
}

func TestStripLeavesEverythingInPlace(t *testing.T) {
	p := marshal(t)
	before := leafEnvs(p)
	Strip(p)
	assert.Empty(t, Hinted(p))
	assert.Equal(t, before, leafEnvs(p))
	assert.Len(t, p.GetComponents().GetEnvironments(), 1)
}

func TestApplyWithoutHintsChangesNothing(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo(s, identity, beam.Impulse(s))
	edges, _, err := p.Build()
	require.NoError(t, err)
	env, err := graphx.CreateEnvironment(context.Background(), graphx.URNEnvDocker, func(context.Context) string { return "img" })
	require.NoError(t, err)
	mp, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	require.NoError(t, err)
	np, res, err := Apply(mp, Options{})
	require.NoError(t, err)
	assert.Empty(t, res.Environments)
	assert.Empty(t, res.FusionBreaks)
	assert.Len(t, np.GetComponents().GetEnvironments(), 1)
}

func TestBadHintIsAnErrorNamingTheTransform(t *testing.T) {
	p := marshal(t)
	for _, tr := range p.GetComponents().GetTransforms() {
		if tr.GetUniqueName() == "gpu" {
			tr.Annotations[AnnotationPrefix+URNMinRAM] = []byte("lots")
		}
	}
	_, _, err := Apply(p, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `transform "gpu"`)
	assert.Contains(t, err.Error(), "not a byte count")
}

func ExampleScope() {
	p, s := beam.NewPipelineWithRoot()
	in := beam.ParDo(s.Scope("prepare"), identity, beam.Impulse(s))
	gpu := Scope(s, "infer", resource.Accelerator("type:nvidia-l4;count:1;install-nvidia-driver"), resource.MinRAMBytes(16e9))
	beam.ParDo(gpu, identity, in)

	edges, _, _ := p.Build()
	env, _ := graphx.CreateEnvironment(context.Background(), graphx.URNEnvDocker, func(context.Context) string { return "image" })
	model, _ := graphx.Marshal(edges, &graphx.Options{Environment: env})
	_, res, err := Apply(model, Options{})
	if err != nil {
		panic(err)
	}
	for _, e := range res.Environments {
		fmt.Println(e.ID, e.Hints["accelerator"], e.Hints["min_ram"], e.Transforms)
	}
	for _, b := range res.FusionBreaks {
		fmt.Println(b.Name)
	}
	// Output:
	// go-gpu type:nvidia-l4;count:1;install-nvidia-driver 16000000000 [infer/rightfit.identity]
	// fusion_break_1_before_infer
}
