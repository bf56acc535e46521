package npy_test

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/nd/npy"
)

// Write an array as numpy.save does, and read it back, as pipelines/infer's
// predictions.npy is read.
func Example() {
	dir, err := os.MkdirTemp("", "npy")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "predictions.npy")

	scores := nd.Of([]float32{0.1, 0.9, 0.7, 0.3}, 2, 2) // two rows of two classes
	if err := npy.WriteFile(path, scores); err != nil {
		log.Fatal(err)
	}
	a, err := npy.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	rows, err := nd.As[float32](a)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Type, nd.ShapeString(a.Shape), rows)
	// Output: float32 [2x2] [0.1 0.9 0.7 0.3]
}

// ReadHeader reads only the header: the rows of an array too large to hold
// are then read by range, from Offset on, RowBytes each.
func ExampleReadHeader() {
	var file bytes.Buffer
	if err := npy.Write(&file, nd.Of([]int64{1, 2, 3, 4, 5, 6}, 3, 2)); err != nil {
		log.Fatal(err)
	}
	h, err := npy.ReadHeader(bytes.NewReader(file.Bytes()))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(h.Type, h.Rows(), "rows of", h.RowBytes(), "bytes from byte", h.Offset)
	row2 := file.Bytes()[h.Offset+2*int64(h.RowBytes()):][:h.RowBytes()]
	fmt.Println(nd.MustAs[int64](nd.Array{Type: h.Type, Shape: h.Shape[1:], Data: row2}))
	// Output:
	// int64 3 rows of 16 bytes from byte 128
	// [5 6]
}

// A file this package does not read is refused, saying why.
func ExampleRead_bigEndian() {
	h, _ := npy.EncodeHeader(nd.Float32, []int{1})
	file := bytes.Replace(h, []byte("'<f4'"), []byte("'>f4'"), 1)
	_, err := npy.Read(bytes.NewReader(append(file, 0, 0, 0, 0)))
	fmt.Println(err)
	// Output: npy: header "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }": dtype ">f4" is big-endian: save the array little-endian (x.astype('<f4'))
}
