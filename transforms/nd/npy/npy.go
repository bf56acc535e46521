// Package npy reads and writes NumPy's .npy files as nd.Arrays: what
// pipelines/infer reads its rows from and writes its predictions to, and
// what numpy.load and numpy.save read and write.
//
// Read and Write move a whole array; ReadFile and WriteFile a whole file.
// For arrays too large to hold, ReadHeader reads only the header (the
// element type, the shape and where the data starts), so that the rows can
// be read by range, and EncodeHeader makes the header of an array whose
// rows are written after it.
//
// The arrays are C order (row major), little-endian, of the types of
// package nd that NumPy has: bool, int8 to int64, uint8 to uint64, float16,
// float32 and float64 (NumPy has no bfloat16). Anything else is refused
// with an error that says what the file holds and what to do: a big-endian
// array, one in Fortran order, a structured dtype, Python objects (which a
// .npy file stores pickled: this package never unpickles), complex
// numbers, strings, a header that is truncated or not NumPy's. The format
// is NumPy's format.rst (versions 1.0, 2.0 and 3.0); files are written as
// NumPy writes them (version 1.0 unless the header needs more, the header
// padded so that the data starts on a multiple of 64 bytes).
package npy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/beamgpu/beamgpu/transforms/nd"
)

// Header is what the header of a .npy file says.
type Header struct {
	// Type is the element type.
	Type nd.DType
	// Shape is the array's shape; empty for a scalar (NumPy's shape ()).
	Shape []int
	// Offset is where the data starts: the header's size in bytes.
	Offset int64
}

// Rows is the length of axis 0 (1 for a scalar).
func (h Header) Rows() int {
	if len(h.Shape) == 0 {
		return 1
	}
	return h.Shape[0]
}

// RowBytes is the size in bytes of one row (one index of axis 0): the
// product of the other axes times the element size.
func (h Header) RowBytes() int {
	n := h.Type.Size()
	if len(h.Shape) > 1 {
		for _, d := range h.Shape[1:] {
			n *= d
		}
	}
	return n
}

// DataBytes is the size in bytes of the data the header declares.
func (h Header) DataBytes() int64 { return int64(h.Rows()) * int64(h.RowBytes()) }

// Read reads a .npy array from r: its header, then its data, and nothing
// after it (numpy.save may write several arrays one after the other). A
// stream that ends before the data does is an error that says how many
// bytes there were; the array is allocated as the data arrives, so a
// header that declares more than the stream holds costs no more memory
// than the stream.
func Read(r io.Reader) (nd.Array, error) {
	h, err := ReadHeader(r)
	if err != nil {
		return nd.Array{}, err
	}
	data, err := readData(r, h.DataBytes())
	if err != nil {
		return nd.Array{}, fmt.Errorf("npy: %v %s array: %w", h.Type, nd.ShapeString(h.Shape), err)
	}
	return nd.Array{Type: h.Type, Shape: h.Shape, Data: data}, nil
}

// readData reads n bytes into memory aligned for every element type,
// growing the buffer as the bytes arrive.
func readData(r io.Reader, n int64) ([]byte, error) {
	const first = 1 << 20
	buf := nd.Bytes(int(min(n, first)))
	got := 0
	for {
		m, err := io.ReadFull(r, buf[got:])
		got += m
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("truncated: the header declares %d bytes of data, the file holds %d", n, got)
		}
		if err != nil {
			return nil, err
		}
		if int64(got) == n {
			return buf, nil
		}
		next := nd.Bytes(int(min(n, 2*int64(len(buf)))))
		copy(next, buf)
		buf = next
	}
}

// ReadFile reads the .npy file at path. Its errors name the path.
func ReadFile(path string) (nd.Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nd.Array{}, err
	}
	defer f.Close()
	a, err := Read(f)
	if err != nil {
		return nd.Array{}, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Write writes a as a .npy array to w: its header, then its data as it
// lies in a.Data (package nd's layout is NumPy's C order, little-endian).
func Write(w io.Writer, a nd.Array) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	h, err := EncodeHeader(a.Type, a.Shape)
	if err != nil {
		return err
	}
	if _, err := w.Write(h); err != nil {
		return err
	}
	_, err = w.Write(a.Data)
	return err
}

// WriteFile writes a to the .npy file at path, replacing it. Its errors
// name the path.
func WriteFile(path string, a nd.Array) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	err = Write(bw, a)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// errNotNPY is the error of input that does not start as a .npy file does.
var errNotNPY = errors.New(`npy: not a .npy file (no "\x93NUMPY" magic)`)
