package integration

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/executortest"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/beamgpu/beamgpu/transforms/raster"
)

// executorPath is the executor the tests use: $BEAMGPU_EXECUTOR if set (a
// CUDA build on a GPU machine), else this test binary as the reference
// executor.
var executorPath string

// slowChecks are the checks that build and run far more than the others
// (cold builds of other settings, other modules, worker processes): make
// test leaves them out, make test-slow (CI too) runs them with -slow.
var slowChecks = flag.Bool("slow", false, "also run the slow checks (make test-slow): the example module as documented, the rehearsals")

// slowCheck skips t unless -slow.
func slowCheck(t *testing.T) {
	t.Helper()
	if !*slowChecks {
		t.Skip("a slow check: make test-slow runs it (go test ./integration/ -slow)")
	}
}

func TestMain(m *testing.M) {
	steptest.MaybeServe()
	if p := os.Getenv(client.EnvPath); p != "" {
		executorPath = p
		step.UseExecutor(p)
	} else {
		steptest.UseExecutor()
		executorPath = executortest.Use()
	}
	code := m.Run()
	client.CloseShared()
	removeRehearsalLayout()
	os.Exit(code)
}

// seeds is how many fresh random inputs each step is checked on.
const seeds = 8

// Every step with a GPU op computes, through the executor, what its CPU
// implementation computes: on its sample (real data where the step reads
// it: the Landsat crop) and on fresh random inputs, within the step's stated
// tolerance. The executor poisons its outputs, so a part left unwritten
// shows up as NaN or 0xFF.
func TestEveryGPUStepMatchesItsCPUImplementation(t *testing.T) {
	ok, why := step.UseExecutor(executorPath).Available()
	require.True(t, ok, why)
	cl, err := client.Shared(executorPath)
	require.NoError(t, err)
	info, err := cl.Info(t.Context())
	require.NoError(t, err)
	require.NotEqual(t, os.Getpid(), info.PID, "the executor is another process")
	t.Logf("executor pid %d, device %q, ops %v", info.PID, info.Device, info.Ops)
	for _, s := range step.All() {
		op := s.Backend().GPUOp
		if op == "" {
			continue
		}
		t.Run(s.Name(), func(t *testing.T) {
			require.Contains(t, info.Ops, op, "the executor serves the step's GPU op")
			inputs := []any{s.SampleInput()}
			for seed := uint64(1); seed <= seeds; seed++ {
				if in, ok := s.RandomInput(seed); ok {
					inputs = append(inputs, in)
				}
			}
			for i, in := range inputs {
				cpu, err := steptest.Apply(s, backend.CPU, in)
				require.NoError(t, err, "input %d", i)
				gpu, err := steptest.Apply(s, backend.GPU, in)
				require.NoError(t, err, "input %d", i)
				require.NoError(t, steptest.Equal(in, cpu, gpu, s.Tolerance()), "input %d", i)
			}
		})
	}
	st := cl.Stats()
	t.Logf("client stats: %+v", st)
	assert.Equal(t, 1, st.Starts)
}

// The real data: the shipped MLP and kNN on a slice of the Fashion-MNIST
// test set give the same predictions through the executor.
func TestRealDataThroughTheExecutor(t *testing.T) {
	x, err := tensor.ReadDataset(tensor.SampleImagesPath(), tensor.SampleLabelsPath())
	require.NoError(t, err)
	x, err = tensor.Scaler{Mode: tensor.ScaleUnit}.Apply(x.Slice(0, 500))
	require.NoError(t, err)
	m, err := tensor.LoadMLP("../pipelines/fashion/data/mlp-784-256-128-10.bgmlp")
	require.NoError(t, err)
	ref, err := tensor.NewReference(x.Slice(100, 500), 10)
	require.NoError(t, err)
	for s, in := range map[step.Any]any{
		tensor.StepMLP: tensor.MLPInput{Batch: x, Model: m},
		tensor.StepKNN: tensor.KNNInput{Query: x.Slice(0, 100), Ref: ref, K: 5, Weights: tensor.WeightUniform},
	} {
		cpu, err := steptest.Apply(s, backend.CPU, in)
		require.NoError(t, err, s.Name())
		gpu, err := steptest.Apply(s, backend.GPU, in)
		require.NoError(t, err, s.Name())
		require.NoError(t, steptest.Equal(in, cpu, gpu, s.Tolerance()), s.Name())
	}
}

// An error in the op (a batch the step rejects) comes back as the step's
// error, naming the batch, as on the CPU.
func TestOpErrorsComeBack(t *testing.T) {
	bad := tensor.DenseInput{Batch: tensor.Batch{Source: "f", Offset: 3, Rows: 1, Cols: 3, X: make([]float32, 3)},
		Layer: tensor.Dense{In: 4, Out: 2, W: make([]float32, 8), B: make([]float32, 2)}}
	_, cpuErr := steptest.Apply(tensor.StepDense, backend.CPU, bad)
	require.Error(t, cpuErr)
	_, gpuErr := steptest.Apply(tensor.StepDense, backend.GPU, bad)
	require.Error(t, gpuErr)
	assert.Contains(t, gpuErr.Error(), "f[3:4]")
}

// A NaN or an infinity in a batch that the step refuses (MLP, kNN and
// softmax check their inputs; the CUDA launches on the device, after the
// upload) comes back as the CPU's error, naming the same row and column,
// wherever in the batch it is.
func TestNonFiniteInputsComeBackAsTheCPUError(t *testing.T) {
	mlp := tensor.StepMLP.SampleInput().(tensor.MLPInput)
	knn := tensor.StepKNN.SampleInput().(tensor.KNNInput)
	soft := tensor.StepSoftmax.SampleInput().(tensor.Batch)
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		for _, where := range []string{"first", "middle", "last"} {
			at := func(n int) int {
				return map[string]int{"first": 0, "middle": n / 2, "last": n - 1}[where]
			}
			poison := func(b tensor.Batch) tensor.Batch {
				b.X = append([]float32(nil), b.X...)
				b.X[at(len(b.X))] = bad
				return b
			}
			name := fmt.Sprintf("%v at the %s value", bad, where)
			m := mlp
			m.Batch = poison(m.Batch)
			checkSameError(t, tensor.StepMLP, m, name)
			k := knn
			k.Query = poison(k.Query)
			checkSameError(t, tensor.StepKNN, k, name)
			checkSameError(t, tensor.StepSoftmax, poison(soft), name)
		}
	}
}

// checkSameError applies s to in on the CPU and through the executor and
// requires the same error of both.
func checkSameError[In, Out any](t *testing.T, s *step.Step[In, Out], in In, name string) {
	t.Helper()
	_, cpuErr := steptest.Apply(s, backend.CPU, in)
	require.Error(t, cpuErr, "%s: %s on the CPU", s.Name(), name)
	_, gpuErr := steptest.Apply(s, backend.GPU, in)
	require.Error(t, gpuErr, "%s: %s through the executor", s.Name(), name)
	assert.Contains(t, gpuErr.Error(), cpuErr.Error(), "%s: %s", s.Name(), name)
}

// A batch larger than the executor's memory budget is split until the
// halves fit, and the merged result is the CPU's.
func TestOutOfMemorySplitsTheBatch(t *testing.T) {
	if os.Getenv(client.EnvPath) != "" {
		t.Skip("needs the test executor, whose memory budget the test sets")
	}
	require.NoError(t, client.CloseShared())
	executortest.MemoryBudget(64 << 10) // 64 KiB: a 100x100 tile of 4 bands is 80 KB in, 160 KB out
	defer func() {
		executortest.MemoryBudget(0)
		client.CloseShared()
	}()
	big := bigTile()
	cpu, err := steptest.Apply(raster.StepTOA, backend.CPU, big)
	require.NoError(t, err)
	gpu, err := steptest.Apply(raster.StepTOA, backend.GPU, big)
	require.NoError(t, err)
	require.NoError(t, steptest.Equal(big, cpu, gpu, raster.StepTOA.Tolerance()))

	x, err := tensor.ReadDataset(tensor.SampleImagesPath(), tensor.SampleLabelsPath())
	require.NoError(t, err)
	m, err := tensor.LoadMLP("../pipelines/fashion/data/mlp-784-256-128-10.bgmlp")
	require.NoError(t, err)
	mlp := tensor.MLPInput{Batch: x.Slice(0, 200), Model: m} // 627 KB of pixels
	cpuP, err := steptest.Apply(tensor.StepMLP, backend.CPU, mlp)
	require.NoError(t, err)
	executortest.MemoryBudget(2 << 20) // the model (940 KB) fits, 200 rows with it do not
	require.NoError(t, client.CloseShared())
	gpuP, err := steptest.Apply(tensor.StepMLP, backend.GPU, mlp)
	require.NoError(t, err)
	require.NoError(t, steptest.Equal(mlp, cpuP, gpuP, tensor.StepMLP.Tolerance()))
}

// bigTile is a 100x100 tile of four bands of the committed scene's DNs.
func bigTile() raster.DNTile {
	t := raster.DNTile{Scene: "big", SceneW: 100, SceneH: 100, Rect: raster.Rect{W: 100, H: 100}, SunElevation: 58.99675180}
	for _, b := range raster.DefaultBands {
		t.Cal = append(t.Cal, raster.Calibration{Band: b, Mult: 2e-5, Add: -0.1})
		p := make([]uint16, 100*100)
		for i := range p {
			p[i] = uint16(6000 + (i*b)%20000)
		}
		t.DN = append(t.DN, p)
	}
	return t
}

// A batch whose shared memory cannot be had (here: over the arena limit) is
// split until it fits, and gives the CPU's answer; one that cannot be split
// small enough (a reference set over the limit) fails as the GPU being
// unavailable, so that --backend=auto runs it on the CPU.
func TestNoArenaSplitsOrFallsBack(t *testing.T) {
	if os.Getenv(client.EnvPath) != "" {
		t.Skip("needs the test executor, whose client the test configures")
	}
	require.NoError(t, client.CloseShared())
	t.Setenv(client.EnvMaxArena, "4194304") // 4 MiB per connection
	defer client.CloseShared()
	x, err := tensor.ReadDataset(tensor.SampleImagesPath(), tensor.SampleLabelsPath())
	require.NoError(t, err)
	x, err = tensor.Scaler{Mode: tensor.ScaleUnit}.Apply(x.Slice(0, 1200))
	require.NoError(t, err)
	m, err := tensor.LoadMLP("../pipelines/fashion/data/mlp-784-256-128-10.bgmlp") // 940 KB: fits
	require.NoError(t, err)
	mlp := tensor.MLPInput{Batch: x.Slice(0, 1200), Model: m} // 3.8 MB of pixels, and room for as much output: does not
	cpu, err := steptest.Apply(tensor.StepMLP, backend.CPU, mlp)
	require.NoError(t, err)
	gpu, err := steptest.Apply(tensor.StepMLP, backend.GPU, mlp)
	require.NoError(t, err)
	require.NoError(t, steptest.Equal(mlp, cpu, gpu, tensor.StepMLP.Tolerance()))

	big, err := tensor.Concat([]tensor.Batch{x, x})
	require.NoError(t, err)
	ref, err := tensor.NewReference(big, 10) // 7.5 MB of side data: never fits
	require.NoError(t, err)
	_, err = steptest.Apply(tensor.StepKNN, backend.GPU, tensor.KNNInput{Query: x.Slice(0, 4), Ref: ref, K: 3, Weights: tensor.WeightUniform})
	require.ErrorIs(t, err, step.ErrGPUUnavailable)
	assert.ErrorIs(t, err, client.ErrNoArena)
	assert.Contains(t, err.Error(), "arena limit")
}

// kNN on large random 784-dimensional inputs (as Fashion-MNIST's pixels, in
// [0, 1)): the GPU implementation may differ from the CPU's only at near ties
// of the k-th and (k+1)-th distances (tensor.KNNNearTie), with both vote
// weightings. Against a CUDA executor this is where the matrix product's
// different summation order shows.
func TestKNNOnLargeRandomInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(784, 1))
	random := func(name string, rows int) tensor.Batch {
		b := tensor.Batch{Source: name, Rows: rows, Cols: 784, X: make([]float32, rows*784), Labels: make([]int32, rows)}
		for i := range b.X {
			b.X[i] = r.Float32()
		}
		for i := range b.Labels {
			b.Labels[i] = int32(r.IntN(10))
		}
		return b
	}
	ref, err := tensor.NewReference(random("reference", 6000), 10)
	require.NoError(t, err)
	q := random("queries", 500)
	for _, w := range []string{tensor.WeightUniform, tensor.WeightDistance} {
		in := tensor.KNNInput{Query: q, Ref: ref, K: 5, Weights: w}
		cpu, err := steptest.Apply(tensor.StepKNN, backend.CPU, in)
		require.NoError(t, err)
		gpu, err := steptest.Apply(tensor.StepKNN, backend.GPU, in)
		require.NoError(t, err)
		require.NoError(t, steptest.Equal(in, cpu, gpu, tensor.StepKNN.Tolerance()), w)
	}
}
