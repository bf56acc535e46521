package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/step/files"
)

// npyInfo is what the header of a .npy file says: the element type, the
// shape and where the data starts. Only the header is read: the rows are
// read by range, in the workers.
type npyInfo struct {
	Type   nd.DType
	Shape  []int
	Offset int64
}

// Rows is the length of axis 0.
func (h npyInfo) Rows() int { return h.Shape[0] }

// RowBytes is the size of one row (axis 0) in bytes.
func (h npyInfo) RowBytes() int {
	n := h.Type.Size()
	for _, d := range h.Shape[1:] {
		n *= d
	}
	return n
}

// npyTypes are the NumPy descriptors this reader takes (little-endian, or
// byte-sized), and their types.
var npyTypes = map[string]nd.DType{
	"<f4": nd.Float32, "<f8": nd.Float64, "<f2": nd.Float16,
	"<i8": nd.Int64, "<i4": nd.Int32, "<i2": nd.Int16, "|i1": nd.Int8, "<i1": nd.Int8,
	"|u1": nd.Uint8, "<u1": nd.Uint8, "<u2": nd.Uint16, "<u4": nd.Uint32, "<u8": nd.Uint64,
	"|b1": nd.Bool, "<b1": nd.Bool,
}

var (
	descrRe   = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	fortranRe = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	shapeRe   = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

// readNPYHeader reads the header of the .npy file at path (local or any
// Beam filesystem), and nothing else.
func readNPYHeader(ctx context.Context, path string) (npyInfo, error) {
	r, err := files.OpenRead(ctx, path)
	if err != nil {
		return npyInfo{}, err
	}
	defer r.Close()
	h, err := parseNPYHeader(bufio.NewReaderSize(r, 4096))
	if err != nil {
		return h, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// parseNPYHeader parses a .npy header (format versions 1, 2 and 3).
func parseNPYHeader(r io.Reader) (npyInfo, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil || string(pre[:6]) != "\x93NUMPY" {
		return npyInfo{}, fmt.Errorf("not a .npy file (no \\x93NUMPY magic)")
	}
	var n int64
	off := int64(8)
	switch pre[6] {
	case 1:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return npyInfo{}, fmt.Errorf("truncated .npy header: %w", err)
		}
		n, off = int64(binary.LittleEndian.Uint16(l[:])), off+2
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return npyInfo{}, fmt.Errorf("truncated .npy header: %w", err)
		}
		n, off = int64(binary.LittleEndian.Uint32(l[:])), off+4
	default:
		return npyInfo{}, fmt.Errorf(".npy format version %d.%d is not supported", pre[6], pre[7])
	}
	if n > 1<<20 {
		return npyInfo{}, fmt.Errorf(".npy header of %d bytes: too large", n)
	}
	dict := make([]byte, n)
	if _, err := io.ReadFull(r, dict); err != nil {
		return npyInfo{}, fmt.Errorf("truncated .npy header: %w", err)
	}
	h := npyInfo{Offset: off + n}
	m := descrRe.FindSubmatch(dict)
	if m == nil {
		return h, fmt.Errorf(".npy header without a descr: %q", dict)
	}
	t, ok := npyTypes[string(m[1])]
	if !ok {
		return h, fmt.Errorf(".npy dtype %q is not supported (want a little-endian float32, float64, int64, int32, uint8 or bool array, ...)", m[1])
	}
	h.Type = t
	if m := fortranRe.FindSubmatch(dict); m == nil || string(m[1]) != "False" {
		return h, fmt.Errorf(".npy array in Fortran order (or without fortran_order): save it in C order (np.ascontiguousarray)")
	}
	m = shapeRe.FindSubmatch(dict)
	if m == nil {
		return h, fmt.Errorf(".npy header without a shape: %q", dict)
	}
	for _, f := range strings.Split(string(m[1]), ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := strconv.Atoi(f)
		if err != nil || d < 0 {
			return h, fmt.Errorf(".npy shape (%s): %q is not a size", m[1], f)
		}
		h.Shape = append(h.Shape, d)
	}
	if len(h.Shape) == 0 {
		return h, fmt.Errorf(".npy array is a scalar: want rows along axis 0")
	}
	if _, err := nd.Numel(h.Shape); err != nil {
		return h, fmt.Errorf(".npy shape %v: %w", h.Shape, err)
	}
	return h, nil
}

// npyDescr is the NumPy descriptor of t.
func npyDescr(t nd.DType) (string, error) {
	for d, tt := range npyTypes {
		if tt == t && (d[0] == '<' && t.Size() > 1 || d[0] == '|' && t.Size() == 1) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no .npy type for %v", t)
}

// npyHeader is the header (format 2.0) of a C-order array of t and shape,
// padded to a multiple of 16 bytes as NumPy writes it.
func npyHeader(t nd.DType, shape []int) ([]byte, error) {
	descr, err := npyDescr(t)
	if err != nil {
		return nil, err
	}
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	s := strings.Join(dims, ", ")
	if len(shape) == 1 {
		s += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, s)
	const fixed = 6 + 2 + 4 // magic, version, 4-byte length
	if pad := (fixed + len(dict) + 1) % 16; pad != 0 {
		dict += strings.Repeat(" ", 16-pad)
	}
	dict += "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x02\x00")
	binary.Write(&b, binary.LittleEndian, uint32(len(dict)))
	b.WriteString(dict)
	return b.Bytes(), nil
}
