package integration

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/executortest"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/require"
)

const smallShmEnv = "BEAMGPU_TEST_SMALL_SHM"

// The kNN path with a reference set larger than /dev/shm (Docker's default
// 64 MiB): the executor's shared memory does not live in /dev/shm, so the
// batch goes through and equals the CPU's, instead of the SIGBUS a 64 MiB
// /dev/shm used to cause. The test runs itself again in a mount namespace
// whose /dev/shm is a 64 MiB tmpfs (as root, as CI runs; elsewhere it says
// why it cannot).
func TestKNNWithASmallDevShm(t *testing.T) {
	if os.Getenv(smallShmEnv) == "" {
		if os.Getenv("BEAMGPU_EXECUTOR") != "" {
			t.Skip("needs the test executor, which runs in the test's namespace")
		}
		if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
			t.Skip("needs root and unshare(1) to give the test a 64 MiB /dev/shm")
		}
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
			`mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$0" -test.run '^TestKNNWithASmallDevShm$' -test.v`, os.Args[0])
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, executortest.EnvServe+"=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, smallShmEnv+"=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the test under a 64 MiB /dev/shm:\n%s", out)
		t.Logf("%s", out)
		return
	}
	var fs syscall.Statfs_t
	require.NoError(t, syscall.Statfs("/dev/shm", &fs))
	require.Equal(t, uint64(64<<20), fs.Blocks*uint64(fs.Bsize), "/dev/shm is 64 MiB here")

	r := rand.New(rand.NewPCG(64, 1))
	ref := tensor.Batch{Source: "ref", Rows: 24000, Cols: 784, X: make([]float32, 24000*784), Labels: make([]int32, 24000)}
	for i := range ref.X {
		ref.X[i] = r.Float32()
	}
	for i := range ref.Labels {
		ref.Labels[i] = int32(r.IntN(10))
	}
	reference, err := tensor.NewReference(ref, 10) // 75 MB: more than /dev/shm holds
	require.NoError(t, err)
	in := tensor.KNNInput{Query: ref.Slice(0, 64), Ref: reference, K: 5, Weights: tensor.WeightUniform}
	cpu, err := steptest.Apply(tensor.StepKNN, backend.CPU, in)
	require.NoError(t, err)
	gpu, err := steptest.Apply(tensor.StepKNN, backend.GPU, in)
	require.NoError(t, err)
	require.NoError(t, steptest.Equal(in, cpu, gpu, tensor.StepKNN.Tolerance()))
}
