package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
)

// The devices of a server. An executor serves every device its process can
// see (the CUDA build: each GPU of CUDA_VISIBLE_DEVICES; the reference
// build: BEAMGPU_REFERENCE_DEVICES virtual ones), each with its own lanes
// (Config.MaxConcurrent batches at once), its own memory budget
// (Config.MemoryBudget) and its own side data, which ops keep per device
// (DeviceOf, FirstUse). A batch is placed on the least-loaded device that is
// still serving; a device whose op fails fatally (a sticky CUDA error) is
// taken out, its batch (and every batch then running or waiting on it) is
// run again on another device, and the executor goes on serving with the
// others. Only when the last device is taken out does the error end the
// executor, as it did with one device.

// device is one device's lanes, budget, health and counters.
type device struct {
	ordinal int
	name    string
	slots   chan struct{}
	mem     *weighted // nil: unlimited
	gone    chan struct{}

	// Guarded by Server.placeMu.
	load     int    // batches placed here and not finished (waiting or running)
	placed   uint64 // batches ever placed here
	dead     bool
	deadWhy  string
	running  int       // batches running (holding a lane)
	busyFrom time.Time // when running last went from 0 to 1
	busy     time.Duration

	batches, bytes, batchNS, failedBatches atomic.Uint64

	sidesMu sync.Mutex
	sides   map[string]bool
	fills   uint64
}

type deviceKey struct{}

// DeviceOf returns the ordinal of the device ctx's batch was placed on (0
// outside a server, and with one device). An op serving several devices
// runs the batch on this one (the CUDA executor's engine picks its device
// by it).
func DeviceOf(ctx context.Context) int {
	if d, ok := ctx.Value(deviceKey{}).(*device); ok {
		return d.ordinal
	}
	return 0
}

// FirstUse records that ctx's batch uses the side data called key (a
// model's weights, a kNN reference set) on its device, and reports whether
// it is the first batch on that device to do so: the one that uploads it to
// the device (the CUDA build's Resident fill). The server's device
// statistics count these first uses (SideFills). Outside a server it
// reports true.
func FirstUse(ctx context.Context, key string) bool {
	d, ok := ctx.Value(deviceKey{}).(*device)
	if !ok {
		return true
	}
	d.sidesMu.Lock()
	defer d.sidesMu.Unlock()
	if d.sides[key] {
		return false
	}
	if d.sides == nil {
		d.sides = map[string]bool{}
	}
	d.sides[key] = true
	d.fills++
	return true
}

// WithDevice returns ctx as an op sees it when its batch was placed on
// device ordinal, for running ops outside a server (selftest, tests).
func WithDevice(ctx context.Context, ordinal int) context.Context {
	return withDevice(ctx, &device{ordinal: ordinal})
}

func withDevice(ctx context.Context, d *device) context.Context {
	return context.WithValue(ctx, deviceKey{}, d)
}

// errNoDevice is the error of a batch when every device has been taken out.
var errNoDevice = errors.New("executor: every device has failed")

// place picks the device for a batch: the one serving with the fewest
// batches placed and unfinished, then the fewest placed ever (so that an
// even load spreads evenly), then the lowest ordinal. It counts the batch
// in the device's load; done must be called once the batch is finished
// there (or moved).
func (s *Server) place() (*device, error) {
	s.placeMu.Lock()
	defer s.placeMu.Unlock()
	var best *device
	for _, d := range s.devices {
		if d.dead {
			continue
		}
		if best == nil || d.load < best.load || d.load == best.load && d.placed < best.placed {
			best = d
		}
	}
	if best == nil {
		return nil, s.lastFatal
	}
	best.load++
	best.placed++
	return best, nil
}

// unplace ends a batch's placement on d.
func (s *Server) unplace(d *device) {
	s.placeMu.Lock()
	d.load--
	s.placeMu.Unlock()
}

// started and stopped account a device's busy time: the time at least one
// batch runs on it.
func (s *Server) started(d *device) {
	s.placeMu.Lock()
	if d.running == 0 {
		d.busyFrom = time.Now()
	}
	d.running++
	s.placeMu.Unlock()
}

func (s *Server) stopped(d *device) {
	s.placeMu.Lock()
	d.running--
	if d.running == 0 {
		d.busy += time.Since(d.busyFrom)
	}
	s.placeMu.Unlock()
}

// takeOut takes d out of service after err (a fatal error of one of its
// batches); it reports whether another device still serves.
func (s *Server) takeOut(d *device, err error) (others bool) {
	s.placeMu.Lock()
	defer s.placeMu.Unlock()
	for _, o := range s.devices {
		if o != d && !o.dead {
			others = true
		}
	}
	if d.dead {
		return others
	}
	d.dead = true
	d.deadWhy = err.Error()
	close(d.gone)
	// The error of a batch that finds no device left: it still matches
	// protocol.ErrFatal, so the executor exits as with one device.
	s.lastFatal = fmt.Errorf("%w; the last, device %d (%s): %w", errNoDevice, d.ordinal, d.name, err)
	if others {
		s.cfg.Logger.Error("executor: device taken out after a fatal error; the other devices go on serving", "device", d.ordinal, "name", d.name, "error", err)
	}
	return others
}

// Devices returns the devices' statistics, in ordinal order.
func (s *Server) Devices() []protocol.DeviceStats {
	s.placeMu.Lock()
	defer s.placeMu.Unlock()
	out := make([]protocol.DeviceStats, len(s.devices))
	for i, d := range s.devices {
		busy := d.busy
		if d.running > 0 {
			busy += time.Since(d.busyFrom)
		}
		d.sidesMu.Lock()
		fills := d.fills
		d.sidesMu.Unlock()
		out[i] = protocol.DeviceStats{
			Ordinal:       uint32(d.ordinal),
			Name:          d.name,
			Serving:       !d.dead,
			Failure:       d.deadWhy,
			Batches:       d.batches.Load(),
			Bytes:         d.bytes.Load(),
			BusyNS:        uint64(busy),
			BatchNS:       d.batchNS.Load(),
			SideFills:     fills,
			FailedBatches: d.failedBatches.Load(),
		}
	}
	return out
}

// acquireLane waits for a lane of d; it returns errMoved when d is taken
// out meanwhile (the batch is placed again).
func (d *device) acquireLane(ctx context.Context) error {
	select {
	case d.slots <- struct{}{}:
		return nil
	case <-d.gone:
		return errMoved
	case <-ctx.Done():
		return ctx.Err()
	}
}

var errMoved = errors.New("executor: device taken out while the batch waited")
