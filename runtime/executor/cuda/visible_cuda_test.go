//go:build cuda

package cuda

import (
	"context"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every visible GPU opens as a Device of its own, with its own resident
// data: a value kept on one is filled again on another (once each). On a
// one-GPU machine it checks the one (GPU 0 is already open: dev).
func TestEveryVisibleDeviceOpensWithItsOwnResidentData(t *testing.T) {
	n, err := Visible()
	require.NoError(t, err)
	devs := []*Device{dev}
	for i := 1; i < n; i++ {
		d, err := Open(i, 64<<20)
		require.NoError(t, err, "GPU %d of %d", i, n)
		t.Cleanup(func() { d.Close() })
		devs = append(devs, d)
	}
	for i, d := range devs {
		assert.Equal(t, i, d.Info().Ordinal)
		fills := 0
		for range 2 {
			require.NoError(t, d.Launch(context.Background(), "resident", nil, func(c gpu.Call) error {
				_, err := c.Resident("visible test", 256, func(gpu.Call, gpu.Ptr) error { fills++; return nil })
				return err
			}))
		}
		assert.Equal(t, 1, fills, "GPU %d: filled once, kept", i)
	}
}
