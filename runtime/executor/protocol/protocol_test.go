package protocol_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/executor/protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// samples is one message of every type, as used by the round-trip test and
// the fuzz seeds.
func samples() []protocol.Message {
	return []protocol.Message{
		protocol.Hello{Version: protocol.Version, PID: 4242},
		protocol.Welcome{Version: protocol.Version, PID: 7, Device: "cpu-reference", Ops: []string{"echo", "sum_f32"},
			Limits: protocol.Limits{MaxConcurrent: 2, MemoryBudget: 1 << 30, MaxFrame: protocol.MaxFrame, MaxBuffers: protocol.MaxBuffers}},
		protocol.Welcome{Version: protocol.Version},
		protocol.Welcome{Version: protocol.Version, NoDevice: "cuda: NVIDIA driver 470.223.02 supports CUDA 11.4; this executor needs CUDA 12.0 or newer (driver R525+)"},
		protocol.Reject{Version: protocol.Version, Message: "no"},
		protocol.Arena{ID: 3, Size: 1 << 20},
		protocol.ArenaAck{ID: 3, Status: protocol.StatusError, Message: "mmap failed"},
		protocol.Request{ID: 9, Arena: 3, Op: "echo", Params: []byte("12"), Inputs: []protocol.Ref{{Off: 0, Len: 10}, {Off: 64, Len: 0}}, Out: protocol.Ref{Off: 128, Len: 4096}},
		protocol.Request{ID: 10, Arena: 1, Op: "x"},
		protocol.Response{ID: 9, Status: protocol.StatusOK, Outputs: []protocol.Ref{{Off: 128, Len: 10}}},
		protocol.Response{ID: 9, Status: protocol.StatusNoSpace, Message: "more", Need: 1 << 21},
		protocol.Response{ID: 10, Status: protocol.StatusNeedSide, Message: "executor: side data not held: k"},
		protocol.Welcome{Version: protocol.Version, PID: 8, Device: "2 devices: [0] a; [1] b", Devices: []string{"a", "b"}, Ops: []string{"echo"}},
		protocol.Response{ID: 11, Status: protocol.StatusOK, Outputs: []protocol.Ref{{Off: 0, Len: 1}}, Device: 3, BusyNS: 12345},
		protocol.Stats{},
		protocol.StatsReply{},
		protocol.StatsReply{Devices: []protocol.DeviceStats{
			{Ordinal: 0, Name: "a", Serving: true, Batches: 5, Bytes: 1 << 20, BusyNS: 7, BatchNS: 9, SideFills: 1},
			{Ordinal: 1, Name: "b", Failure: "sticky", FailedBatches: 2},
		}},
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	var wire bytes.Buffer
	for _, m := range samples() {
		p, err := protocol.Encode(m)
		require.NoError(t, err)
		require.NoError(t, protocol.WriteFrame(&wire, m.Type(), p))
	}
	var buf []byte
	for _, want := range samples() {
		typ, p, err := protocol.ReadFrame(&wire, buf)
		require.NoError(t, err)
		assert.Equal(t, want.Type(), typ)
		got, err := protocol.Decode(typ, p)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, _, err := protocol.ReadFrame(&wire, nil)
	assert.Equal(t, io.EOF, err)
}

func frame(n uint32, typ byte, payload ...byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, n)
	return append(append(b, typ), payload...)
}

func TestReadFrameBounds(t *testing.T) {
	for name, tc := range map[string]struct {
		in   []byte
		want error
	}{
		"zero length":      {frame(0, 1), protocol.ErrFrame},
		"over MaxFrame":    {frame(protocol.MaxFrame+1, 1), protocol.ErrFrame},
		"huge length":      {frame(0xFFFFFFFF, 6), protocol.ErrFrame},
		"unknown type":     {frame(1, 0), protocol.ErrFrame},
		"type past last":   {frame(1, 10), protocol.ErrFrame},
		"short header":     {[]byte{1, 0}, io.ErrUnexpectedEOF},
		"short payload":    {frame(10, 6, 1, 2, 3), io.ErrUnexpectedEOF},
		"header, then EOF": {frame(2, 6), io.ErrUnexpectedEOF},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := protocol.ReadFrame(bytes.NewReader(tc.in), nil)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	assert.ErrorIs(t, protocol.WriteFrame(io.Discard, protocol.TRequest, make([]byte, protocol.MaxFrame)), protocol.ErrFrame)
}

func TestDecodeRejectsBadPayloads(t *testing.T) {
	hello := protocol.Hello{Version: protocol.Version}.Append(nil)
	bad := map[string]struct {
		t protocol.Type
		p []byte
	}{
		"trailing bytes":      {protocol.THello, append(hello, 0)},
		"truncated":           {protocol.THello, hello[:len(hello)-1]},
		"no magic":            {protocol.THello, append([]byte("HTTP/1.1"), hello[8:]...)},
		"empty no-device":     {protocol.TWelcome, append(protocol.Welcome{Version: protocol.Version}.Append(nil), 0, 0, 0, 0)},
		"op count too large":  {protocol.TWelcome, binary.LittleEndian.AppendUint32(protocol.Welcome{Version: protocol.Version}.Append(nil)[:10], 1<<30)},
		"ref count past data": {protocol.TResponse, binary.LittleEndian.AppendUint32(make([]byte, 8+1+4+8), 3)},
		"empty op name":       {protocol.TRequest, protocol.Request{ID: 1, Op: ""}.Append(nil)},
		"region overflows":    {protocol.TRequest, protocol.Request{ID: 1, Op: "x", Out: protocol.Ref{Off: 1 << 63, Len: 1 << 63}}.Append(nil)},
		"params over limit":   {protocol.TRequest, protocol.Request{ID: 1, Op: "x", Params: make([]byte, protocol.MaxParams+1)}.Append(nil)},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := protocol.Decode(tc.t, tc.p)
			assert.ErrorIs(t, err, protocol.ErrFrame)
		})
	}
	_, err := protocol.Encode(protocol.Request{ID: 1, Op: "x", Params: make([]byte, protocol.MaxParams+1)})
	assert.ErrorIs(t, err, protocol.ErrFrame, "the encoder refuses what the decoder would")
}

func TestDecodeVersionMismatch(t *testing.T) {
	// A Hello or Welcome of another version names its version however the
	// rest of it is laid out.
	h := protocol.Hello{Version: protocol.Version + 1, PID: 1}.Append(nil)
	_, err := protocol.Decode(protocol.THello, append(h, "whatever the next version adds"...))
	var ve *protocol.VersionError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, protocol.Version+1, ve.Client)
	assert.ErrorIs(t, err, protocol.ErrVersionMismatch)

	w := binary.LittleEndian.AppendUint16(nil, 99)
	_, err = protocol.Decode(protocol.TWelcome, append(w, 1, 2, 3))
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, uint16(99), ve.Server)
	assert.Contains(t, err.Error(), fmt.Sprintf("client speaks v%d, executor speaks v99", protocol.Version))
}

// pair returns two connected protocol.Conns.
func pair(t *testing.T) (a, b *protocol.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	conn := func(fd int) *protocol.Conn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		require.NoError(t, err)
		return protocol.NewConn(c.(*net.UnixConn))
	}
	a, b = conn(fds[0]), conn(fds[1])
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestConnPassesFileDescriptors(t *testing.T) {
	a, b := pair(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	_, err = f.WriteString("shared")
	require.NoError(t, err)
	defer f.Close()

	require.NoError(t, a.Send(protocol.Arena{ID: 1, Size: 6}, int(f.Fd())))
	require.NoError(t, a.Send(protocol.Request{ID: 2, Arena: 1, Op: "echo"}))
	m, err := b.Recv()
	require.NoError(t, err)
	assert.Equal(t, protocol.Arena{ID: 1, Size: 6}, m)
	fd, err := b.TakeFD()
	require.NoError(t, err)
	got := os.NewFile(uintptr(fd), "received")
	defer got.Close()
	buf := make([]byte, 6)
	_, err = got.ReadAt(buf, 0)
	require.NoError(t, err)
	assert.Equal(t, "shared", string(buf))

	m, err = b.Recv()
	require.NoError(t, err)
	assert.Equal(t, "echo", m.(protocol.Request).Op)
	_, err = b.TakeFD()
	assert.ErrorIs(t, err, protocol.ErrFrame, "no descriptor came with the Request")
}

func TestClientHandshake(t *testing.T) {
	next := protocol.Version + 1
	for name, tc := range map[string]struct {
		answer  func(c *protocol.Conn) error
		wantErr error
		msg     string
	}{
		"welcome": {answer: func(c *protocol.Conn) error {
			return c.Send(protocol.Welcome{Version: protocol.Version, Device: "d", Ops: []string{"echo"}})
		}},
		"server of another version": {answer: func(c *protocol.Conn) error {
			// The next version's Welcome: the version, then a layout this
			// one cannot read.
			return protocol.WriteFrame(c, protocol.TWelcome, append(binary.LittleEndian.AppendUint16(nil, next), 0xde, 0xad))
		}, wantErr: protocol.ErrVersionMismatch, msg: fmt.Sprintf("client speaks v%d, executor speaks v%d", protocol.Version, next)},
		"server rejects our version": {answer: func(c *protocol.Conn) error {
			return c.Send(protocol.Reject{Version: next, Message: fmt.Sprintf("executor speaks protocol v%d, client speaks v%d", next, protocol.Version)})
		}, wantErr: protocol.ErrVersionMismatch, msg: fmt.Sprintf("executor speaks protocol v%d", next)},
		"server hangs up": {answer: func(c *protocol.Conn) error { return nil }, wantErr: io.EOF},
	} {
		t.Run(name, func(t *testing.T) {
			cl, srv := pair(t)
			done := make(chan error, 1)
			go func() {
				m, err := srv.Recv()
				if err == nil {
					if h, ok := m.(protocol.Hello); !ok || h.Version != protocol.Version || int(h.PID) != os.Getpid() {
						err = errors.New("bad hello")
					}
				}
				if err == nil {
					err = tc.answer(srv)
				}
				srv.Close()
				done <- err
			}()
			w, err := protocol.ClientHandshake(cl)
			require.NoError(t, <-done)
			if tc.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, "d", w.Device)
				return
			}
			assert.ErrorIs(t, err, tc.wantErr)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestNewSocketDir(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", base)
	dir, sock, err := protocol.NewSocketDir()
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	assert.Equal(t, base, filepath.Dir(dir))
	assert.Equal(t, filepath.Join(dir, protocol.SocketName), sock)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(base, "missing"))
	dir2, _, err := protocol.NewSocketDir()
	require.NoError(t, err)
	defer os.RemoveAll(dir2)
	assert.Equal(t, filepath.Clean(os.TempDir()), filepath.Dir(dir2))
}
