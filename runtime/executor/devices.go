package executor

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
)

// Environment variables of the reference (CPU) executor's virtual devices,
// with which CI tests what an executor does with several GPUs: placement,
// balance, per-device side data and the loss of a device.
const (
	// EnvReferenceDevices (N, 1 to protocol.MaxDevices) makes the reference
	// executor announce N virtual devices, each a queue of its own with its
	// own lanes (--max_concurrent) and memory budget (--memory_budget).
	EnvReferenceDevices = "BEAMGPU_REFERENCE_DEVICES"
	// EnvReferenceFailDevice ("k:m") makes virtual device k fail fatally
	// (as a GPU with a sticky error) in every batch after its m-th: the
	// executor takes it out and runs its batches on the others.
	EnvReferenceFailDevice = "BEAMGPU_REFERENCE_FAIL_DEVICE"
)

// VirtualDevices returns the descriptions of the reference build's devices:
// base alone, or with BEAMGPU_REFERENCE_DEVICES=N, N virtual devices named
// after it. A malformed N is an error naming the variable.
func VirtualDevices(base string) ([]string, error) {
	v, ok := os.LookupEnv(EnvReferenceDevices)
	if !ok || v == "" {
		return []string{base}, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > protocol.MaxDevices {
		return nil, fmt.Errorf("%s=%q: want a number of virtual devices from 1 to %d", EnvReferenceDevices, v, protocol.MaxDevices)
	}
	devs := make([]string, n)
	for i := range devs {
		devs[i] = fmt.Sprintf("%s, virtual device %d of %d", base, i, n)
	}
	return devs, nil
}

// failDevice parses EnvReferenceFailDevice: device k fails after m batches;
// ok is false when it is not set.
func failDevice(devices int) (k, m int, ok bool, err error) {
	v := os.Getenv(EnvReferenceFailDevice)
	if v == "" {
		return 0, 0, false, nil
	}
	a, b, found := strings.Cut(v, ":")
	k, err1 := strconv.Atoi(a)
	m, err2 := strconv.Atoi(b)
	if !found || err1 != nil || err2 != nil || k < 0 || m < 0 {
		return 0, 0, false, fmt.Errorf("%s=%q: want DEVICE:BATCHES, e.g. 1:3 (device 1 fails after 3 batches)", EnvReferenceFailDevice, v)
	}
	if k >= devices {
		return 0, 0, false, fmt.Errorf("%s=%q: there is no device %d (%d device(s); %s sets them)", EnvReferenceFailDevice, v, k, devices, EnvReferenceDevices)
	}
	return k, m, true, nil
}

// failingDevice counts the batches that start on a virtual device that is
// to fail; from its (m+1)-th on, every batch there fails fatally, as on a
// GPU whose context a sticky error broke.
type failingDevice struct {
	k, m int
	mu   sync.Mutex
	n    int
}

func (f *failingDevice) check(ctx context.Context, op string) error {
	if server.DeviceOf(ctx) != f.k {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.n > f.m {
		return fmt.Errorf("%w: virtual device %d failed after %d batch(es) (%s), in op %s", protocol.ErrFatal, f.k, f.m, EnvReferenceFailDevice, op)
	}
	return nil
}

type failingOp struct {
	server.Op
	f *failingDevice
}

func (o failingOp) Run(ctx context.Context, params []byte, in [][]byte, out server.Outputs) error {
	if err := o.f.check(ctx, o.Name()); err != nil {
		return err
	}
	return o.Op.Run(ctx, params, in, out)
}
