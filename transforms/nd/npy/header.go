package npy

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// A .npy file starts with the magic string, the format version (major,
// minor), the header's length (2 bytes in version 1.0, 4 in 2.0 and 3.0,
// little-endian), and the header: a Python dict literal with the keys
// descr (the dtype), fortran_order and shape, padded with spaces and ended
// by a newline.
const (
	magic = "\x93NUMPY"
	// align is what NumPy pads the header to: the data starts on a
	// multiple of 64 bytes.
	align = 64
	// maxHeader bounds the header's length (NumPy's own headers of
	// numeric arrays take about a hundred bytes).
	maxHeader = 1 << 20
)

// descrs are the dtype descriptors of the element types, as NumPy writes
// them: '<' (little-endian) for the multi-byte types, '|' (no byte order)
// for the single-byte ones.
var descrs = map[nd.DType]string{
	nd.Bool: "|b1", nd.Int8: "|i1", nd.Uint8: "|u1",
	nd.Int16: "<i2", nd.Int32: "<i4", nd.Int64: "<i8",
	nd.Uint16: "<u2", nd.Uint32: "<u4", nd.Uint64: "<u8",
	nd.Float16: "<f2", nd.Float32: "<f4", nd.Float64: "<f8",
}

// kinds maps a descriptor's kind and size (without its byte order) to the
// element type.
var kinds = map[string]nd.DType{
	"b1": nd.Bool, "i1": nd.Int8, "u1": nd.Uint8,
	"i2": nd.Int16, "i4": nd.Int32, "i8": nd.Int64,
	"u2": nd.Uint16, "u4": nd.Uint32, "u8": nd.Uint64,
	"f2": nd.Float16, "f4": nd.Float32, "f8": nd.Float64,
}

// supported lists the types this package reads and writes, for errors.
const supported = "bool, int8 to int64, uint8 to uint64, float16, float32 and float64"

// ReadHeader reads the header of a .npy file from r, and nothing after it:
// r is then at the array's first byte (Header.Offset from the start).
// Input that is not a .npy file, a truncated or malformed header, and an
// array this package cannot read (big-endian, Fortran order, a structured
// or object dtype, complex numbers, strings) are errors that say which.
func ReadHeader(r io.Reader) (Header, error) {
	var pre [8]byte
	if n, err := io.ReadFull(r, pre[:]); err != nil {
		if n == 0 && err == io.EOF {
			return Header{}, fmt.Errorf("%w: the input is empty", errNotNPY)
		}
		if string(pre[:n]) != magic[:min(n, len(magic))] {
			return Header{}, errNotNPY
		}
		return Header{}, fmt.Errorf("npy: truncated: the input ends within the %d-byte preamble", len(pre))
	}
	if string(pre[:6]) != magic {
		return Header{}, errNotNPY
	}
	major, minor := pre[6], pre[7]
	var l [4]byte
	lenBytes := l[:4] // versions 2.0 and 3.0: a 4-byte length
	switch {
	case major == 1 && minor == 0:
		lenBytes = l[:2]
	case (major == 2 || major == 3) && minor == 0:
	default:
		return Header{}, fmt.Errorf("npy: format version %d.%d is not supported (want 1.0, 2.0 or 3.0)", major, minor)
	}
	if _, err := io.ReadFull(r, lenBytes); err != nil {
		return Header{}, fmt.Errorf("npy: truncated: the input ends within the header's length")
	}
	size := int(binary.LittleEndian.Uint32(l[:]))
	if size > maxHeader {
		return Header{}, fmt.Errorf("npy: a header of %d bytes, over the limit of %d: corrupt, or not an array of numbers", size, maxHeader)
	}
	text := make([]byte, size)
	if n, err := io.ReadFull(r, text); err != nil {
		return Header{}, fmt.Errorf("npy: truncated: the header declares %d bytes, the input holds %d", size, n)
	}
	h, err := parseHeader(string(text))
	if err != nil {
		return Header{}, fmt.Errorf("npy: header %q: %w", clip(strings.TrimSpace(string(text)), 200), err)
	}
	h.Offset = int64(len(pre) + len(lenBytes) + size)
	return h, nil
}

// EncodeHeader returns the header of a .npy file holding an array of type
// t and shape in C order, as NumPy writes it (version 1.0 unless the
// header needs 2.0's longer length; the data starts on a multiple of 64
// bytes). The array's little-endian bytes follow it: this is how a file
// too large to hold is written row by row.
func EncodeHeader(t nd.DType, shape []int) ([]byte, error) {
	descr, ok := descrs[t]
	if !ok {
		why := "NumPy has no such type"
		if t == nd.BFloat16 {
			why = "NumPy has no bfloat16: convert the array to float32 first (nd.Convert)"
		}
		return nil, fmt.Errorf("npy: element type %v cannot be written: %s (this package writes %s)", t, why, supported)
	}
	if _, err := nd.Numel(shape); err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += "," // Python's one-element tuple
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, tuple)
	// Version 1.0 has a 2-byte length; a longer header takes version 2.0
	// and a 4-byte length. The text is padded with spaces and ends with a
	// newline, so that the data starts on a multiple of align.
	v1 := len(dict)+1+align <= math.MaxUint16
	prefix := len(magic) + 2 + 4
	if v1 {
		prefix = len(magic) + 2 + 2
	}
	pad := align - (prefix+len(dict)+1)%align
	text := dict + strings.Repeat(" ", pad) + "\n"
	b := make([]byte, 0, prefix+len(text))
	b = append(b, magic...)
	if v1 {
		b = append(b, 1, 0)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(text)))
	} else {
		b = append(b, 2, 0)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(text)))
	}
	return append(b, text...), nil
}

// parseHeader reads the header's dict: its descr, fortran_order and shape,
// and nothing else.
func parseHeader(text string) (Header, error) {
	p := &parser{s: text}
	fields, err := p.dict()
	if err != nil {
		return Header{}, err
	}
	if rest := strings.TrimSpace(p.s[p.i:]); rest != "" {
		return Header{}, fmt.Errorf("text after the dict: %q", clip(rest, 40))
	}
	for _, key := range []string{"descr", "fortran_order", "shape"} {
		if _, ok := fields[key]; !ok {
			return Header{}, fmt.Errorf("no %q key: not the header of a NumPy array", key)
		}
	}
	for key := range fields {
		switch key {
		case "descr", "fortran_order", "shape":
		default:
			return Header{}, fmt.Errorf("unknown key %q (NumPy's headers have descr, fortran_order and shape only)", key)
		}
	}
	var h Header
	d := fields["descr"]
	switch d.kind {
	case kindString:
		if h.Type, err = dtypeOf(d.s); err != nil {
			return Header{}, err
		}
	case kindList:
		return Header{}, fmt.Errorf("a structured dtype (a record of named fields) is not supported: save each field as an array of its own (this package reads %s)", supported)
	default:
		return Header{}, fmt.Errorf("descr is not a dtype string")
	}
	switch f := fields["fortran_order"]; {
	case f.kind != kindBool:
		return Header{}, fmt.Errorf("fortran_order is not True or False")
	case f.b:
		return Header{}, fmt.Errorf("the array is in Fortran order (column major): save it in C order (numpy.ascontiguousarray)")
	}
	s := fields["shape"]
	if s.kind != kindTuple {
		return Header{}, fmt.Errorf("shape is not a tuple of sizes")
	}
	h.Shape = s.ints
	if _, err := nd.Numel(h.Shape); err != nil { // at most 2^40 elements: no overflow below
		return Header{}, err
	}
	return h, nil
}

// dtypeOf returns the element type of a dtype descriptor ('<f4', '|u1').
func dtypeOf(descr string) (nd.DType, error) {
	order, kind := byte(0), descr
	if descr != "" && strings.IndexByte("<>|=", descr[0]) >= 0 {
		order, kind = descr[0], descr[1:]
	}
	if strings.HasPrefix(kind, "O") {
		return 0, fmt.Errorf("dtype %q: the array holds Python objects, which .npy stores pickled; this package reads arrays of numbers and never unpickles (save an array of %s)", descr, supported)
	}
	t, ok := kinds[kind]
	if !ok {
		what := ""
		if kind != "" {
			switch kind[0] {
			case 'c':
				what = " (complex numbers)"
			case 'U', 'S', 'a':
				what = " (strings)"
			case 'V':
				what = " (raw bytes: a void or extension type such as bfloat16)"
			case 'M', 'm':
				what = " (dates or times)"
			}
		}
		return 0, fmt.Errorf("dtype %q%s is not supported (this package reads %s)", descr, what, supported)
	}
	switch {
	case t.Size() == 1: // a single byte has no byte order
	case order == '<':
	case order == '>':
		return 0, fmt.Errorf("dtype %q is big-endian: save the array little-endian (x.astype('<%s'))", descr, kind)
	default:
		return 0, fmt.Errorf("dtype %q does not say it is little-endian: want '<%s' (NumPy writes the byte order of every multi-byte type)", descr, kind)
	}
	return t, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// The kinds of value a header's dict holds.
const (
	kindString = iota + 1
	kindBool
	kindTuple
	kindList
)

type value struct {
	kind int
	s    string
	b    bool
	ints []int
}

// parser reads the Python literals of a header: a dict of string keys
// whose values are strings, True or False, tuples of sizes, or lists (a
// structured dtype's fields, skipped).
type parser struct {
	s string
	i int
}

func (p *parser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

// next skips white space and reports whether the next character is c,
// taking it if so.
func (p *parser) next(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *parser) dict() (map[string]value, error) {
	if !p.next('{') {
		return nil, p.errorf("not a dict")
	}
	fields := map[string]value{}
	for !p.next('}') {
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if !p.next(':') {
			return nil, p.errorf("no ':' after the key %q", key)
		}
		v, err := p.value()
		if err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
		if _, dup := fields[key]; dup {
			return nil, p.errorf("the key %q twice", key)
		}
		fields[key] = v
		if !p.next(',') {
			if !p.next('}') {
				return nil, p.errorf("no ',' or '}' after the value of %q", key)
			}
			break
		}
	}
	return fields, nil
}

// str reads a quoted string (no escapes: NumPy's keys and descriptors
// have none).
func (p *parser) str() (string, error) {
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != '\'' && p.s[p.i] != '"' {
		return "", p.errorf("not a quoted string")
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", p.errorf("a string without its closing quote")
	}
	s := p.s[p.i+1 : p.i+1+end]
	if strings.ContainsRune(s, '\\') {
		return "", p.errorf("a string with escapes")
	}
	p.i += end + 2
	return s, nil
}

func (p *parser) value() (value, error) {
	p.space()
	switch {
	case p.i >= len(p.s):
		return value{}, p.errorf("the header ends before the value")
	case p.s[p.i] == '\'' || p.s[p.i] == '"':
		s, err := p.str()
		return value{kind: kindString, s: s}, err
	case strings.HasPrefix(p.s[p.i:], "True"):
		p.i += 4
		return value{kind: kindBool, b: true}, nil
	case strings.HasPrefix(p.s[p.i:], "False"):
		p.i += 5
		return value{kind: kindBool}, nil
	case p.s[p.i] == '(':
		p.i++
		return p.tuple()
	case p.s[p.i] == '[':
		return value{kind: kindList}, p.skipList()
	}
	return value{}, p.errorf("not a string, True, False, a tuple or a list")
}

// tuple reads the sizes of a shape up to its ')': non-negative integers,
// with the trailing 'L' of Python 2's long integers allowed.
func (p *parser) tuple() (value, error) {
	v := value{kind: kindTuple, ints: []int{}}
	for !p.next(')') {
		p.space()
		start := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		digits := p.s[start:p.i]
		if p.i < len(p.s) && p.s[p.i] == 'L' {
			p.i++
		}
		d, err := strconv.Atoi(digits)
		if err != nil || len(digits) > 18 {
			return value{}, p.errorf("a size that is not a non-negative integer: %q", clip(p.s[start:], 20))
		}
		v.ints = append(v.ints, d)
		if !p.next(',') {
			if !p.next(')') {
				return value{}, p.errorf("no ',' or ')' after a size")
			}
			break
		}
	}
	return v, nil
}

// skipList skips a list, nested brackets and quoted strings included.
func (p *parser) skipList() error {
	depth := 0
	for p.i < len(p.s) {
		switch c := p.s[p.i]; c {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '\'', '"':
			if _, err := p.str(); err != nil {
				return err
			}
			continue
		}
		p.i++
		if depth == 0 {
			return nil
		}
	}
	return p.errorf("a list without its closing ']'")
}
