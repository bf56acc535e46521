package client_test

import (
	"path/filepath"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/client"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/runtime/executor/testops"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An executor without a device says why in its handshake (a CUDA executor
// on a driver too old for it, here one served in process), and that reason
// is the client's, and so the explain report's under --backend=auto.
func TestNoDeviceReasonReachesTheExplainReport(t *testing.T) {
	const why = "cuda: NVIDIA driver 470.223.02 supports CUDA 11.4, and this executor needs CUDA 12.0 or newer: driver R525 or newer"
	srv, err := server.New(server.Config{NoDevice: why, Ops: []server.Op{testops.All()[0]}})
	require.NoError(t, err)
	sock := filepath.Join(t.TempDir(), "x.sock")
	ln, err := server.Listen(sock)
	require.NoError(t, err)
	go srv.Serve(ln)
	defer ln.Close()

	c := client.New(client.Config{Socket: sock})
	defer c.Close()
	ok, got := c.Available()
	assert.False(t, ok)
	assert.Equal(t, "GPU executor "+sock+" reports no usable device: "+why, got)

	sel, err := backend.New(backend.Config{Default: backend.Auto, Executor: c})
	require.NoError(t, err)
	d, err := sel.Resolve(backend.Step{Name: "ndvi", GPUOp: "raster.ndvi"})
	require.NoError(t, err)
	assert.Equal(t, backend.CPU, d.Impl)
	assert.Contains(t, d.Reason, "auto: GPU executor "+sock+" reports no usable device: cuda: NVIDIA driver 470.223.02 supports CUDA 11.4")
}
