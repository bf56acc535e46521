package backend_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	ndvi = backend.Step{Name: "ndvi", GPUOp: "raster.ndvi", Hints: backend.Hints{Accelerator: "type:nvidia-tesla-t4;count:1;install-nvidia-driver", MinRAMBytes: 16e9}}
	read = backend.Step{Name: "read"}
	all  = []backend.Step{ndvi, read}
)

type gpuPresent struct{}

func (gpuPresent) Available() (bool, string) { return true, "" }

func TestParseKind(t *testing.T) {
	for in, want := range map[string]backend.Kind{"auto": backend.Auto, "CPU": backend.CPU, " gpu ": backend.GPU, "stub": backend.Stub} {
		k, err := backend.ParseKind(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, k)
	}
	_, err := backend.ParseKind("tpu")
	assert.EqualError(t, err, `backend "tpu": want one of auto, cpu, gpu, stub`)
}

func TestParseOverrides(t *testing.T) {
	m, err := backend.ParseOverrides("ndvi=stub, toa=cpu,")
	require.NoError(t, err)
	assert.Equal(t, map[string]backend.Kind{"ndvi": backend.Stub, "toa": backend.CPU}, m)
	assert.Equal(t, "ndvi=stub,toa=cpu", backend.FormatOverrides(m))

	_, err = backend.ParseOverrides("ndvi")
	assert.ErrorContains(t, err, `backend override "ndvi": want step=kind`)
	_, err = backend.ParseOverrides("ndvi=fast")
	assert.ErrorContains(t, err, `backend "fast"`)
}

func TestAutoWithoutExecutorPicksCPUAndSaysWhy(t *testing.T) {
	sel := backend.MustNew(backend.Config{Steps: all, Executor: backend.NoExecutor{Why: "no executor binary found"}})
	d, _ := sel.Resolve(ndvi)
	assert.Equal(t, backend.CPU, d.Impl)
	assert.Equal(t, "auto: no executor binary found", d.Reason)
	assert.True(t, d.Hints.IsZero(), "hints are carried only on the GPU")

	d, _ = sel.Resolve(read)
	assert.Equal(t, backend.CPU, d.Impl)
	assert.Equal(t, "auto: step has no GPU implementation", d.Reason)
}

func TestAutoWithExecutorPicksGPUWithHints(t *testing.T) {
	sel := backend.MustNew(backend.Config{Steps: all, Executor: gpuPresent{}})
	d, _ := sel.Resolve(ndvi)
	assert.Equal(t, backend.GPU, d.Impl)
	assert.Equal(t, ndvi.Hints, d.Hints)
	assert.Equal(t, backend.CPU, must(sel.Resolve(read)).Impl)
}

func TestGPUWithoutExecutorFailsAtConstruction(t *testing.T) {
	_, err := backend.New(backend.Config{Default: backend.GPU, Steps: all, Executor: backend.NoExecutor{Why: "no executor binary found"}})
	assert.EqualError(t, err, "backend gpu requested but no GPU can be had: no executor binary found (use --backend=auto to fall back to the CPU, or --backend=cpu)")

	_, err = backend.New(backend.Config{Default: backend.CPU, Overrides: map[string]backend.Kind{"ndvi": backend.GPU}, Steps: all})
	assert.ErrorContains(t, err, "backend gpu requested but no GPU can be had")
}

func TestGPUDefaultRunsStepsWithoutGPUOpOnCPU(t *testing.T) {
	sel := backend.MustNew(backend.Config{Default: backend.GPU, Steps: all, Executor: gpuPresent{}})
	d, _ := sel.Resolve(read)
	assert.Equal(t, backend.CPU, d.Impl)
	assert.Equal(t, "step has no GPU implementation; runs on the CPU", d.Reason)
	assert.Equal(t, backend.GPU, must(sel.Resolve(ndvi)).Impl)
}

func TestOverrides(t *testing.T) {
	sel := backend.MustNew(backend.Config{Default: backend.CPU, Overrides: map[string]backend.Kind{"ndvi": backend.Stub}, Steps: all})
	d, _ := sel.Resolve(ndvi)
	assert.Equal(t, backend.Stub, d.Impl)
	assert.Equal(t, "requested by --backend_override=ndvi=stub", d.Reason)
	d, _ = sel.Resolve(read)
	assert.Equal(t, backend.CPU, d.Impl)
	assert.Equal(t, "requested by --backend=cpu", d.Reason)

	_, err := backend.New(backend.Config{Overrides: map[string]backend.Kind{"nvdi": backend.Stub}, Steps: all})
	assert.EqualError(t, err, `backend override nvdi=stub: no step named "nvdi" in this pipeline (steps: ndvi, read)`)

	_, err = backend.New(backend.Config{Overrides: map[string]backend.Kind{"read": backend.GPU}, Steps: all, Executor: gpuPresent{}})
	assert.EqualError(t, err, `backend override read=gpu: step "read" has no GPU implementation`)
}

func TestReportTextAndJSON(t *testing.T) {
	sel := backend.MustNew(backend.Config{Default: backend.Stub, Steps: all})
	must(sel.Resolve(read))
	must(sel.Resolve(ndvi))
	must(sel.Resolve(ndvi)) // a step used twice is listed once

	r := sel.Report()
	require.Len(t, r.Decisions, 2)
	assert.Equal(t, backend.Stub, r.Impl("ndvi"))
	assert.Equal(t, backend.Kind(""), r.Impl("toa"))

	var text bytes.Buffer
	require.NoError(t, r.WriteText(&text))
	assert.Contains(t, text.String(), "explain (--backend=stub)")
	assert.Regexp(t, `ndvi\s+stub\s+raster.ndvi\s+-\s+requested by --backend=stub`, text.String())

	var js bytes.Buffer
	require.NoError(t, r.WriteJSON(&js))
	var back backend.Report
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, r, back)
}

func must(d backend.Decision, err error) backend.Decision {
	if err != nil {
		panic(err)
	}
	return d
}

// A pipeline knows its steps: resolving one it did not declare is an error
// that lists the declared ones.
func TestUndeclaredStepIsRefused(t *testing.T) {
	sel := backend.MustNew(backend.Config{Steps: all})
	_, err := sel.Resolve(backend.Step{Name: "knn", GPUOp: "tensor.knn"})
	assert.EqualError(t, err, `step "knn" is not one of this pipeline's steps (ndvi, read): add it to backend.Config.Steps`)
	assert.Equal(t, all, sel.Steps())
	free := backend.MustNew(backend.Config{})
	_, err = free.Resolve(backend.Step{Name: "knn"})
	assert.NoError(t, err, "without declared steps any step resolves")
}

// servesSome is an executor with a device that serves only some ops.
type servesSome map[string]bool

func (servesSome) Available() (bool, string) { return true, "" }
func (s servesSome) Serves(op string) (bool, string) {
	if s[op] {
		return true, ""
	}
	return false, "the GPU executor does not serve op " + op
}

// An op the executor does not serve runs on the CPU under auto (the other
// steps keep the GPU), and is refused at construction under gpu.
func TestAnOpTheExecutorDoesNotServe(t *testing.T) {
	toa := backend.Step{Name: "toa", GPUOp: "raster.toa"}
	ex := servesSome{"raster.ndvi": true}
	sel := backend.MustNew(backend.Config{Steps: []backend.Step{ndvi, toa}, Executor: ex})
	assert.Equal(t, backend.GPU, must(sel.Resolve(ndvi)).Impl)
	d := must(sel.Resolve(toa))
	assert.Equal(t, backend.CPU, d.Impl)
	assert.Equal(t, "auto: the GPU executor does not serve op raster.toa", d.Reason)
	_, err := backend.New(backend.Config{Default: backend.GPU, Steps: []backend.Step{ndvi, toa}, Executor: ex})
	assert.EqualError(t, err, `backend gpu requested for step "toa" but the GPU executor does not serve op raster.toa (use --backend=auto to run it on the CPU, or --backend_override=toa=cpu)`)
}

func TestHintsString(t *testing.T) {
	assert.Equal(t, "-", backend.Hints{}.String())
	assert.Equal(t, "accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver,min_ram=16000000000", ndvi.Hints.String())
}

func TestFlags(t *testing.T) {
	var f backend.Flags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.Register(fs)
	require.NoError(t, fs.Parse([]string{"--backend=cpu", "--backend_override=ndvi=stub"}))
	cfg, err := f.Config(all, nil)
	require.NoError(t, err)
	assert.Equal(t, backend.CPU, cfg.Default)
	assert.Equal(t, map[string]backend.Kind{"ndvi": backend.Stub}, cfg.Overrides)

	require.NoError(t, fs.Parse([]string{"--backend=fastest"}))
	_, err = f.Config(all, nil)
	assert.ErrorContains(t, err, "--backend: backend \"fastest\"")
}

// A step that a pipeline applies to several models gets one decision and
// one explain line per use. A use that cannot run on the GPU (operators
// without a GPU kernel) runs on the CPU under auto, saying why, and is an
// error under gpu: at New when the pipeline declared the use, else when it
// is resolved.
func TestUses(t *testing.T) {
	onnx := backend.Step{Name: "onnx", GPUOp: "onnx.run"}
	small, big := onnx, onnx
	small.Use = "small.onnx"
	big.Use, big.NoGPU = "big.onnx", "operators Conv, Relu of big.onnx have no GPU kernel"
	sel := backend.MustNew(backend.Config{Steps: []backend.Step{onnx}, Executor: gpuPresent{}})
	assert.Equal(t, backend.GPU, must(sel.Resolve(small)).Impl)
	d := must(sel.Resolve(big))
	assert.Equal(t, backend.CPU, d.Impl)
	assert.Equal(t, "auto: operators Conv, Relu of big.onnx have no GPU kernel", d.Reason)
	must(sel.Resolve(small)) // a use resolved twice is listed once
	r := sel.Report()
	require.Len(t, r.Decisions, 2)
	assert.Equal(t, "onnx[small.onnx]", r.Decisions[0].Label())
	assert.Equal(t, backend.CPU, r.Impl("onnx[big.onnx]"))
	var text bytes.Buffer
	require.NoError(t, r.WriteText(&text))
	assert.Regexp(t, `onnx\[big.onnx\]\s+cpu\s+onnx.run\s+-\s+auto: operators Conv, Relu`, text.String())

	noExecutor := backend.MustNew(backend.Config{Executor: backend.NoExecutor{Why: "no executor"}})
	assert.Equal(t, "auto: operators Conv, Relu of big.onnx have no GPU kernel", must(noExecutor.Resolve(big)).Reason,
		"the model's own reason comes first")

	gpu := backend.MustNew(backend.Config{Default: backend.GPU, Steps: []backend.Step{onnx}, Executor: gpuPresent{}})
	_, err := gpu.Resolve(big)
	assert.EqualError(t, err, `backend gpu requested for step "onnx[big.onnx]" but operators Conv, Relu of big.onnx have no GPU kernel (use --backend=auto to run it on the CPU, or --backend_override=onnx=cpu)`)
	assert.Equal(t, backend.GPU, must(gpu.Resolve(small)).Impl)
	_, err = backend.New(backend.Config{Default: backend.GPU, Steps: []backend.Step{small, big}, Executor: gpuPresent{}})
	assert.ErrorContains(t, err, `backend gpu requested for step "onnx[big.onnx]"`)
	stub := backend.MustNew(backend.Config{Default: backend.Stub, Steps: []backend.Step{small, big}, Executor: gpuPresent{}})
	assert.Equal(t, backend.Stub, must(stub.Resolve(big)).Impl)
}
