package server_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func deviceNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("dev%d", i)
	}
	return names
}

// whereOp answers the ordinal of the device its batch was placed on (one
// uint32), after sleeping the milliseconds of its first param byte; on the
// devices in fail (sticky) it fails fatally, as a GPU with a broken context.
type whereOp struct {
	fail map[int]bool
	ran  sync.Map // request number (first input) -> runs that succeeded
}

func (o *whereOp) Name() string { return "where" }
func (o *whereOp) Run(ctx context.Context, params []byte, in [][]byte, out server.Outputs) error {
	d := server.DeviceOf(ctx)
	if len(params) > 0 {
		time.Sleep(time.Duration(params[0]) * time.Millisecond)
	}
	if o.fail[d] {
		return fmt.Errorf("%w: device %d is broken", protocol.ErrFatal, d)
	}
	if len(in) > 0 {
		n, _ := o.ran.LoadOrStore(string(in[0]), new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
	}
	b, err := out(4)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(b[0], uint32(d))
	return nil
}

// callMany makes n calls of op from workers goroutines and returns how many
// ran on each device, by the answers and by the placements the client saw.
func callMany(t *testing.T, cl *client.Client, n, workers int, params []byte) (byAnswer, byPlacement map[int]int, bytes map[int]int64) {
	t.Helper()
	var mu sync.Mutex
	byAnswer, byPlacement, bytes = map[int]int{}, map[int]int{}, map[int]int64{}
	ctx := client.WithPlacement(context.Background(), func(p client.Placement) {
		mu.Lock()
		byPlacement[p.Device]++
		bytes[p.Device] += p.Bytes
		mu.Unlock()
	})
	next := atomic.Int32{}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				out, err := cl.Call(ctx, "where", params, [][]byte{[]byte(fmt.Sprint(i))})
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				byAnswer[int(binary.LittleEndian.Uint32(out[0]))]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return byAnswer, byPlacement, bytes
}

// assertBalanced holds that no device got more than 1.5 times the mean.
func assertBalanced(t *testing.T, counts map[int]int, devices, total int) {
	t.Helper()
	mean := float64(total) / float64(devices)
	for d := range devices {
		assert.Greater(t, counts[d], 0, "device %d got no batch: %v", d, counts)
		assert.LessOrEqual(t, float64(counts[d]), 1.5*mean, "device %d got %d batches, over 1.5x the mean %.1f: %v", d, counts[d], mean, counts)
	}
}

// A server of four devices announces them, places an even load evenly
// (sequential calls and concurrent ones), and its statistics count every
// batch once, on the device the answers name.
func TestDevicesPlacementAndBalance(t *testing.T) {
	op := &whereOp{}
	r := start(t, server.Config{Device: "", Devices: deviceNames(4), MaxConcurrent: 1, Ops: []server.Op{op}})
	info, err := r.cl.Info(context.Background())
	require.NoError(t, err)
	assert.Equal(t, deviceNames(4), info.Devices)
	assert.Equal(t, "4 devices: [0] dev0; [1] dev1; [2] dev2; [3] dev3", info.Device)

	// One caller at a time: each device in turn.
	seq, placed, seqBytes := callMany(t, r.cl, 40, 1, nil)
	assert.Equal(t, map[int]int{0: 10, 1: 10, 2: 10, 3: 10}, seq)
	assert.Equal(t, seq, placed, "the client's placements agree with the answers")

	// Eight callers, batches of 3 ms: the least-loaded device takes each.
	conc, placed, concBytes := callMany(t, r.cl, 120, 8, []byte{3})
	assert.Equal(t, conc, placed)
	assertBalanced(t, conc, 4, 120)

	stats := r.srv.Devices()
	require.Len(t, stats, 4)
	total := uint64(0)
	for i, st := range stats {
		assert.Equal(t, uint32(i), st.Ordinal)
		assert.Equal(t, fmt.Sprintf("dev%d", i), st.Name)
		assert.True(t, st.Serving)
		assert.Equal(t, uint64(seq[i]+conc[i]), st.Batches, "device %d", i)
		assert.Equal(t, uint64(seqBytes[i]+concBytes[i]), st.Bytes, "device %d: inputs and outputs", i)
		assert.Greater(t, st.BusyNS, uint64(0))
		assert.GreaterOrEqual(t, st.BatchNS, st.BusyNS-st.BusyNS/100, "batch time sums at least the busy time")
		total += st.Batches
	}
	assert.Equal(t, uint64(160), total, "every batch counted once")

	// The Stats message says the same.
	got, err := r.cl.DeviceStats(context.Background())
	require.NoError(t, err)
	require.Len(t, got, 4)
	for i := range got {
		assert.Equal(t, stats[i].Batches, got[i].Batches)
	}
}

// A device whose batches fail fatally is taken out; its batches run on the
// others, each exactly once; the server keeps serving; the statistics say
// which device failed and why.
func TestFailedDeviceIsTakenOutAndItsBatchesRunElsewhere(t *testing.T) {
	op := &whereOp{fail: map[int]bool{1: true}}
	r := start(t, server.Config{Devices: deviceNames(3), MaxConcurrent: 2, Ops: []server.Op{op}})
	byAnswer, _, _ := callMany(t, r.cl, 60, 6, []byte{1})
	assert.Zero(t, byAnswer[1], "no answer comes from the failed device")
	assert.Equal(t, 60, byAnswer[0]+byAnswer[2])
	op.ran.Range(func(k, v any) bool {
		assert.Equal(t, int32(1), v.(*atomic.Int32).Load(), "request %s ran once", k)
		return true
	})
	n := 0
	op.ran.Range(func(any, any) bool { n++; return true })
	assert.Equal(t, 60, n, "every request ran")

	stats := r.srv.Devices()
	assert.False(t, stats[1].Serving)
	assert.Contains(t, stats[1].Failure, "device 1 is broken")
	assert.GreaterOrEqual(t, stats[1].FailedBatches, uint64(1))
	assert.Zero(t, stats[1].Batches)
	assert.True(t, stats[0].Serving && stats[2].Serving)
	assert.Equal(t, uint64(60), stats[0].Batches+stats[2].Batches, "the counts reconcile")
	assert.Zero(t, r.cl.Stats().Retries, "the client retried nothing: the server moved the batches")
	select {
	case err := <-r.served:
		t.Fatalf("Serve returned with devices left: %v", err)
	default:
	}
}

// When the last device fails, the executor fails as with one: the fatal
// status, and Serve returns the error.
func TestLastDeviceFailingStopsTheServer(t *testing.T) {
	op := &whereOp{fail: map[int]bool{0: true, 1: true}}
	r := start(t, server.Config{Devices: deviceNames(2), Ops: []server.Op{op}})
	_, err := r.cl.Call(context.Background(), "where", nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `op "where": fatal: executor: fatal error, the device context is unusable: device 1 is broken`)
	select {
	case err := <-r.served:
		assert.ErrorIs(t, err, protocol.ErrFatal)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its last device failed")
	}
}

// Side data is filled once per device: the first batch that uses it on a
// device, whichever device that is.
func TestSideDataIsFilledOncePerDevice(t *testing.T) {
	var fills [3]atomic.Int32
	op := server.Func("side", func(ctx context.Context, _ []byte, _ [][]byte, _ server.Outputs) error {
		if server.FirstUse(ctx, "model") {
			fills[server.DeviceOf(ctx)].Add(1)
		}
		time.Sleep(time.Millisecond)
		return nil
	})
	r := start(t, server.Config{Devices: deviceNames(3), Ops: []server.Op{op}})
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				_, err := r.cl.Call(context.Background(), "side", nil, nil)
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	for i, st := range r.srv.Devices() {
		assert.Equal(t, int32(1), fills[i].Load(), "device %d", i)
		assert.Equal(t, uint64(1), st.SideFills, "device %d", i)
	}
	assert.True(t, server.FirstUse(context.Background(), "model"), "outside a server every use is a first")
}

// --max_concurrent and --memory_budget hold per device: two devices run
// twice the batches at once, and each holds its own budget.
func TestLanesAndBudgetArePerDevice(t *testing.T) {
	g := &gauge{}
	r := start(t, server.Config{Devices: deviceNames(2), MaxConcurrent: 2, MemoryBudget: 1 << 20, Ops: []server.Op{g}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				// 600 KiB in: one batch fills a device's budget.
				_, err := r.cl.Call(context.Background(), "gauge", nil, [][]byte{make([]byte, 600<<10)})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(2), g.peak.Load(), "one batch of 600 KiB at a time on each device's 1 MiB budget: two at once")
	info, err := r.cl.Info(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint32(2), info.Limits.MaxConcurrent, "the limits are per device")

	g2 := &gauge{}
	r2 := start(t, server.Config{Devices: deviceNames(2), MaxConcurrent: 2, Ops: []server.Op{g2}})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				_, err := r2.cl.Call(context.Background(), "gauge", nil, nil)
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(4), g2.peak.Load(), "2 lanes on each of 2 devices")
}

// Devices left out (serve --devices) get no batch and are reported as not
// serving; leaving every device out is an error.
func TestLeftOutDevicesGetNoBatch(t *testing.T) {
	r := start(t, server.Config{Devices: deviceNames(3), LeftOut: []int{0, 2}, Ops: []server.Op{&whereOp{}}})
	byAnswer, _, _ := callMany(t, r.cl, 12, 3, nil)
	assert.Equal(t, map[int]int{1: 12}, byAnswer)
	st := r.srv.Devices()
	assert.False(t, st[0].Serving)
	assert.Equal(t, "left out (--devices)", st[0].Failure)
	assert.True(t, st[1].Serving)

	_, err := server.New(server.Config{Devices: deviceNames(2), LeftOut: []int{0, 1}})
	assert.ErrorContains(t, err, "every device is left out")
	_, err = server.New(server.Config{Devices: deviceNames(2), LeftOut: []int{2}})
	assert.ErrorContains(t, err, "device 2 left out: there are 2")
}
