package npy_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/nd/npy"
	npyio "github.com/sbinet/npyio/npy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allTypes are the element types a .npy file holds.
var allTypes = []nd.DType{nd.Bool, nd.Int8, nd.Int16, nd.Int32, nd.Int64, nd.Uint8, nd.Uint16, nd.Uint32, nd.Uint64,
	nd.Float16, nd.Float32, nd.Float64}

// random returns an array of t and shape with random bytes (bools 0 or 1).
func random(t *testing.T, typ nd.DType, shape ...int) nd.Array {
	t.Helper()
	a, err := nd.New(typ, shape...)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(uint64(typ), uint64(len(a.Data))))
	for i := range a.Data {
		a.Data[i] = byte(r.Uint32())
		if typ == nd.Bool {
			a.Data[i] &= 1
		}
	}
	return a
}

// Every type and shape (a scalar, no rows, a vector, a matrix, more axes)
// comes back as it went, from a header that starts the data on a multiple
// of 64 bytes, as NumPy writes it.
func TestRoundTripEveryType(t *testing.T) {
	for _, typ := range allTypes {
		for _, shape := range [][]int{{}, {0}, {0, 3}, {5}, {3, 4}, {2, 3, 4, 5}} {
			a := random(t, typ, shape...)
			var buf bytes.Buffer
			require.NoError(t, npy.Write(&buf, a), "%v %v", typ, shape)
			hdr, err := npy.ReadHeader(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			assert.Zero(t, hdr.Offset%64, "%v %v: the data starts on a multiple of 64", typ, shape)
			assert.Equal(t, int64(buf.Len()), hdr.Offset+hdr.DataBytes())
			got, err := npy.Read(&buf)
			require.NoError(t, err, "%v %v", typ, shape)
			assert.Equal(t, a.Type, got.Type)
			assert.Equal(t, a.Shape, got.Shape, "%v %v", typ, shape)
			assert.Equal(t, a.Data, got.Data, "%v %v", typ, shape)
			assert.Zero(t, buf.Len(), "Read reads the array and nothing after it")
		}
	}
}

// ReadFile and WriteFile; a file's errors name it.
func TestFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.npy")
	a := nd.Of([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	require.NoError(t, npy.WriteFile(path, a))
	got, err := npy.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, a, got)
	f32, err := nd.As[float32](got)
	require.NoError(t, err, "the data is aligned for its type")
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6}, f32)

	require.NoError(t, os.WriteFile(path, []byte("not an array"), 0o644))
	_, err = npy.ReadFile(path)
	assert.ErrorContains(t, err, path+": npy: not a .npy file")
	_, err = npy.ReadFile(filepath.Join(t.TempDir(), "missing.npy"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// The header is byte for byte what NumPy writes for the same array
// (numpy.save of numpy.zeros((2, 3), '<f4'), and a vector, whose shape is a
// one-element tuple).
func TestHeaderAsNumPyWritesIt(t *testing.T) {
	for _, c := range []struct {
		typ   nd.DType
		shape []int
		dict  string
	}{
		{nd.Float32, []int{2, 3}, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
		{nd.Uint8, []int{7}, "{'descr': '|u1', 'fortran_order': False, 'shape': (7,), }"},
		{nd.Bool, []int{}, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }"},
	} {
		h, err := npy.EncodeHeader(c.typ, c.shape)
		require.NoError(t, err)
		want := "\x93NUMPY\x01\x00" + string(binary.LittleEndian.AppendUint16(nil, 118)) + c.dict +
			strings.Repeat(" ", 128-10-len(c.dict)-1) + "\n"
		assert.Equal(t, want, string(h), "%v %v", c.typ, c.shape)
	}
}

// A header too long for version 1.0's 2-byte length is written as 2.0.
func TestLongHeaderIsVersion2(t *testing.T) {
	shape := make([]int, 30000) // "1, " each: over 64 KiB of header
	for i := range shape {
		shape[i] = 1
	}
	h, err := npy.EncodeHeader(nd.Int8, shape)
	require.NoError(t, err)
	assert.Equal(t, []byte{2, 0}, h[6:8])
	assert.Zero(t, len(h)%64)
	got, err := npy.ReadHeader(bytes.NewReader(h))
	require.NoError(t, err)
	assert.Equal(t, shape, got.Shape)
	assert.Equal(t, int64(len(h)), got.Offset)
}

// Another implementation (github.com/sbinet/npyio) reads what Write
// writes, and Read reads what it writes (its headers are version 2.0).
func TestOtherImplementation(t *testing.T) {
	a := nd.Of([]float64{0.5, -1, 3e300, 4}, 2, 2)
	var buf bytes.Buffer
	require.NoError(t, npy.Write(&buf, a))
	r, err := npyio.NewReader(&buf)
	require.NoError(t, err)
	var got []float64
	require.NoError(t, r.Read(&got))
	assert.Equal(t, []float64{0.5, -1, 3e300, 4}, got)
	assert.Equal(t, []int{2, 2}, r.Header.Descr.Shape)

	buf.Reset()
	require.NoError(t, npyio.Write(&buf, []int16{1, -2, 3}))
	back, err := npy.Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, nd.Of([]int16{1, -2, 3}, 3), back)
}

// npyFile is a .npy file with the header text dict (version 1.0) and data.
func npyFile(dict string, data []byte) []byte {
	text := dict + "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), binary.LittleEndian.AppendUint16(nil, uint16(len(text)))...)
	return append(append(b, text...), data...)
}

// What NumPy writes that this package does not read, and input that is
// not a .npy file or is damaged, are refused with an error that says what
// is wrong, never a panic or a huge allocation.
func TestRefused(t *testing.T) {
	dict := func(descr, fortran, shape string) string {
		return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }"
	}
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "not a .npy file"},
		{"text", []byte("hello, world"), "not a .npy file"},
		{"short magic", []byte("\x93NUM"), "truncated"},
		{"version 4.0", []byte("\x93NUMPY\x04\x00\x10\x00"), "format version 4.0 is not supported"},
		{"no length", []byte("\x93NUMPY\x01\x00\x10"), "truncated"},
		{"header cut", []byte("\x93NUMPY\x01\x00\x40\x00{'descr'"), "the header declares 64 bytes, the input holds 8"},
		{"huge header", []byte("\x93NUMPY\x02\x00\x00\x00\x00\x40"), "over the limit"},
		{"big-endian", npyFile(dict("'>f4'", "False", "(2,)"), make([]byte, 8)), `dtype ">f4" is big-endian: save the array little-endian (x.astype('<f4'))`},
		{"pickled objects", npyFile(dict("'|O'", "False", "(2,)"), make([]byte, 16)), "Python objects, which .npy stores pickled"},
		{"old pickled objects", npyFile(dict("'|O8'", "False", "(2,)"), make([]byte, 16)), "never unpickles"},
		{"structured", npyFile(dict("[('x', '<f4'), ('y', '<i4')]", "False", "(2,)"), make([]byte, 16)), "structured dtype"},
		{"complex", npyFile(dict("'<c8'", "False", "(2,)"), make([]byte, 16)), "complex numbers"},
		{"strings", npyFile(dict("'<U3'", "False", "(2,)"), make([]byte, 24)), "strings"},
		{"no byte order", npyFile(dict("'=f4'", "False", "(2,)"), make([]byte, 8)), "does not say it is little-endian"},
		{"fortran order", npyFile(dict("'<f4'", "True", "(2, 2)"), make([]byte, 16)), "Fortran order"},
		{"negative size", npyFile(dict("'<f4'", "False", "(-2,)"), nil), "not a non-negative integer"},
		{"too many elements", npyFile(dict("'<f4'", "False", "(1048576, 1048576, 1048576)"), nil), "more elements than an array may hold"},
		{"no shape", npyFile("{'descr': '<f4', 'fortran_order': False}", nil), `no "shape" key`},
		{"unknown key", npyFile(dict("'<f4'", "False", "(1,)")[:len(dict("'<f4'", "False", "(1,)"))-1]+"'extra': 1}", nil), `unknown key "extra"`},
		{"extra string key", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 'y'}", make([]byte, 4)), `unknown key "x"`},
		{"key twice", npyFile("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", make([]byte, 4)), "twice"},
		// NumPy takes the last of a key given twice (Python's dict), a
		// reader of the first one the first: Fortran-order data read as C
		// order, or C order refused. Refused either way.
		{"fortran_order twice, last True", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'fortran_order': True}", make([]byte, 16)), `the key "fortran_order" twice`},
		{"fortran_order twice, last False", npyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), 'fortran_order': False}", make([]byte, 16)), `the key "fortran_order" twice`},
		// A structured dtype whose field is called descr holds the text
		// 'descr': '<f4' inside its list: it is still a structured dtype.
		{"structured, a field named descr", npyFile("{'descr': [('descr', '<f4'), ('y', '<i4')], 'fortran_order': False, 'shape': (2,), }", make([]byte, 16)), "structured dtype"},
		{"structured, nested", npyFile("{'descr': [('a', [('descr', '<f4')], (2,))], 'fortran_order': False, 'shape': (2,), }", make([]byte, 16)), "structured dtype"},
		{"descr a dict", npyFile("{'descr': {'descr': '<f4'}, 'fortran_order': False, 'shape': (2,), }", make([]byte, 8)), "descr is a dict, not a dtype string"},
		{"shape an integer in parentheses", npyFile(dict("'<f4'", "False", "(3)"), make([]byte, 12)), "shape is (3), the integer 3 in Python, not a tuple"},
		{"shape a list", npyFile(dict("'<f4'", "False", "[3]"), make([]byte, 12)), "shape is a list, not a tuple of sizes"},
		{"shape of bools", npyFile(dict("'<f4'", "False", "(True,)"), make([]byte, 4)), "axis 0 is True, not a non-negative integer"},
		{"shape of floats", npyFile(dict("'<f4'", "False", "(3.0,)"), make([]byte, 12)), "not a decimal integer"},
		{"shape in hex", npyFile(dict("'<f4'", "False", "(0x3,)"), make([]byte, 12)), "not a decimal integer"},
		{"leading zero", npyFile(dict("'<f4'", "False", "(03,)"), make([]byte, 12)), "leading zero"},
		{"huge size", npyFile(dict("'<f4'", "False", "(1000000000000000000000,)"), nil), "too large"},
		{"fortran_order an integer", npyFile(dict("'<f4'", "0", "(1,)"), make([]byte, 4)), "fortran_order is an integer, not True or False"},
		{"fortran_order a string", npyFile(dict("'<f4'", "'False'", "(1,)"), make([]byte, 4)), "fortran_order is a string, not True or False"},
		{"a name", npyFile(dict("'<f4'", "false", "(1,)"), make([]byte, 4)), `"false" is not a literal NumPy writes`},
		{"an expression", npyFile(dict("'<f4'", "False", "(1+1,)"), make([]byte, 8)), "no ',' or ')' after an item"},
		{"an escape", npyFile(dict(`'<f\x34'`, "False", "(1,)"), make([]byte, 4)), "a string with an escape"},
		{"a key that is not a string", npyFile("{1: '<f4', 'fortran_order': False, 'shape': (1,)}", make([]byte, 4)), "a dict key that is not a quoted string"},
		{"nested too deep", npyFile("{'descr': "+strings.Repeat("[", 100)+strings.Repeat("]", 100)+", 'fortran_order': False, 'shape': (1,)}", make([]byte, 4)), "nested deeper than 32"},
		{"a list at the top", npyFile("['<f4', False, (1,)]", make([]byte, 4)), "not a dict but a list"},
		{"two dicts", npyFile(dict("'<f4'", "False", "(1,)")+" {}", make([]byte, 4)), "text after the dict"},
		{"not a dict", npyFile("'<f4'", nil), "not a dict"},
		{"text after", npyFile(dict("'<f4'", "False", "(1,)")+" junk", make([]byte, 4)), "text after the dict"},
		{"unclosed", npyFile("{'descr': '<f4", nil), "closing quote"},
		{"data cut", npyFile(dict("'<i8'", "False", "(4,)"), make([]byte, 20)), "the header declares 32 bytes of data, the file holds 20"},
		{"a terabyte declared", npyFile(dict("'<f8'", "False", "(131072, 1048576)"), make([]byte, 100)), "the header declares 1099511627776 bytes of data, the file holds 100"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := npy.Read(bytes.NewReader(c.file))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.True(t, strings.HasPrefix(err.Error(), "npy: "), "%q names the package", err)
		})
	}
}

// Types NumPy has no name for are refused when written, saying what to
// do; so is an array whose data does not match its shape.
func TestWriteRefuses(t *testing.T) {
	_, err := npy.EncodeHeader(nd.BFloat16, []int{2})
	assert.ErrorContains(t, err, "NumPy has no bfloat16: convert the array to float32 first")
	_, err = npy.EncodeHeader(nd.String, []int{2})
	assert.ErrorContains(t, err, "cannot be written")
	_, err = npy.EncodeHeader(nd.Float32, []int{-1})
	assert.ErrorContains(t, err, "negative dimension")
	err = npy.Write(io.Discard, nd.Array{Type: nd.Float32, Shape: []int{3}, Data: make([]byte, 8)})
	assert.ErrorContains(t, err, "needs 12 bytes, has 8")
}

// Headers NumPy wrote in other versions and styles: format 2.0 and 3.0,
// double quotes, Python 2's long integers, keys in another order, and a
// single-byte type with '<' or '|'.
func TestHeaderVariants(t *testing.T) {
	for _, c := range []struct {
		version byte
		dict    string
		typ     nd.DType
		shape   []int
	}{
		{2, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", nd.Int32, []int{3}},
		{3, "{'descr': '<f2', 'fortran_order': False, 'shape': (1, 2), }", nd.Float16, []int{1, 2}},
		{1, `{"descr": "<u2", "fortran_order": False, "shape": (2L, 1L)}`, nd.Uint16, []int{2, 1}},
		{1, "{'shape': (2,), 'fortran_order': False, 'descr': '<i1'}", nd.Int8, []int{2}},
		{1, "{ 'descr' : '|b1' ,\n'fortran_order' : False , 'shape' : ( 2 , ) , }", nd.Bool, []int{2}},
		{1, "{'descr': '<u1', 'fortran_order': False, 'shape': (4, 0), }", nd.Uint8, []int{4, 0}},
		{1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", nd.Float64, []int{}},
		{1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,\n 3,\t4,), }", nd.Float32, []int{2, 3, 4}},
		{3, "{'descr':'<i8','fortran_order':False,'shape':(1,)}", nd.Int64, []int{1}},
		{1, "{'descr': '<f4', 'fortran_order': False, 'shape': ((5), 2), }", nd.Float32, []int{5, 2}}, // Python's (5) is 5
	} {
		text := c.dict + "   \n"
		file := []byte("\x93NUMPY")
		file = append(file, c.version, 0)
		if c.version == 1 {
			file = binary.LittleEndian.AppendUint16(file, uint16(len(text)))
		} else {
			file = binary.LittleEndian.AppendUint32(file, uint32(len(text)))
		}
		file = append(file, text...)
		h, err := npy.ReadHeader(bytes.NewReader(file))
		require.NoError(t, err, c.dict)
		assert.Equal(t, c.typ, h.Type, c.dict)
		assert.Equal(t, c.shape, h.Shape, c.dict)
		assert.Equal(t, int64(len(file)), h.Offset, c.dict)
	}
}

// Rows, RowBytes and DataBytes, which a reader of rows by range uses.
func TestHeaderSizes(t *testing.T) {
	h := npy.Header{Type: nd.Float32, Shape: []int{10, 3, 4}}
	assert.Equal(t, 10, h.Rows())
	assert.Equal(t, 48, h.RowBytes())
	assert.Equal(t, int64(480), h.DataBytes())
	s := npy.Header{Type: nd.Int64, Shape: []int{}}
	assert.Equal(t, 1, s.Rows())
	assert.Equal(t, int64(8), s.DataBytes())
}

// Several arrays written one after the other (as numpy.save to one open
// file does) are read one after the other.
func TestArraysInSequence(t *testing.T) {
	var buf bytes.Buffer
	a, b := nd.Of([]int32{1, 2}, 2), nd.Of([]float32{3}, 1, 1)
	require.NoError(t, npy.Write(&buf, a))
	require.NoError(t, npy.Write(&buf, b))
	got, err := npy.Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, a, got)
	got, err = npy.Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, b, got)
}

func FuzzReadHeader(f *testing.F) {
	h, _ := npy.EncodeHeader(nd.Float32, []int{2, 3})
	f.Add(h)
	f.Add(npyFile("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (1,)}", nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := npy.ReadHeader(bytes.NewReader(b))
		if err == nil {
			assert.True(t, h.Type.Supported())
			assert.LessOrEqual(t, h.Offset, int64(len(b)))
		}
	})
}

// FuzzHeaderText fuzzes the header's text (the Python literal) alone, in a
// version 1.0 file: the parser never panics; a header it accepts has a
// type this package reads and a shape that EncodeHeader writes back to the
// same type and shape; and the same header with the shape given a second
// time is refused (NumPy would take the last, this package neither).
func FuzzHeaderText(f *testing.F) {
	for _, s := range []string{
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
		"{'descr': '|u1', 'fortran_order': False, 'shape': (7,), }",
		"{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
		`{"descr": "<u2", "fortran_order": False, "shape": (2L, 1L)}`,
		"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'fortran_order': True}",
		"{'descr': [('descr', '<f4')], 'fortran_order': False, 'shape': (1,)}",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}",
		"{'descr': '>i8', 'fortran_order': True, 'shape': (-1, 0x10, 1.5, None, [1], {'a': 'b'})}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 1<<16-2 {
			return
		}
		h, err := npy.ReadHeader(bytes.NewReader(npyFile(text, nil)))
		if err != nil {
			return
		}
		assert.True(t, h.Type.Supported(), text)
		enc, err := npy.EncodeHeader(h.Type, h.Shape)
		require.NoError(t, err, text)
		back, err := npy.ReadHeader(bytes.NewReader(enc))
		require.NoError(t, err, text)
		assert.Equal(t, h.Type, back.Type, text)
		assert.Equal(t, h.Shape, back.Shape, text)
		body := strings.TrimRight(text, " \t\r\n\f\v")
		require.True(t, strings.HasSuffix(body, "}"), "an accepted header is a dict: %q", text)
		inner := strings.TrimRight(body[:len(body)-1], " \t\r\n\f\v")
		sep := ", "
		if strings.HasSuffix(inner, ",") || strings.HasSuffix(inner, "{") {
			sep = " "
		}
		_, err = npy.ReadHeader(bytes.NewReader(npyFile(inner+sep+"'shape': (1,)}", nil)))
		assert.ErrorContains(t, err, `the key "shape" twice`, text)
	})
}
