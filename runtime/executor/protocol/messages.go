package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Message is a frame's decoded payload.
type Message interface {
	// Type is the frame type carrying the message.
	Type() Type
	// Append appends the encoded payload to b.
	Append(b []byte) []byte
}

// The failures both sides of the protocol know by their status: the server
// answers an op's error wrapping one of them with its status, and the
// client's error for a response of that status matches it (errors.Is). The
// device layer's errors match them too. These are the one definition of
// each, whichever package reports them.
var (
	// ErrOutOfMemory (StatusOutOfMemory): the batch does not fit the
	// executor's memory budget or the device's memory; the device is still
	// usable. Split the batch and retry.
	ErrOutOfMemory = errors.New("executor: out of memory")
	// ErrFatal (StatusFatal): the executor is broken (a sticky device
	// error) and exits; the client starts a new one for the next call.
	ErrFatal = errors.New("executor: fatal error, the device context is unusable")
	// ErrNeedSide (StatusNeedSide): the request names side data (a model's
	// weights, a kNN reference set) that it does not carry and that the
	// executor does not hold: the executor restarted, or evicted it. Send
	// the request again with the side data.
	ErrNeedSide = errors.New("executor: side data not held")
)

// Status is the outcome of a request.
type Status uint8

// The statuses.
const (
	// StatusOK: the op ran; Response.Outputs name its outputs.
	StatusOK Status = 0
	// StatusError: the op (or the request) failed; Message says why. The
	// executor is fine and the connection stays usable.
	StatusError Status = 1
	// StatusOutOfMemory: the request does not fit the executor's memory
	// budget (or the device ran out of memory). The caller may split the
	// batch and retry.
	StatusOutOfMemory Status = 2
	// StatusFatal: the executor is broken (a sticky CUDA error) and exits
	// after sending this; the client restarts it.
	StatusFatal Status = 3
	// StatusNoSpace: the outputs do not fit the output region the request
	// gave; Response.Need is the size the op asked for. The client grows the
	// arena and sends the request again.
	StatusNoSpace Status = 4
	// StatusNeedSide: the op needs side data that the request only names
	// and the executor does not hold (version 3); the client sends the
	// request again with it.
	StatusNeedSide Status = 5
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusError:
		return "op error"
	case StatusOutOfMemory:
		return "out of memory"
	case StatusFatal:
		return "fatal"
	case StatusNoSpace:
		return "no space"
	case StatusNeedSide:
		return "side data not held"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Hello is the client's first frame. On the wire it is Magic, then Version,
// then PID; Version always follows Magic, in every protocol version.
type Hello struct {
	Version uint16
	PID     uint32
}

// Welcome is the server's answer to an acceptable Hello.
type Welcome struct {
	// Version comes first on the wire, in every protocol version.
	Version uint16
	// PID is the executor's process id.
	PID uint32
	// Device describes the device the executor runs ops on; empty means none.
	// With several devices it sums them up ("2 devices: [0] ...; [1] ...").
	Device string
	// Devices describe each device the executor serves, by ordinal (version
	// 2); empty when there is none.
	Devices []string
	// Ops are the names of the ops the executor serves, sorted.
	Ops []string
	// Limits are the executor's limits.
	Limits Limits
	// NoDevice says why there is no device, where Device is empty (for
	// example a driver too old for the executor's CUDA version), so that the
	// client's "no GPU" carries the reason. On the wire it is an optional
	// last field, present only when not empty, so version 1 peers that do
	// not send it still speak to this one.
	NoDevice string
}

// Limits are the executor's resource limits, as announced in Welcome.
type Limits struct {
	// MaxConcurrent is how many batches run at once on each device (across
	// connections).
	MaxConcurrent uint32
	// MemoryBudget is the bytes of inputs and outputs each device holds at
	// once; 0 means unlimited. A request over it gets StatusOutOfMemory.
	MemoryBudget uint64
	// MaxFrame is the largest frame the executor accepts.
	MaxFrame uint32
	// MaxBuffers is the most inputs or outputs of one request.
	MaxBuffers uint32
}

// Reject is the server's answer to an unacceptable Hello; it closes after.
type Reject struct {
	// Version is the server's protocol version; it comes first on the wire.
	Version uint16
	Message string
}

// Arena attaches a shared-memory arena to the connection; the frame carries
// its file descriptor as SCM_RIGHTS. A new Arena replaces the previous one
// (that is how the client grows it).
type Arena struct {
	ID   uint32
	Size uint64
}

// ArenaAck answers Arena.
type ArenaAck struct {
	ID      uint32
	Status  Status
	Message string
}

// Ref names a region of the arena.
type Ref struct {
	Off, Len uint64
}

// End is the offset just past the region.
func (r Ref) End() uint64 { return r.Off + r.Len }

// Request asks the server to run an op.
type Request struct {
	// ID is echoed in the Response.
	ID uint64
	// Arena is the ID of the arena the refs point into.
	Arena uint32
	// Op is the op's name.
	Op string
	// Params is the op's small parameter blob (at most MaxParams bytes).
	Params []byte
	// Inputs are the input buffers.
	Inputs []Ref
	// Out is the region the server may write outputs into; it must not
	// overlap the inputs.
	Out Ref
}

// Response answers a Request.
type Response struct {
	ID      uint64
	Status  Status
	Message string
	// Need is, for StatusNoSpace, the bytes of output region the op asked for.
	Need uint64
	// Outputs are the op's outputs, inside the request's Out region.
	Outputs []Ref
	// Device is the ordinal of the device the batch ran on, and BusyNS the
	// nanoseconds it ran there (version 2; for StatusOK).
	Device uint32
	BusyNS uint64
}

// Stats asks the server for its devices' statistics (version 2); the
// server answers with a StatsReply.
type Stats struct{}

// StatsReply answers Stats: one entry per device, by ordinal.
type StatsReply struct {
	Devices []DeviceStats
}

// DeviceStats are one device's statistics since the executor started.
type DeviceStats struct {
	Ordinal uint32
	// Name describes the device, as in Welcome.Devices.
	Name string
	// Serving is false once the device has been taken out after a fatal
	// error (Failure says which); its batches then run on the others.
	Serving bool
	Failure string
	// Batches and Bytes (inputs and outputs) count the batches that ran
	// there successfully.
	Batches, Bytes uint64
	// BusyNS is the time at least one batch ran on the device; BatchNS sums
	// the batches' own times (more than BusyNS where batches overlapped).
	BusyNS, BatchNS uint64
	// SideFills counts the side data (model weights, kNN reference sets)
	// first used on the device: uploaded there once each.
	SideFills uint64
	// FailedBatches counts the batches that failed fatally there (and were
	// run again on another device, while one served).
	FailedBatches uint64
}

// Type implements Message.
func (Hello) Type() Type { return THello }

// Type implements Message.
func (Welcome) Type() Type { return TWelcome }

// Type implements Message.
func (Reject) Type() Type { return TReject }

// Type implements Message.
func (Arena) Type() Type { return TArena }

// Type implements Message.
func (ArenaAck) Type() Type { return TArenaAck }

// Type implements Message.
func (Request) Type() Type { return TRequest }

// Type implements Message.
func (Response) Type() Type { return TResponse }

// Type implements Message.
func (Stats) Type() Type { return TStats }

// Type implements Message.
func (StatsReply) Type() Type { return TStatsReply }

// Append implements Message.
func (Stats) Append(b []byte) []byte { return b }

// Append implements Message.
func (m StatsReply) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Devices)))
	for _, d := range m.Devices {
		b = binary.LittleEndian.AppendUint32(b, d.Ordinal)
		b = appendStr(b, d.Name)
		if d.Serving {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = appendStr(b, d.Failure)
		for _, v := range []uint64{d.Batches, d.Bytes, d.BusyNS, d.BatchNS, d.SideFills, d.FailedBatches} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
	}
	return b
}

// Append implements Message.
func (m Hello) Append(b []byte) []byte {
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint16(b, m.Version)
	return binary.LittleEndian.AppendUint32(b, m.PID)
}

// Append implements Message.
func (m Welcome) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, m.Version)
	b = binary.LittleEndian.AppendUint32(b, m.PID)
	b = appendStr(b, m.Device)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Ops)))
	for _, op := range m.Ops {
		b = appendStr(b, op)
	}
	b = binary.LittleEndian.AppendUint32(b, m.Limits.MaxConcurrent)
	b = binary.LittleEndian.AppendUint64(b, m.Limits.MemoryBudget)
	b = binary.LittleEndian.AppendUint32(b, m.Limits.MaxFrame)
	b = binary.LittleEndian.AppendUint32(b, m.Limits.MaxBuffers)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Devices)))
	for _, d := range m.Devices {
		b = appendStr(b, d)
	}
	if m.NoDevice != "" {
		b = appendStr(b, m.NoDevice)
	}
	return b
}

// Append implements Message.
func (m Reject) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, m.Version)
	return appendStr(b, m.Message)
}

// Append implements Message.
func (m Arena) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, m.ID)
	return binary.LittleEndian.AppendUint64(b, m.Size)
}

// Append implements Message.
func (m ArenaAck) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, m.ID)
	b = append(b, byte(m.Status))
	return appendStr(b, m.Message)
}

// Append implements Message.
func (m Request) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = binary.LittleEndian.AppendUint32(b, m.Arena)
	b = appendStr(b, m.Op)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Params)))
	b = append(b, m.Params...)
	b = appendRefs(b, m.Inputs)
	return appendRef(b, m.Out)
}

// Append implements Message.
func (m Response) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.ID)
	b = append(b, byte(m.Status))
	b = appendStr(b, m.Message)
	b = binary.LittleEndian.AppendUint64(b, m.Need)
	b = appendRefs(b, m.Outputs)
	b = binary.LittleEndian.AppendUint32(b, m.Device)
	return binary.LittleEndian.AppendUint64(b, m.BusyNS)
}

func appendStr(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func appendRef(b []byte, r Ref) []byte {
	b = binary.LittleEndian.AppendUint64(b, r.Off)
	return binary.LittleEndian.AppendUint64(b, r.Len)
}

func appendRefs(b []byte, rs []Ref) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rs)))
	for _, r := range rs {
		b = appendRef(b, r)
	}
	return b
}

// Checks a message must pass to be encoded; decoders enforce the same.
func (m Request) validate() error {
	switch {
	case len(m.Op) == 0 || len(m.Op) > MaxName:
		return fmt.Errorf("executor: op name of %d bytes: want 1 to %d", len(m.Op), MaxName)
	case len(m.Params) > MaxParams:
		return fmt.Errorf("executor: params of %d bytes exceed the %d-byte limit (bulk data goes in the inputs)", len(m.Params), MaxParams)
	case len(m.Inputs) > MaxBuffers:
		return fmt.Errorf("executor: %d inputs exceed the limit of %d", len(m.Inputs), MaxBuffers)
	}
	return nil
}

// Encode returns the payload of m, checking the limits a decoder enforces.
func Encode(m Message) ([]byte, error) {
	if r, ok := m.(Request); ok {
		if err := r.validate(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFrame, err)
		}
	}
	p := m.Append(nil)
	if len(p)+1 > MaxFrame {
		return nil, fmt.Errorf("%w: %s of %d bytes exceeds the %d-byte frame limit", ErrFrame, m.Type(), len(p), MaxFrame-1)
	}
	return p, nil
}

// Decode decodes the payload p of a frame of type t. Blobs and strings are
// copied: the result does not alias p. Hello and Welcome of another protocol
// version decode to a *VersionError (with the message's Version set and the
// rest left zero); a Reject decodes whatever its version.
func Decode(t Type, p []byte) (Message, error) {
	d := decoder{b: p}
	var m Message
	switch t {
	case THello:
		magic := d.bytes(len(Magic))
		if d.err == nil && string(magic) != Magic {
			return nil, fmt.Errorf("%w: Hello without the %q magic: not a beamgpu executor client", ErrFrame, Magic)
		}
		h := Hello{Version: d.u16()}
		if d.err == nil && h.Version != Version {
			return h, &VersionError{Client: h.Version, Server: Version}
		}
		h.PID = d.u32()
		m = h
	case TWelcome:
		w := Welcome{Version: d.u16()}
		if d.err == nil && w.Version != Version {
			return w, &VersionError{Client: Version, Server: w.Version}
		}
		w.PID = d.u32()
		w.Device = d.str(MaxText)
		n := d.count(MaxOps, 4)
		if n > 0 {
			w.Ops = make([]string, n)
			for i := range w.Ops {
				w.Ops[i] = d.str(MaxName)
			}
		}
		w.Limits.MaxConcurrent = d.u32()
		w.Limits.MemoryBudget = d.u64()
		w.Limits.MaxFrame = d.u32()
		w.Limits.MaxBuffers = d.u32()
		if n := d.count(MaxDevices, 4); n > 0 {
			w.Devices = make([]string, n)
			for i := range w.Devices {
				w.Devices[i] = d.str(MaxText)
			}
		}
		if d.err == nil && len(d.b) > 0 {
			if w.NoDevice = d.str(MaxText); d.err == nil && w.NoDevice == "" {
				d.fail("empty no-device reason (it is sent only when there is one)")
			}
		}
		m = w
	case TReject:
		m = Reject{Version: d.u16(), Message: d.str(MaxText)}
	case TArena:
		m = Arena{ID: d.u32(), Size: d.u64()}
	case TArenaAck:
		m = ArenaAck{ID: d.u32(), Status: Status(d.u8()), Message: d.str(MaxText)}
	case TRequest:
		r := Request{ID: d.u64(), Arena: d.u32(), Op: d.str(MaxName)}
		if d.err == nil && r.Op == "" {
			d.fail("empty op name")
		}
		r.Params = d.blob(MaxParams)
		r.Inputs = d.refs()
		r.Out = d.ref()
		m = r
	case TResponse:
		r := Response{ID: d.u64(), Status: Status(d.u8()), Message: d.str(MaxText), Need: d.u64()}
		r.Outputs = d.refs()
		r.Device = d.u32()
		r.BusyNS = d.u64()
		m = r
	case TStats:
		m = Stats{}
	case TStatsReply:
		var r StatsReply
		if n := d.count(MaxDevices, 4+4+1+4+6*8); n > 0 {
			r.Devices = make([]DeviceStats, n)
			for i := range r.Devices {
				s := &r.Devices[i]
				s.Ordinal = d.u32()
				s.Name = d.str(MaxText)
				switch d.u8() {
				case 0:
				case 1:
					s.Serving = true
				default:
					d.fail("serving flag not 0 or 1")
				}
				s.Failure = d.str(MaxText)
				s.Batches, s.Bytes, s.BusyNS, s.BatchNS, s.SideFills, s.FailedBatches = d.u64(), d.u64(), d.u64(), d.u64(), d.u64(), d.u64()
			}
		}
		m = r
	default:
		return nil, fmt.Errorf("%w: unknown type %d", ErrFrame, uint8(t))
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.b)))
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFrame, t, d.err)
	}
	return m, nil
}

// decoder reads little-endian fields, recording the first error; after an
// error every read returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = errors.New(msg)
	}
	d.b = nil
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.fail(fmt.Sprintf("truncated: want %d bytes, %d left", n, len(d.b)))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8() uint8 {
	if b := d.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if b := d.bytes(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// count reads a uint32 element count, checking it against max and against
// the bytes left (each element takes at least minSize bytes), so a corrupt
// count cannot make the caller allocate much.
func (d *decoder) count(max, minSize int) int {
	n := d.u32()
	if d.err != nil {
		return 0
	}
	if uint64(n) > uint64(max) || uint64(n)*uint64(minSize) > uint64(len(d.b)) {
		d.fail(fmt.Sprintf("count %d over the limit of %d or the %d bytes left", n, max, len(d.b)))
		return 0
	}
	return int(n)
}

func (d *decoder) blob(max int) []byte {
	n := d.count(max, 1)
	b := d.bytes(n)
	if b == nil || n == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func (d *decoder) str(max int) string { return string(d.blob(max)) }

func (d *decoder) ref() Ref {
	r := Ref{Off: d.u64(), Len: d.u64()}
	if d.err == nil && r.Off+r.Len < r.Off {
		d.fail(fmt.Sprintf("region %d+%d overflows", r.Off, r.Len))
	}
	return r
}

func (d *decoder) refs() []Ref {
	n := d.count(MaxBuffers, 16)
	if n == 0 {
		return nil
	}
	rs := make([]Ref, n)
	for i := range rs {
		rs[i] = d.ref()
	}
	return rs
}
