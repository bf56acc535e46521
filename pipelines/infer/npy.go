package main

import (
	"bufio"
	"context"
	"fmt"

	"github.com/beamgpu/beamgpu/transforms/nd/npy"
	"github.com/beamgpu/beamgpu/transforms/step/files"
)

// npyInfo is what the header of the .npy input says: the element type, the
// shape and where the data starts. Only the header is read here: the rows
// are read by range, in the workers.
type npyInfo = npy.Header

// readNPYHeader reads the header of the .npy file at path (local or any
// Beam filesystem), and nothing else. The array's rows run along axis 0, so
// a scalar is refused.
func readNPYHeader(ctx context.Context, path string) (npyInfo, error) {
	r, err := files.OpenRead(ctx, path)
	if err != nil {
		return npyInfo{}, err
	}
	defer r.Close()
	h, err := npy.ReadHeader(bufio.NewReaderSize(r, 4096))
	if err != nil {
		return h, fmt.Errorf("%s: %w", path, err)
	}
	if len(h.Shape) == 0 {
		return h, fmt.Errorf("%s: the .npy array is a scalar: want rows along axis 0", path)
	}
	return h, nil
}
