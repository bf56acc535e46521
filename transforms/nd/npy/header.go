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

// parseHeader reads the header's dict, as numpy.lib.format reads it: the
// text is a Python literal (format.py parses it with ast.literal_eval),
// here parsed by its grammar (parseLiteral), then checked as NumPy checks
// it (a dict of exactly the keys descr, fortran_order and shape; shape a
// tuple of integers; fortran_order a bool), and more strictly where
// NumPy's reader would quietly take what its writer never writes: a key
// given twice (Python keeps the last), a shape that is a parenthesised
// integer rather than a tuple. The dtype must be one this package reads.
func parseHeader(text string) (Header, error) {
	v, err := parseLiteral(text)
	if err != nil {
		return Header{}, err
	}
	if v.kind != litDict {
		return Header{}, fmt.Errorf("not a dict but %s: not the header of a NumPy array", v.kind)
	}
	fields := map[string]literal{}
	for i, key := range v.keys {
		if _, dup := fields[key]; dup {
			return Header{}, fmt.Errorf("the key %q twice (NumPy writes each key once; which one holds is unknown)", key)
		}
		fields[key] = v.items[i]
	}
	for _, key := range v.keys {
		switch key {
		case "descr", "fortran_order", "shape":
		default:
			return Header{}, fmt.Errorf("unknown key %q (NumPy's headers have descr, fortran_order and shape only)", key)
		}
	}
	for _, key := range []string{"descr", "fortran_order", "shape"} {
		if _, ok := fields[key]; !ok {
			return Header{}, fmt.Errorf("no %q key: not the header of a NumPy array", key)
		}
	}
	var h Header
	switch d := fields["descr"]; d.kind {
	case litStr:
		if h.Type, err = dtypeOf(d.s); err != nil {
			return Header{}, err
		}
	case litList:
		return Header{}, fmt.Errorf("a structured dtype (a record of named fields) is not supported: save each field as an array of its own (this package reads %s)", supported)
	default:
		return Header{}, fmt.Errorf("descr is %s, not a dtype string such as '<f4'", d.kind)
	}
	switch f := fields["fortran_order"]; {
	case f.kind != litBool:
		return Header{}, fmt.Errorf("fortran_order is %s, not True or False", f.kind)
	case f.b:
		return Header{}, fmt.Errorf("the array is in Fortran order (column major): save it in C order (numpy.ascontiguousarray)")
	}
	s := fields["shape"]
	switch {
	case s.kind == litInt && s.paren:
		return Header{}, fmt.Errorf("shape is (%d), the integer %d in Python, not a tuple: a one-axis shape is written (%d,)", s.n, s.n, s.n)
	case s.kind != litTuple:
		return Header{}, fmt.Errorf("shape is %s, not a tuple of sizes", s.kind)
	}
	h.Shape = make([]int, len(s.items))
	for i, d := range s.items {
		if d.kind != litInt || d.n < 0 {
			return Header{}, fmt.Errorf("shape: axis %d is %s, not a non-negative integer", i, d.describe())
		}
		h.Shape[i] = int(d.n)
	}
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

// litKind is the kind of a Python literal.
type litKind int

// The kinds of literal a header holds.
const (
	litStr litKind = iota + 1
	litInt
	litBool
	litNone
	litTuple
	litList
	litDict
)

func (k litKind) String() string {
	switch k {
	case litStr:
		return "a string"
	case litInt:
		return "an integer"
	case litBool:
		return "a bool"
	case litNone:
		return "None"
	case litTuple:
		return "a tuple"
	case litList:
		return "a list"
	case litDict:
		return "a dict"
	}
	return "nothing"
}

// literal is a parsed Python literal: a string, an integer, True or
// False, None, or a tuple, list or dict of literals (a dict's keys are
// strings, in keys, its values in items).
type literal struct {
	kind  litKind
	s     string
	n     int64
	b     bool
	items []literal
	keys  []string
	// paren is set on a value written in parentheses without a comma:
	// Python's (3) is the integer 3, not a tuple.
	paren bool
}

func (v literal) describe() string {
	switch v.kind {
	case litInt:
		return strconv.FormatInt(v.n, 10)
	case litBool:
		if v.b {
			return "True"
		}
		return "False"
	case litStr:
		return strconv.Quote(clip(v.s, 20))
	}
	return v.kind.String()
}

// maxDepth bounds how deep literals nest: NumPy's headers nest three deep
// (a structured dtype's list of tuples), so that a header of a megabyte of
// '[' is an error, not a deep recursion.
const maxDepth = 32

// parseLiteral parses text as one Python literal, as ast.literal_eval
// does for what NumPy writes: strings in single or double quotes (without
// escapes or prefixes), decimal integers (Python 2's trailing L allowed,
// as NumPy's reader allows it), True, False, None, and tuples, lists and
// dicts (string keys) of them, with white space between tokens and
// trailing commas. Anything else (another expression, a name, a float,
// text after the literal) is an error that says where.
func parseLiteral(text string) (literal, error) {
	p := &parser{s: text}
	v, err := p.value(0)
	if err != nil {
		return literal{}, err
	}
	p.space()
	if p.i < len(p.s) {
		return literal{}, p.errorf("text after the %s: %q", strings.TrimPrefix(strings.TrimPrefix(v.kind.String(), "an "), "a "), clip(p.s[p.i:], 40))
	}
	return v, nil
}

// parser reads a Python literal from s, at i.
type parser struct {
	s string
	i int
}

// space skips white space (newlines included: the header's literal is
// one bracketed expression, in which Python allows them).
func (p *parser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n\f\v", p.s[p.i]) >= 0 {
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

func (p *parser) value(depth int) (literal, error) {
	if depth > maxDepth {
		return literal{}, p.errorf("literals nested deeper than %d", maxDepth)
	}
	p.space()
	if p.i >= len(p.s) {
		return literal{}, p.errorf("the header ends where a value is expected")
	}
	switch c := p.s[p.i]; {
	case c == '\'' || c == '"':
		s, err := p.str()
		return literal{kind: litStr, s: s}, err
	case c == '-' || c >= '0' && c <= '9':
		return p.integer()
	case c == '{':
		p.i++
		return p.dict(depth)
	case c == '[':
		p.i++
		items, _, err := p.sequence(']', depth)
		return literal{kind: litList, items: items}, err
	case c == '(':
		p.i++
		items, comma, err := p.sequence(')', depth)
		if err == nil && len(items) == 1 && !comma { // (x) is x
			v := items[0]
			v.paren = true
			return v, nil
		}
		return literal{kind: litTuple, items: items}, err
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		start := p.i
		for p.i < len(p.s) && (p.s[p.i] == '_' || p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= 'A' && p.s[p.i] <= 'Z' || p.s[p.i] >= '0' && p.s[p.i] <= '9') {
			p.i++
		}
		switch name := p.s[start:p.i]; name {
		case "True", "False":
			return literal{kind: litBool, b: name == "True"}, nil
		case "None":
			return literal{kind: litNone}, nil
		default:
			p.i = start
			return literal{}, p.errorf("%q is not a literal NumPy writes (a string, an integer, True, False, None, a tuple, a list or a dict)", clip(name, 20))
		}
	}
	return literal{}, p.errorf("%q is not a literal NumPy writes (a string, an integer, True, False, None, a tuple, a list or a dict)", clip(p.s[p.i:], 20))
}

// sequence reads the items of a tuple or list up to its closing bracket,
// and whether a comma followed the last.
func (p *parser) sequence(end byte, depth int) (items []literal, comma bool, err error) {
	items = []literal{}
	for !p.next(end) {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, false, err
		}
		items = append(items, v)
		if comma = p.next(','); !comma {
			if !p.next(end) {
				return nil, false, p.errorf("no ',' or '%c' after an item", end)
			}
			break
		}
	}
	return items, comma, nil
}

func (p *parser) dict(depth int) (literal, error) {
	v := literal{kind: litDict}
	for !p.next('}') {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '\'' && p.s[p.i] != '"' {
			return literal{}, p.errorf("a dict key that is not a quoted string (NumPy's keys are strings)")
		}
		key, err := p.str()
		if err != nil {
			return literal{}, err
		}
		if !p.next(':') {
			return literal{}, p.errorf("no ':' after the key %q", key)
		}
		val, err := p.value(depth + 1)
		if err != nil {
			return literal{}, fmt.Errorf("%q: %w", key, err)
		}
		v.keys, v.items = append(v.keys, key), append(v.items, val)
		if !p.next(',') {
			if !p.next('}') {
				return literal{}, p.errorf("no ',' or '}' after the value of %q", key)
			}
			break
		}
	}
	return v, nil
}

// str reads a quoted string. NumPy's keys and dtype descriptors have no
// escapes, so a backslash is refused rather than interpreted, and so is a
// string that runs over a line (which Python refuses).
func (p *parser) str() (string, error) {
	q := p.s[p.i]
	for j := p.i + 1; j < len(p.s); j++ {
		switch p.s[j] {
		case q:
			s := p.s[p.i+1 : j]
			p.i = j + 1
			return s, nil
		case '\\':
			p.i = j
			return "", p.errorf("a string with an escape (\\): NumPy's keys and dtype descriptors have none")
		case '\n':
			p.i = j
			return "", p.errorf("a string without its closing quote")
		}
	}
	p.i = len(p.s)
	return "", p.errorf("a string without its closing quote")
}

// integer reads a decimal integer, with an optional minus sign and
// Python 2's long suffix L: no leading zeros (Python 3 refuses them), at
// most 18 digits.
func (p *parser) integer() (literal, error) {
	start := p.i
	neg := false
	if p.s[p.i] == '-' {
		neg = true
		p.i++
		p.space()
	}
	digits := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	d := p.s[digits:p.i]
	switch {
	case d == "":
		p.i = start
		return literal{}, p.errorf("%q is not an integer", clip(p.s[start:], 20))
	case len(d) > 18:
		p.i = start
		return literal{}, p.errorf("an integer of %d digits: too large for a size", len(d))
	case len(d) > 1 && d[0] == '0':
		p.i = start
		return literal{}, p.errorf("%q: an integer with a leading zero, which Python refuses", clip(d, 20))
	}
	if p.i < len(p.s) && (p.s[p.i] == 'L' || p.s[p.i] == 'l') {
		p.i++
	}
	if p.i < len(p.s) && (p.s[p.i] == '.' || p.s[p.i] == 'e' || p.s[p.i] == 'E' || p.s[p.i] == 'x' || p.s[p.i] == '_' || p.s[p.i] == 'j') {
		p.i = start
		return literal{}, p.errorf("%q is not a decimal integer", clip(p.s[start:], 20))
	}
	n, _ := strconv.ParseInt(d, 10, 64) // at most 18 digits: no overflow
	if neg {
		n = -n
	}
	return literal{kind: litInt, n: n}, nil
}
