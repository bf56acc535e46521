package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol version this package speaks. Bump it on any change
// to a message's layout; peers of different versions refuse each other.
const Version uint16 = 3

// Magic opens every Hello, so a server can tell a beamgpu client from a
// stray connection.
const Magic = "BGPUEXEC"

// Frame limits.
const (
	// HeaderSize is the size of a frame header: a uint32 length and a type byte.
	HeaderSize = 5
	// MaxFrame bounds a frame's length (type byte plus payload). Frames only
	// carry metadata and small params; bulk data goes through shared memory.
	MaxFrame = 1 << 20
	// MaxParams bounds a request's params blob.
	MaxParams = 256 << 10
	// MaxBuffers bounds the inputs or outputs of one request.
	MaxBuffers = 1024
	// MaxName bounds an op name.
	MaxName = 256
	// MaxText bounds a device description or an error message.
	MaxText = 16 << 10
	// MaxOps bounds the op list of a Welcome.
	MaxOps = 4096
	// MaxDevices bounds the devices of a Welcome or a StatsReply.
	MaxDevices = 1024
)

// Type is a frame's type byte.
type Type uint8

// The frame types.
const (
	THello    Type = 1 // client -> server, first frame
	TWelcome  Type = 2 // server -> client, handshake accepted
	TReject   Type = 3 // server -> client, handshake refused; the server then closes
	TArena    Type = 4 // client -> server, with the arena's fd as SCM_RIGHTS
	TArenaAck Type = 5 // server -> client
	TRequest  Type = 6 // client -> server
	TResponse Type = 7 // server -> client
	// Since version 2:
	TStats      Type = 8 // client -> server: the devices' statistics, please
	TStatsReply Type = 9 // server -> client
)

func (t Type) valid() bool { return t >= THello && t <= TStatsReply }

func (t Type) String() string {
	switch t {
	case THello:
		return "Hello"
	case TWelcome:
		return "Welcome"
	case TReject:
		return "Reject"
	case TArena:
		return "Arena"
	case TArenaAck:
		return "ArenaAck"
	case TRequest:
		return "Request"
	case TResponse:
		return "Response"
	case TStats:
		return "Stats"
	case TStatsReply:
		return "StatsReply"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Errors of frame and message decoding.
var (
	// ErrFrame is wrapped by every frame and decoding error: the peer sent
	// something this version cannot read, and the connection is unusable.
	ErrFrame = errors.New("executor: bad frame")
	// ErrVersionMismatch is matched (errors.Is) by a *VersionError.
	ErrVersionMismatch = errors.New("executor: protocol version mismatch")
)

// VersionError is a handshake between peers of different protocol versions.
type VersionError struct {
	Client, Server uint16
	// Detail is the peer's message, where it sent one.
	Detail string
}

func (e *VersionError) Error() string {
	s := fmt.Sprintf("%v: client speaks v%d, executor speaks v%d (the worker and the executor binary come from different beamgpu builds; ship them together)",
		ErrVersionMismatch, e.Client, e.Server)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is makes errors.Is(err, ErrVersionMismatch) true.
func (e *VersionError) Is(target error) bool { return target == ErrVersionMismatch }

// AppendFrame appends the frame of type t with payload p to dst.
func AppendFrame(dst []byte, t Type, p []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(p)+1))
	dst = append(dst, byte(t))
	return append(dst, p...)
}

// WriteFrame writes one frame to w. It refuses a payload over MaxFrame.
func WriteFrame(w io.Writer, t Type, p []byte) error {
	if len(p)+1 > MaxFrame {
		return fmt.Errorf("%w: %s payload of %d bytes exceeds the %d-byte frame limit", ErrFrame, t, len(p), MaxFrame-1)
	}
	_, err := w.Write(AppendFrame(make([]byte, 0, HeaderSize+len(p)), t, p))
	return err
}

// ReadFrame reads one frame from r. It reuses buf for the payload when it is
// large enough, so the payload is only valid until the next call with the
// same buf. A frame whose length is 0 or over MaxFrame, or whose type is
// unknown, is an error wrapping ErrFrame, found before anything is allocated.
// A clean end of stream before the header is io.EOF; inside a frame it is
// io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, buf []byte) (Type, []byte, error) {
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[:4])
	t := Type(hdr[4])
	if n == 0 || n > MaxFrame {
		return 0, nil, fmt.Errorf("%w: length %d outside [1, %d]", ErrFrame, n, MaxFrame)
	}
	if !t.valid() {
		return 0, nil, fmt.Errorf("%w: unknown type %d", ErrFrame, uint8(t))
	}
	size := int(n) - 1
	if cap(buf) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return t, buf, nil
}
