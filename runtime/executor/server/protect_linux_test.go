//go:build linux

package server_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/beamgpu/beamgpu/runtime/executor/server"
	"github.com/beamgpu/beamgpu/runtime/executor/testops"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// dialed is a raw connection past its handshake.
func dialed(t *testing.T, socket string) *protocol.Conn {
	t.Helper()
	c, err := protocol.Dial(context.Background(), socket)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = protocol.ClientHandshake(c)
	require.NoError(t, err)
	return c
}

// An arena its client could shrink (a memfd without F_SEAL_SHRINK) is
// refused with the reason, and the executor serves on: shrunk under its
// mapping, it used to kill the executor with SIGBUS.
func TestUnsealedArenaIsRefused(t *testing.T) {
	r := start(t, server.Config{})
	c := dialed(t, r.socket)
	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	require.NoError(t, err)
	defer syscall.Close(fd)
	require.NoError(t, syscall.Ftruncate(fd, 1<<20))
	require.NoError(t, c.Send(protocol.Arena{ID: 1, Size: 1 << 20}, fd))
	m, err := c.Recv()
	require.NoError(t, err)
	ack, ok := m.(protocol.ArenaAck)
	require.True(t, ok, "got %T", m)
	assert.NotEqual(t, protocol.StatusOK, ack.Status)
	assert.Contains(t, ack.Message, "F_SEAL_SHRINK")

	out, err := r.cl.Call(context.Background(), testops.Echo, nil, [][]byte{[]byte("still serving")})
	require.NoError(t, err)
	assert.Equal(t, "still serving", string(out[0]))
}

// A connection that sends nothing after its handshake is closed after
// IdleTimeout; one whose batch runs longer than that is not.
func TestIdleConnectionsTimeOut(t *testing.T) {
	r := start(t, server.Config{IdleTimeout: 300 * time.Millisecond})
	c := dialed(t, r.socket)
	t0 := time.Now()
	_, err := c.Recv()
	require.Error(t, err, "the executor closed the idle connection")
	assert.Less(t, time.Since(t0), 5*time.Second)

	out, err := r.cl.Call(context.Background(), testops.Sleep, []byte("900"), [][]byte{[]byte("slow")})
	require.NoError(t, err, "a batch longer than the idle timeout")
	assert.Equal(t, "slow", string(out[0]))
}
