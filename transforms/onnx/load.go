package onnx

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
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
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxModelBytes {
		return nil, fmt.Errorf("%d bytes, more than a model file may have (%d; larger weights go in external data files)", st.Size(), MaxModelBytes)
	}
	data, err := readAtMost(f, MaxModelBytes)
	if err != nil {
		return nil, err
	}
	return parse(data, name, externalFrom(fsys, name))
}

// Read reads, checks and prepares the model that r holds (at most
// MaxModelBytes), named name in errors. It refuses external data: there is
// no directory to read it from (Load reads it).
func Read(r io.Reader, name string) (*Model, error) {
	data, err := readAtMost(r, MaxModelBytes)
	if err == nil {
		var m *Model
		if m, err = parse(data, name, nil); err == nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("onnx: %s: %w", name, err)
}

// Parse is Read for a model in memory.
func Parse(data []byte, name string) (*Model, error) {
	m, err := parse(data, name, nil)
	if err != nil {
		return nil, fmt.Errorf("onnx: %s: %w", name, err)
	}
	return m, nil
}

// readAtMost reads r whole, refusing more than limit bytes.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("more than %d bytes, more than a model file may have (larger weights go in external data files)", limit)
	}
	return data, nil
}

// externalReader reads an initializer's external data into t.RawData,
// adding what it read to h; nil where the model has no directory.
type externalReader func(t *onnxpb.TensorProto, h hash.Hash) error

func parse(data []byte, name string, external externalReader) (*Model, error) {
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
	m, err := build(&mp)
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
func externalFrom(fsys fs.FS, name string) externalReader {
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
		raw := nd.Bytes(int(length))
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
