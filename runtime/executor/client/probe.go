package client

import (
	"context"
	"fmt"
	"sync"

	"github.com/beamgpu/beamgpu/runtime/backend"
)

// Available implements backend.Executor: the executor starts, and its
// handshake reports a device. It starts the executor (once; it then serves
// the calls).
func (c *Client) Available() (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StartTimeout)
	defer cancel()
	info, err := c.Info(ctx)
	if err != nil {
		return false, err.Error()
	}
	if info.Device == "" {
		if info.NoDevice != "" {
			return false, fmt.Sprintf("GPU executor %s reports no usable device: %s", info.Path, info.NoDevice)
		}
		return false, fmt.Sprintf("GPU executor %s reports no usable device", info.Path)
	}
	return true, fmt.Sprintf("GPU executor %s: %s", info.Path, info.Device)
}

var _ backend.Executor = (*Client)(nil)

// Prober is the backend.Executor of Probe.
type Prober struct {
	explicit string
	once     sync.Once
	ok       bool
	why      string
	ops      map[string]bool
	path     string
}

var (
	_ backend.Executor = (*Prober)(nil)
	_ backend.OpServer = (*Prober)(nil)
)

// Probe returns the backend.Executor for the executor Find(explicit) finds
// (explicit being the --gpu_executor value, possibly empty). Available
// answers once and remembers: whether the binary is there and its handshake
// reports a device, or why not, e.g. "GPU executor: not available: --gpu_executor not
// set, $BEAMGPU_EXECUTOR not set, /opt/beamgpu/bin/beamgpu-executor not
// found". The executor it starts is the Shared one, kept for the calls.
func Probe(explicit string) *Prober { return &Prober{explicit: explicit} }

// Available implements backend.Executor.
func (p *Prober) Available() (bool, string) {
	p.once.Do(func() {
		c, err := Shared(p.explicit)
		if err != nil {
			p.why = err.Error()
			return
		}
		p.ok, p.why = c.Available()
		if !p.ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StartTimeout)
		defer cancel()
		if info, err := c.Info(ctx); err == nil {
			p.path = info.Path
			p.ops = map[string]bool{}
			for _, op := range info.Ops {
				p.ops[op] = true
			}
		}
	})
	return p.ok, p.why
}

// Serves implements backend.OpServer: the executor's handshake lists op.
func (p *Prober) Serves(op string) (bool, string) {
	if ok, why := p.Available(); !ok {
		return false, why
	}
	if p.ops == nil || p.ops[op] {
		return true, ""
	}
	return false, fmt.Sprintf("GPU executor %s does not serve op %s (a build without its family, or without its CUDA launch)", p.path, op)
}
