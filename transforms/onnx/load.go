package onnx

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// MaxModelBytes bounds a model file (protobuf's own limit is 2 GiB; larger
// weights go in external data files).
const MaxModelBytes = 2 << 30

// Load reads, checks and prepares the model called name in fsys (a
// slash-separated path, as io/fs names files). External data files are
// read from fsys too, relative to the model's directory, and none may lie
// outside it. Every error names the file and the reason.
//
// fsys decides what can be reached: os.DirFS follows symbolic links out of
// its directory, a root's FS ((*os.Root).FS) does not. Package onnxstep's
// Load reads a model from a local path or any path of Beam's filesystems
// (gs://...), with those checks.
func Load(fsys fs.FS, name string) (*Model, error) {
	m, err := load(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("onnx: %s: %w", name, err)
	}
	return m, nil
}

func load(fsys fs.FS, name string) (*Model, error) {
	mem, err := newMemory(0)
	if err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The size first, from stat, and the file's top-level fields, read at
	// their offsets: a file too large, of zeros or of garbage is refused
	// before it is read.
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size := st.Size()
		if size > MaxModelBytes {
			return nil, fmt.Errorf("a file of %d bytes (%s), more than a model file may have (%d bytes, protobuf's limit; larger weights go in external data files)",
				size, humanBytes(size), int64(MaxModelBytes))
		}
		if ra, ok := f.(io.ReaderAt); ok {
			if err := checkModelFields(ra, size, false); err != nil {
				return nil, err
			}
			data, err := mem.alloc(size, nil, func() string { return "the model file" })
			if err != nil {
				return nil, err
			}
			if _, err := ra.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && size == 0) {
				return nil, err
			}
			return parse(data, name, externalFrom(fsys, name, mem), mem)
		}
	}
	data, err := readModel(f, mem)
	if err != nil {
		return nil, err
	}
	return parse(data, name, externalFrom(fsys, name, mem), mem)
}

// Read reads, checks and prepares the model that r holds (at most
// MaxModelBytes), named name in errors. It refuses external data: there is
// no directory to read it from (Load reads it).
func Read(r io.Reader, name string) (*Model, error) {
	mem, err := newMemory(0)
	if err == nil {
		var data []byte
		if data, err = readModel(r, mem); err == nil {
			var m *Model
			if m, err = parse(data, name, nil, mem); err == nil {
				return m, nil
			}
		}
	}
	return nil, fmt.Errorf("onnx: %s: %w", name, err)
}

// Parse is Read for a model in memory.
func Parse(data []byte, name string) (*Model, error) {
	mem, err := newMemory(0)
	if err == nil {
		var m *Model
		if m, err = parse(data, name, nil, mem); err == nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("onnx: %s: %w", name, err)
}

// sniffBytes is how much of a stream readModel checks before reading the
// rest.
const sniffBytes = 64 << 10

// readModel reads a model from a stream of unknown size: its first bytes
// are checked (checkModelFields), then the rest is read, at most
// MaxModelBytes in all, each growth of the buffer within mem's budget.
func readModel(r io.Reader, mem *memory) ([]byte, error) {
	br := bufio.NewReaderSize(r, sniffBytes)
	head, err := br.Peek(sniffBytes)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if err := checkModelFields(bytes.NewReader(head), int64(len(head)), len(head) == sniffBytes); err != nil {
		return nil, err
	}
	var data []byte
	for {
		if len(data) == cap(data) {
			if len(data) > MaxModelBytes {
				return nil, fmt.Errorf("more than %d bytes, more than a model file may have (protobuf's limit; larger weights go in external data files)", int64(MaxModelBytes))
			}
			want := min(max(2*cap(data), sniffBytes), MaxModelBytes+1)
			if !mem.fits(int64(want)) {
				return nil, &MemoryError{What: "the model file (read from a stream)", Bytes: int64(want), Held: mem.held, Budget: mem.budget, Source: mem.source}
			}
			data = append(make([]byte, 0, want), data...)
		}
		n, err := br.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(data) > MaxModelBytes {
		return nil, fmt.Errorf("more than %d bytes, more than a model file may have (protobuf's limit; larger weights go in external data files)", int64(MaxModelBytes))
	}
	mem.held += int64(len(data))
	return data, nil
}

// maxTopFields is how many of a model file's top-level fields
// checkModelFields reads: a ModelProto has a dozen or so, its graph among
// the first.
const maxTopFields = 1024

// checkModelFields checks, cheaply, that the size bytes of r look like a
// ModelProto: a sequence of protobuf fields, each inside the file, with the
// wire types of ModelProto's fields, a graph among them. It reads the
// fields' tags and lengths, not their contents: a file of zeros or of
// garbage is refused from its first bytes, whatever its size. partial
// says r holds only the first size bytes of the file: a field may go on
// past them.
func checkModelFields(r io.ReaderAt, size int64, partial bool) error {
	fields := (&onnxpb.ModelProto{}).ProtoReflect().Descriptor().Fields()
	if size == 0 {
		return errors.New("not an ONNX model: the file is empty")
	}
	var buf [2 * binary.MaxVarintLen64]byte
	graph := false
	off := int64(0)
	for i := 0; off < size && i < maxTopFields; i++ {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if n == 0 && err != nil {
			return err
		}
		b := buf[:n]
		bad := func(why string) error {
			return fmt.Errorf("not an ONNX model: the bytes at offset %d (% x) are not a field of a model (%s)", off, b[:min(len(b), 8)], why)
		}
		num, typ, tl := protowire.ConsumeTag(b)
		if tl < 0 {
			return bad("no protobuf field tag")
		}
		var vl int
		var end int64
		switch typ {
		case protowire.VarintType:
			vl = protowire.ConsumeFieldValue(num, typ, b[tl:])
			end = off + int64(tl) + int64(vl)
		case protowire.Fixed32Type:
			vl, end = 4, off+int64(tl)+4
		case protowire.Fixed64Type:
			vl, end = 8, off+int64(tl)+8
		case protowire.BytesType:
			length, ll := protowire.ConsumeVarint(b[tl:])
			vl = ll
			end = off + int64(tl) + int64(ll) + int64(length)
			if ll > 0 && (length > uint64(size) || end < off) {
				end = math.MaxInt64
			}
		default:
			return bad(fmt.Sprintf("wire type %d", typ))
		}
		if vl < 0 {
			return bad("a field value that does not parse")
		}
		if end > size && !partial {
			return bad(fmt.Sprintf("field %d runs past the end of the %d-byte file", num, size))
		}
		if fd := fields.ByNumber(num); fd != nil {
			want := protowire.BytesType // messages, strings, repeated packed
			if fd.Kind() == protoreflect.Int64Kind || fd.Kind() == protoreflect.Int32Kind {
				want = protowire.VarintType
			}
			if typ != want && !(fd.IsList() && typ == protowire.BytesType) {
				return bad(fmt.Sprintf("field %d (%s) with wire type %d", num, fd.Name(), typ))
			}
			graph = graph || fd.Name() == "graph"
		}
		if end > size {
			return nil // a field past what partial holds: the parse reads it
		}
		off = end
	}
	switch {
	case graph:
	case off < size: // writers put the graph among the first fields
		return fmt.Errorf("not an ONNX model: no graph in its first %d fields", maxTopFields)
	case !partial:
		return errors.New("not an ONNX model: no graph")
	}
	return nil
}

// externalReader reads an initializer's external data into t.RawData,
// adding what it read to h; nil where the model has no directory.
type externalReader func(t *onnxpb.TensorProto, h hash.Hash) error

func parse(data []byte, name string, external externalReader, mem *memory) (*Model, error) {
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(data, &mp); err != nil {
		return nil, fmt.Errorf("not an ONNX model (protobuf: %v)", err)
	}
	if mp.Graph == nil {
		return nil, errors.New("not an ONNX model: no graph")
	}
	h := sha256.New()
	h.Write(data)
	for _, t := range mp.Graph.Initializer {
		if t.GetDataLocation() != onnxpb.TensorProto_EXTERNAL {
			continue
		}
		if external == nil {
			return nil, fmt.Errorf("initializer %q is in an external data file, which a model given as bytes cannot have", t.GetName())
		}
		if err := external(t, h); err != nil {
			return nil, fmt.Errorf("initializer %q: %w", t.GetName(), err)
		}
	}
	m, err := build(&mp, mem)
	if err != nil {
		return nil, err
	}
	m.ID = "sha256:" + hex.EncodeToString(h.Sum(nil)[:16])
	m.Name = baseName(name)
	return m, nil
}

func baseName(name string) string {
	if i := strings.LastIndexAny(name, "/\\"); i >= 0 {
		return name[i+1:]
	}
	return name
}

func firstExternal(g *onnxpb.GraphProto) string {
	for _, t := range g.Initializer {
		if t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
			return t.GetName()
		}
	}
	return ""
}

// externalFrom reads external data from the files of fsys next to the
// model called name.
func externalFrom(fsys fs.FS, name string, mem *memory) externalReader {
	dir := path.Dir(name)
	return func(t *onnxpb.TensorProto, h hash.Hash) error {
		var loc, offText, lengthText string
		for _, kv := range t.ExternalData {
			switch kv.GetKey() {
			case "location":
				loc = kv.GetValue()
			case "offset":
				offText = kv.GetValue()
			case "length":
				lengthText = kv.GetValue()
			case "checksum":
			default:
				return fmt.Errorf("external data: unknown key %q", kv.GetKey())
			}
		}
		full, err := externalPath(dir, loc)
		if err != nil {
			return err
		}
		off, err := externalNumber(loc, "offset", offText, 0)
		if err != nil {
			return err
		}
		length, err := externalNumber(loc, "length", lengthText, -1)
		if err != nil {
			return err
		}
		n, err := nd.Numel(dims(t.Dims))
		if err != nil {
			return err
		}
		want := int64(n) * int64(nd.DType(t.GetDataType()).Size())
		f, err := fsys.Open(full)
		if err != nil {
			return fmt.Errorf("external data: %w", err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("external data: %w", err)
		}
		size := st.Size()
		if length < 0 {
			length = size - off
		}
		if length != want || off > size || length > size-off {
			return fmt.Errorf("external data %s: %d bytes at offset %d of a %d-byte file, the tensor's %v needs %d",
				loc, length, off, size, dims(t.Dims), want)
		}
		raw, err := mem.alloc(length, nil, func() string { return fmt.Sprintf("external data %s of initializer %q", loc, t.GetName()) })
		if err != nil {
			return err
		}
		if err := readAt(f, raw, off); err != nil {
			return fmt.Errorf("external data %s: %w", loc, err)
		}
		h.Write(raw)
		t.RawData = raw
		return nil
	}
}

// externalNumber parses an external data entry's offset or length: a
// number of bytes, 0 or more (def where the entry is left out).
func externalNumber(loc, key, text string, def int64) (int64, error) {
	if text == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("external data %s: %s %q is not a number of bytes", loc, key, text)
	case n < 0:
		return 0, fmt.Errorf("external data %s: %s %d is negative", loc, key, n)
	}
	return n, nil
}

// readAt fills p from f at offset off: with ReadAt where the file has it,
// else by seeking or by reading past what comes before.
func readAt(f fs.File, p []byte, off int64) error {
	switch r := f.(type) {
	case io.ReaderAt:
		_, err := r.ReadAt(p, off)
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	case io.Seeker:
		if _, err := r.Seek(off, io.SeekStart); err != nil {
			return err
		}
	default:
		if _, err := io.CopyN(io.Discard, f, off); err != nil {
			return err
		}
	}
	_, err := io.ReadFull(f, p)
	return err
}

func dims(d []int64) []int {
	out := make([]int, len(d))
	for i, v := range d {
		if v < 0 || v > nd.MaxElements {
			v = -1
		}
		out[i] = int(v)
	}
	return out
}

// externalPath resolves an external data location against the model's
// directory in its filesystem. The location must be a relative path that
// stays inside it: no absolute path, no "..", no URL.
func externalPath(dir, loc string) (string, error) {
	clean := path.Clean(strings.ReplaceAll(loc, "\\", "/"))
	switch {
	case loc == "":
		return "", errors.New("external data without a location")
	case strings.Contains(loc, "://"), path.IsAbs(clean), strings.HasPrefix(loc, "/"), len(loc) > 1 && loc[1] == ':',
		clean == "..", strings.HasPrefix(clean, "../"), clean == ".":
		return "", fmt.Errorf("external data location %q is outside the model's directory", loc)
	}
	full := path.Join(dir, clean)
	if !fs.ValidPath(full) {
		return "", fmt.Errorf("external data location %q is outside the model's directory", loc)
	}
	return full, nil
}
