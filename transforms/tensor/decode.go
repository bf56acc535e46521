package tensor

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sort"

	"github.com/beamgpu/beamgpu/transforms/step/files"
)

// Source names a dataset to decode: an IDX file of images and, optionally,
// one of labels.
type Source struct {
	Images string
	Labels string // empty: labels unknown
	// BatchRows is the number of rows per output batch; default 256.
	BatchRows int
	// Height and Width, when set, are the image size the caller requires.
	Height, Width int
	// Classes, when set, is the number of classes: a label outside
	// [0, Classes) fails the file (it would count as unlabelled).
	Classes int
}

// ID implements step.Identifier.
func (s Source) ID() string { return s.Images }

// Key implements step.Keyed: the source's failures belong to its image file.
func (s Source) Key() string { return filepath.Base(s.Images) }

// RowError is a row rejected by the decode step.
type RowError struct {
	Source string
	Row    int
	Reason string
}

// Decoded is the decode step's output: batches of valid rows and the rows
// rejected (NaN or infinity), which together account for every row of the
// file. Rows is that count.
type Decoded struct {
	Rows     int
	Batches  []Batch
	Rejected []RowError
}

// DecodeSource is the CPU implementation of the decode step.
func DecodeSource(src Source) (Decoded, error) {
	images, err := ReadIDX(src.Images)
	if err != nil {
		return Decoded{}, err
	}
	all, err := images.Images()
	if err != nil {
		return Decoded{}, err
	}
	if src.Height > 0 || src.Width > 0 {
		h, w, _ := images.ImageSize()
		if h != src.Height || w != src.Width {
			return Decoded{}, fmt.Errorf("%s: %w: images are %dx%d, want %dx%d", src.Images, ErrShape, h, w, src.Height, src.Width)
		}
	}
	if src.Labels != "" {
		labels, err := ReadLabels(src.Labels)
		if err != nil {
			return Decoded{}, err
		}
		if len(labels) != all.Rows {
			return Decoded{}, fmt.Errorf("%s: %w: %d labels for %d images in %s", src.Labels, ErrCount, len(labels), all.Rows, src.Images)
		}
		if src.Classes > 0 {
			for i, l := range labels {
				if l < 0 || int(l) >= src.Classes {
					return Decoded{}, fmt.Errorf("%s: row %d: label %d is not a class in [0, %d)", src.Labels, i, l, src.Classes)
				}
			}
		}
		all.Labels = labels
	}
	out := Decoded{Rows: all.Rows}
	start := 0 // first row of the current run of valid rows
	flush := func(end int) {
		out.Batches = append(out.Batches, all.Slice(start, end).Split(batchRows(src))...)
	}
	for i := 0; i < all.Rows; i++ {
		if err := checkFinite(all.Slice(i, i+1)); err != nil {
			flush(i)
			out.Rejected = append(out.Rejected, RowError{Source: all.Source, Row: i, Reason: err.Error()})
			start = i + 1
		}
	}
	flush(all.Rows)
	return out, nil
}

func batchRows(src Source) int {
	if src.BatchRows > 0 {
		return src.BatchRows
	}
	return 256
}

// DecodeSourceHeaders is the decode step's stand-in: it reads the files'
// headers only and returns zero pixels (and unknown labels) of the real shape.
func DecodeSourceHeaders(src Source) (Decoded, error) {
	dims, err := readIDXDims(src.Images)
	if err != nil {
		return Decoded{}, err
	}
	if len(dims) != 3 {
		return Decoded{}, fmt.Errorf("%s: %w: dims %v, want images x rows x cols", src.Images, ErrIDXDims, dims)
	}
	n, cols := dims[0], dims[1]*dims[2]
	all := Batch{Source: filepath.Base(src.Images), Rows: n, Cols: cols, X: make([]float32, n*cols)}
	if src.Labels != "" {
		all.Labels = make([]int32, n)
	}
	return Decoded{Rows: n, Batches: all.Split(batchRows(src))}, nil
}

// readIDXDims reads an IDX file's magic and dimensions, gzip or not.
func readIDXDims(path string) ([]int, error) {
	f, err := files.OpenRead(context.Background(), path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if m, err := br.Peek(2); err == nil && m[0] == 0x1f && m[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: bad gzip header: %v", path, err)
		}
		r = zr
	}
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil || hdr[0] != 0 || hdr[1] != 0 || hdr[3] == 0 || hdr[3] > maxIDXDims {
		return nil, fmt.Errorf("%s: %w", path, ErrIDXMagic)
	}
	dims := make([]int, hdr[3])
	for i := range dims {
		var d [4]byte
		if _, err := io.ReadFull(r, d[:]); err != nil {
			return nil, fmt.Errorf("%s: %w: header", path, ErrIDXTruncated)
		}
		dims[i] = int(binary.BigEndian.Uint32(d[:]))
	}
	return dims, nil
}

// Concat stacks batches of one width into one batch (Source and Offset of
// the first; labels kept only if every batch has them).
func Concat(bs []Batch) (Batch, error) {
	if len(bs) == 0 {
		return Batch{}, fmt.Errorf("concat: no batches")
	}
	if len(bs) == 1 {
		return bs[0], nil
	}
	out := Batch{Source: bs[0].Source, Offset: bs[0].Offset, Cols: bs[0].Cols}
	labels := true
	for _, b := range bs {
		if b.Cols != out.Cols {
			return Batch{}, fmt.Errorf("concat: %s has %d columns, %s has %d", b.ID(), b.Cols, bs[0].ID(), out.Cols)
		}
		out.Rows += b.Rows
		labels = labels && b.Labels != nil
	}
	out.X = make([]float32, 0, out.Rows*out.Cols)
	for _, b := range bs {
		out.X = append(out.X, b.X...)
		if labels {
			out.Labels = append(out.Labels, b.Labels...)
		}
	}
	return out, nil
}

// SortBatches orders batches by source and offset.
func SortBatches(bs []Batch) {
	sort.Slice(bs, func(i, j int) bool {
		return bs[i].Source < bs[j].Source || bs[i].Source == bs[j].Source && bs[i].Offset < bs[j].Offset
	})
}

// SampleImagesPath and SampleLabelsPath are the Fashion-MNIST test set
// committed with the fashion pipeline, found from this source file: they are
// for tests and the steps' Sample inputs.
func SampleImagesPath() string { return sampleDataPath("t10k-images-idx3-ubyte.gz") }

// SampleLabelsPath: see SampleImagesPath.
func SampleLabelsPath() string { return sampleDataPath("t10k-labels-idx1-ubyte.gz") }

func sampleDataPath(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "pipelines", "fashion", "data", name)
}
