package protocol

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// Conn is one end of a protocol connection: frames over a Unix socket, with
// file descriptors passed alongside (SCM_RIGHTS). Reads and writes may run in
// two goroutines at once, but not two reads or two writes.
type Conn struct {
	uc *net.UnixConn

	// read side
	rbuf       []byte
	rpos, rend int
	oob        []byte
	frame      []byte
	fdMu       sync.Mutex
	fds        []int

	// write side
	wbuf []byte
}

const readBufSize = 64 << 10

// maxPendingFDs bounds the descriptors received and not yet taken, so a
// peer cannot make this process hold many.
const maxPendingFDs = 8

// NewConn wraps a connected Unix socket.
func NewConn(uc *net.UnixConn) *Conn {
	return &Conn{uc: uc, rbuf: make([]byte, readBufSize), oob: make([]byte, oobSpace)}
}

// Dial connects to the executor socket at path.
func Dial(ctx context.Context, path string) (*Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	return NewConn(c.(*net.UnixConn)), nil
}

// Read implements io.Reader over the socket, collecting any file descriptors
// that arrive for TakeFD.
func (c *Conn) Read(p []byte) (int, error) {
	if c.rpos == c.rend {
		n, oobn, flags, _, err := c.uc.ReadMsgUnix(c.rbuf, c.oob)
		if oobn > 0 || flags&flagCtrunc != 0 {
			fds, perr := parseRights(c.oob[:oobn], flags)
			c.fdMu.Lock()
			c.fds = append(c.fds, fds...)
			if len(c.fds) > maxPendingFDs && perr == nil {
				perr = fmt.Errorf("%w: %d file descriptors received and not taken", ErrFrame, len(c.fds))
			}
			c.fdMu.Unlock()
			if perr != nil {
				c.rpos, c.rend = 0, 0
				return 0, perr
			}
		}
		if n <= 0 {
			c.rpos, c.rend = 0, 0
			if err == nil {
				// A stream socket reads 0 bytes only at end of stream.
				err = io.EOF
			}
			return 0, err
		}
		// With data read, an error shows again on the next read.
		c.rpos, c.rend = 0, n
	}
	n := copy(p, c.rbuf[c.rpos:c.rend])
	c.rpos += n
	return n, nil
}

// ReadFrame reads the next frame. The payload is valid until the next call.
func (c *Conn) ReadFrame() (Type, []byte, error) {
	t, p, err := ReadFrame(c, c.frame)
	if cap(p) > cap(c.frame) {
		c.frame = p[:0]
	}
	return t, p, err
}

// Recv reads and decodes the next message.
func (c *Conn) Recv() (Message, error) {
	t, p, err := c.ReadFrame()
	if err != nil {
		return nil, err
	}
	return Decode(t, p)
}

// Send encodes and writes m, passing fds with it (SCM_RIGHTS).
func (c *Conn) Send(m Message, fds ...int) error {
	p, err := Encode(m)
	if err != nil {
		return err
	}
	c.wbuf = AppendFrame(c.wbuf[:0], m.Type(), p)
	if len(fds) == 0 {
		_, err = c.uc.Write(c.wbuf)
		return err
	}
	oob, err := rights(fds)
	if err != nil {
		return err
	}
	n, _, err := c.uc.WriteMsgUnix(c.wbuf, oob, nil)
	if err != nil {
		return err
	}
	if n < len(c.wbuf) {
		_, err = c.uc.Write(c.wbuf[n:])
	}
	return err
}

// Write writes raw bytes to the socket (frames are written with Send; this
// is for WriteFrame and for tests).
func (c *Conn) Write(p []byte) (int, error) { return c.uc.Write(p) }

// TakeFD returns the oldest file descriptor received and not yet taken. The
// caller owns it.
func (c *Conn) TakeFD() (int, error) {
	c.fdMu.Lock()
	defer c.fdMu.Unlock()
	if len(c.fds) == 0 {
		return -1, fmt.Errorf("%w: no file descriptor came with the frame", ErrFrame)
	}
	fd := c.fds[0]
	c.fds = c.fds[1:]
	return fd, nil
}

// DropFDs closes the received descriptors not taken (a peer sent some with
// a frame that carries none).
func (c *Conn) DropFDs() {
	c.fdMu.Lock()
	for _, fd := range c.fds {
		closeFD(fd)
	}
	c.fds = nil
	c.fdMu.Unlock()
}

// SetReadDeadline sets the read deadline of the socket.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.uc.SetReadDeadline(t) }

// SetDeadline sets the read and write deadline of the socket.
func (c *Conn) SetDeadline(t time.Time) error { return c.uc.SetDeadline(t) }

// Close closes the socket and any received descriptors not taken.
func (c *Conn) Close() error {
	c.DropFDs()
	return c.uc.Close()
}

// ClientHandshake sends Hello (with this process's pid) and reads the
// answer: the Welcome, or a *VersionError (errors.Is ErrVersionMismatch) when
// the server speaks another version or rejects ours.
func ClientHandshake(c *Conn) (Welcome, error) {
	if err := c.Send(Hello{Version: Version, PID: uint32(os.Getpid())}); err != nil {
		return Welcome{}, fmt.Errorf("executor: handshake: %w", err)
	}
	m, err := c.Recv()
	var ve *VersionError
	if errors.As(err, &ve) {
		return Welcome{}, err
	}
	if err != nil {
		return Welcome{}, fmt.Errorf("executor: handshake: %w", err)
	}
	switch m := m.(type) {
	case Welcome:
		return m, nil
	case Reject:
		if m.Version != Version {
			return Welcome{}, &VersionError{Client: Version, Server: m.Version, Detail: m.Message}
		}
		return Welcome{}, fmt.Errorf("executor: refused the connection: %s", m.Message)
	}
	return Welcome{}, fmt.Errorf("executor: handshake: %w: got %s, want Welcome", ErrFrame, m.Type())
}
