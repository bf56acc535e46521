package main

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/beamgpu/beamgpu/transforms/nd"
	"github.com/beamgpu/beamgpu/transforms/nd/npy"
	"github.com/beamgpu/beamgpu/transforms/step/files"
)

// npyInfo is what the header of the .npy input says: the element type, the
// shape and where the data starts. Only the header is read here: the rows
// are read by range, in the workers.
type npyInfo = npy.Header

// readNPYHeader reads the header of the .npy file at path (local or any
// Beam filesystem), and nothing else. The array's rows run along axis 0, so
// a scalar is refused. The header must describe the file: its data must
// end where the file does, by the size the filesystem reports (stat, or
// the object store's), so that a header that promises more rows than the
// file holds (a 240-byte file declaring a billion rows) is refused before
// anything runs, and so is one followed by bytes it does not describe.
func readNPYHeader(ctx context.Context, path string) (npyInfo, error) {
	f, err := files.OpenAt(ctx, path)
	if err != nil {
		return npyInfo{}, err
	}
	defer f.Close()
	size := f.Size()
	h, err := npy.ReadHeader(bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 4096))
	if err != nil {
		return h, fmt.Errorf("%s: %w", path, err)
	}
	if len(h.Shape) == 0 {
		return h, fmt.Errorf("%s: the .npy array is a scalar: want rows along axis 0", path)
	}
	want := h.Offset + h.DataBytes() // at most 2^40 elements of 8 bytes: no overflow
	what := fmt.Sprintf("its header declares a %v array of shape %s: %d bytes of header and %d of data (%d rows of %d bytes), %d bytes in all",
		h.Type, nd.ShapeString(h.Shape), h.Offset, h.DataBytes(), h.Rows(), h.RowBytes(), want)
	switch {
	case size < want:
		return h, fmt.Errorf("%s holds %d bytes, but %s: a truncated file, or a header that claims rows the file does not hold (%d of %d rows are there)",
			path, size, what, max(0, size-h.Offset)/int64(max(1, h.RowBytes())), h.Rows())
	case size > want:
		return h, fmt.Errorf("%s holds %d bytes, but %s: %d bytes after the array that its header does not describe (a wrong shape in the header, or data appended)",
			path, size, what, size-want)
	}
	return h, nil
}
