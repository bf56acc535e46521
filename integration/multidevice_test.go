package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/executortest"
	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
	"github.com/beamgpu/beamgpu/transforms/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withVirtualDevices runs the steps' GPU implementations on a new reference
// executor (this test binary) announcing n virtual devices, with env set
// ("K=V"); the shared executor is replaced before and after.
func withVirtualDevices(t *testing.T, n int, env ...string) *client.Client {
	t.Helper()
	if os.Getenv(client.EnvPath) != "" {
		t.Skip("virtual devices are the reference executor's; $BEAMGPU_EXECUTOR names another")
	}
	t.Setenv(executor.EnvReferenceDevices, fmt.Sprint(n))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	require.NoError(t, client.CloseShared())
	t.Cleanup(func() { client.CloseShared() })
	ok, why := step.UseExecutor(executortest.Use()).Available()
	require.True(t, ok, why)
	cl, err := client.Shared(executortest.Use())
	require.NoError(t, err)
	return cl
}

// knnBatches are n query batches against one reference set (side data).
func knnBatches(t *testing.T, n int) []tensor.KNNInput {
	var ins []tensor.KNNInput
	for i := range n {
		x, ok := tensor.StepKNN.RandomInput(uint64(i + 1))
		require.True(t, ok)
		in := x.(tensor.KNNInput)
		if i > 0 {
			in.Ref = ins[0].Ref // one reference set: the same side data
		}
		ins = append(ins, in)
	}
	return ins
}

// runAll runs every input through the GPU implementation from workers
// goroutines, checks each output against the CPU's, and returns the
// batches the client saw placed on each device.
func runAll(t *testing.T, ins []tensor.KNNInput, workers int) map[int]int {
	t.Helper()
	var mu sync.Mutex
	placed := map[int]int{}
	ctx := client.WithPlacement(context.Background(), func(p client.Placement) {
		mu.Lock()
		placed[p.Device]++
		mu.Unlock()
	})
	gpu, err := tensor.StepKNN.ImplContext(backend.GPU)
	require.NoError(t, err)
	work := make(chan tensor.KNNInput)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for in := range work {
				want, err := steptest.Apply(tensor.StepKNN, backend.CPU, in)
				if !assert.NoError(t, err) {
					continue
				}
				got, err := gpu(ctx, in)
				if assert.NoError(t, err) {
					assert.NoError(t, steptest.Equal(in, want, got, tensor.StepKNN.Tolerance()))
				}
			}
		}()
	}
	for _, in := range ins {
		work <- in
	}
	close(work)
	wg.Wait()
	return placed
}

// With BEAMGPU_REFERENCE_DEVICES=3 the reference executor announces three
// devices, each a queue of its own: an even load spreads over them (none
// over 1.5x the mean), the outputs are the CPU's, the side data (the kNN
// reference set) crosses to the executor once and is filled once on each
// device, and the executor's statistics count each batch once.
func TestVirtualDevicesPlaceBalanceAndFillOncePerDevice(t *testing.T) {
	cl := withVirtualDevices(t, 3)
	info, err := cl.Info(t.Context())
	require.NoError(t, err)
	require.Len(t, info.Devices, 3)
	assert.Contains(t, info.Devices[2], "virtual device 2 of 3")
	assert.True(t, strings.HasPrefix(info.Device, "3 devices: [0] cpu-reference"), info.Device)

	sent := tensor.StepKNN.SideStats().Sent
	const n = 60
	ins := knnBatches(t, n)
	// The first batch alone (it carries the reference set), then the rest
	// from six goroutines.
	placed := runAll(t, ins[:1], 1)
	for d, k := range runAll(t, ins[1:], 6) {
		placed[d] += k
	}
	mean := float64(n) / 3
	for d := range 3 {
		assert.Greater(t, placed[d], 0, "device %d: %v", d, placed)
		assert.LessOrEqual(t, float64(placed[d]), 1.5*mean, "device %d: %v", d, placed)
	}
	assert.Equal(t, 1, tensor.StepKNN.SideStats().Sent-sent, "the reference set crossed to the executor once")

	stats, err := cl.DeviceStats(t.Context())
	require.NoError(t, err)
	require.Len(t, stats, 3)
	total := 0
	for d, st := range stats {
		assert.True(t, st.Serving)
		assert.Equal(t, uint64(placed[d]), st.Batches, "device %d", d)
		assert.Equal(t, uint64(1), st.SideFills, "device %d: the reference set filled once", d)
		assert.Greater(t, st.Bytes, uint64(0))
		assert.Greater(t, st.BusyNS, uint64(0))
		total += int(st.Batches)
	}
	assert.Equal(t, n, total, "the counts reconcile")
	t.Logf("placed %v; stats %+v", placed, stats)
}

// With BEAMGPU_REFERENCE_FAIL_DEVICE=1:4, virtual device 1 fails fatally
// after 4 batches (as a GPU with a sticky error): it is taken out, its
// batches finish on the others, no batch is lost or run twice (the
// executor is never restarted, the client retries nothing), the outputs
// are the CPU's and the counts reconcile. The batches go in rounds until
// device 1 has failed: the least-loaded placement gives it about a third
// of a round, but a batch of its stalled by a busy machine (make test's
// packages in parallel) holds it out of most of one (seen: 2 of 45).
func TestVirtualDeviceLostMidRun(t *testing.T) {
	cl := withVirtualDevices(t, 3, executor.EnvReferenceFailDevice+"=1:4")
	const round = 45
	ins := knnBatches(t, round)
	placed := runAll(t, ins[:1], 1)
	n := 1
	var stats []protocol.DeviceStats
	for r := 0; r < 20 && (stats == nil || stats[1].Serving); r++ {
		for d, k := range runAll(t, ins[1:], 6) {
			placed[d] += k
		}
		n += round - 1
		var err error
		stats, err = cl.DeviceStats(t.Context())
		require.NoError(t, err)
		require.Len(t, stats, 3)
	}
	assert.False(t, stats[1].Serving, "device 1 taken out")
	assert.Contains(t, stats[1].Failure, "virtual device 1 failed after 4 batch(es)")
	assert.Equal(t, uint64(4), stats[1].Batches, "device 1 ran its 4 batches, then none")
	assert.GreaterOrEqual(t, stats[1].FailedBatches, uint64(1))
	assert.True(t, stats[0].Serving && stats[2].Serving)
	total := 0
	for d, st := range stats {
		assert.Equal(t, uint64(placed[d]), st.Batches, "device %d", d)
		total += int(st.Batches)
	}
	assert.Equal(t, n, total, "each batch ran once, on a serving device")
	assert.Equal(t, client.Stats{Starts: 1}, cl.Stats(), "one executor, no retry")
}

// selftest runs every op on every virtual device, one line naming each;
// bad values of the variables are clear errors.
func TestVirtualDevicesSelftestAndBadValues(t *testing.T) {
	if os.Getenv(client.EnvPath) != "" {
		t.Skip("virtual devices are the reference executor's")
	}
	exe := executortest.Use()
	run := func(args []string, env ...string) (string, int) {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	out, code := run([]string{"selftest"}, executor.EnvReferenceDevices+"=3")
	require.Equal(t, 0, code, out)
	for d := range 3 {
		assert.Contains(t, out, fmt.Sprintf("\ndevice %d: cpu-reference (test binary), virtual device %d of 3\n", d, d))
	}
	assert.Equal(t, 3, strings.Count(out, "ok    tensor.knn"), out)
	assert.Contains(t, out, "PASS (3 device(s))")

	out, code = run([]string{"selftest"}, executor.EnvReferenceDevices+"=0")
	assert.Equal(t, 4, code, out)
	assert.Contains(t, out, `FAIL: no usable device: BEAMGPU_REFERENCE_DEVICES="0": want a number of virtual devices from 1 to 1024`)

	out, code = run([]string{"serve", "--socket=" + t.TempDir() + "/x.sock"}, executor.EnvReferenceDevices+"=2", executor.EnvReferenceFailDevice+"=2:1")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, `BEAMGPU_REFERENCE_FAIL_DEVICE="2:1": there is no device 2 (2 device(s)`)
}

// On a GPU machine (make gpu-test: $BEAMGPU_EXECUTOR is the CUDA build),
// the executor serves every visible GPU and names each in selftest; with
// CUDA_VISIBLE_DEVICES empty, or naming a GPU that does not exist, it says
// "no device visible" (exit status 4), and a client's probe carries that
// reason, so that --backend=auto runs on the CPU. Skipped without a CUDA
// executor (not run on the development machine, which has no GPU).
func TestCUDAVisibleDevices(t *testing.T) {
	exe := os.Getenv(client.EnvPath)
	if exe == "" {
		t.Skip("needs the CUDA executor in $BEAMGPU_EXECUTOR (make gpu-test)")
	}
	run := func(visible *string, args ...string) (string, int) {
		cmd := exec.Command(exe, args...)
		cmd.Env = os.Environ()
		if visible != nil {
			cmd.Env = append(cmd.Env, "CUDA_VISIBLE_DEVICES="+*visible)
		}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	out, code := run(nil, "selftest")
	require.Equal(t, 0, code, out)
	n := strings.Count(out, "\ndevice ")
	require.Greater(t, n, 0, out)
	for d := range n {
		assert.Contains(t, out, fmt.Sprintf("\ndevice %d: GPU %d: ", d, d))
	}
	zero := "0"
	out, code = run(&zero, "selftest")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, 1, strings.Count(out, "\ndevice "), "CUDA_VISIBLE_DEVICES=0: one device")

	empty, missing := "", "99"
	for _, v := range []*string{&empty, &missing} {
		out, code = run(v, "selftest")
		assert.Equal(t, 4, code, out)
		assert.Contains(t, out, "no device visible", "CUDA_VISIBLE_DEVICES=%q", *v)

		t.Setenv("CUDA_VISIBLE_DEVICES", *v)
		c := client.New(client.Config{Path: exe})
		ok, why := c.Available()
		c.Close()
		assert.False(t, ok)
		assert.Contains(t, why, "no device visible", "the reason auto gives for the CPU")
	}
}
