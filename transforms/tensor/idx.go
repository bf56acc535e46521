package tensor

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/step/files"
)

// IDX element types (the third byte of the magic number).
const (
	IDXUint8   byte = 0x08
	IDXInt8    byte = 0x09
	IDXInt16   byte = 0x0B
	IDXInt32   byte = 0x0C
	IDXFloat32 byte = 0x0D
	IDXFloat64 byte = 0x0E
)

// MaxIDXBytes caps the data of one IDX file (2 GiB): a header that announces
// more is rejected before anything is allocated.
const MaxIDXBytes = 1 << 31

// maxIDXDims is the most dimensions an IDX header may declare.
const maxIDXDims = 8

// MaxGzipRatio bounds how much a gzip IDX file may expand: decompressed
// bytes over the compressed bytes read so far, checked once more than
// gzipRatioFloor bytes are out. Real IDX data compresses far less
// (Fashion-MNIST's images about 1.8:1, its labels about 4:1); deflate's
// limit is about 1032:1, which a file of zeros reaches: a 0.5 MB file that
// declares 512 MB of images, all zeros, is a decompression bomb, and the
// float32 rows the decode step makes of it took a pipeline to 5 GB.
var MaxGzipRatio = 100

// gzipRatioFloor is the output below which the ratio is not checked (the
// header and a first block may expand more).
const gzipRatioFloor = 1 << 20

// Errors of the IDX decoder, wrapped (test with errors.Is) in errors that also
// name the file and the numbers involved.
var (
	ErrIDXMagic     = errors.New("not an IDX file (wrong magic)")
	ErrIDXType      = errors.New("unsupported IDX element type")
	ErrIDXDims      = errors.New("bad IDX dimensions")
	ErrIDXTruncated = errors.New("truncated IDX file")
	ErrIDXTrailing  = errors.New("trailing data after IDX data")
	ErrIDXTooLarge  = errors.New("IDX data too large")
	// ErrShape: the data has a valid but unexpected shape (an image size
	// other than the one required, a labels file with images' dimensions).
	ErrShape = errors.New("unexpected shape")
	// ErrCount: images and labels files hold different numbers of items.
	ErrCount = errors.New("count mismatch")
)

// IDX is a decoded IDX file (the format of MNIST and Fashion-MNIST): an
// element type, dimensions, and the data, big-endian, as stored.
type IDX struct {
	Name string // file name, for error messages
	Type byte   // one of IDXUint8 ... IDXFloat64
	Dims []int
	Data []byte // product(Dims) * element size bytes
}

// idxElemSize is the size of an element of type t, or 0 if t is unknown.
func idxElemSize(t byte) int {
	switch t {
	case IDXUint8, IDXInt8:
		return 1
	case IDXInt16:
		return 2
	case IDXInt32, IDXFloat32:
		return 4
	case IDXFloat64:
		return 8
	}
	return 0
}

// DecodeIDX reads an IDX file from r; name is used in error messages. The
// file may be gzip-compressed: gzip is recognised by its magic bytes, not by
// the name. The data is read incrementally, so a header that announces more
// data than the file holds costs no more memory than the file; a header that
// announces more than MaxIDXBytes is rejected at once. Data after the
// announced size is an error, and decompression stops there: a gzip file
// never decompresses to more than its header declares (plus one byte, to see
// that it would), nor expands more than MaxGzipRatio to one (ErrIDXTooLarge).
func DecodeIDX(r io.Reader, name string) (IDX, error) {
	br := bufio.NewReader(r)
	gzipped := false
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		in := &countReader{r: br}
		zr, err := gzip.NewReader(in)
		if err != nil {
			return IDX{}, fmt.Errorf("%s: bad gzip header: %v", name, err)
		}
		defer zr.Close()
		zr.Multistream(true)
		br = bufio.NewReader(&ratioGuard{r: zr, in: in, name: name})
		gzipped = true
	}
	var hdr [4]byte
	if n, err := io.ReadFull(br, hdr[:]); err != nil {
		return IDX{}, fmt.Errorf("%s: %w: header is 4 bytes, got %d%s", name, ErrIDXTruncated, n, readErr(err))
	}
	if hdr[0] != 0 || hdr[1] != 0 {
		return IDX{}, fmt.Errorf("%s: %w: first bytes are %#02x %#02x, want 0x00 0x00", name, ErrIDXMagic, hdr[0], hdr[1])
	}
	x := IDX{Name: name, Type: hdr[2]}
	size := idxElemSize(x.Type)
	if size == 0 {
		return IDX{}, fmt.Errorf("%s: %w %#02x (want one of 0x08 0x09 0x0B 0x0C 0x0D 0x0E)", name, ErrIDXType, x.Type)
	}
	ndims := int(hdr[3])
	if ndims == 0 || ndims > maxIDXDims {
		return IDX{}, fmt.Errorf("%s: %w: %d dimensions (want 1 to %d)", name, ErrIDXDims, ndims, maxIDXDims)
	}
	dimBytes := make([]byte, 4*ndims)
	if n, err := io.ReadFull(br, dimBytes); err != nil {
		return IDX{}, fmt.Errorf("%s: %w: %d dimensions need %d header bytes, got %d%s", name, ErrIDXTruncated, ndims, len(dimBytes), n, readErr(err))
	}
	want := int64(size)
	x.Dims = make([]int, ndims)
	for i := range x.Dims {
		d := binary.BigEndian.Uint32(dimBytes[4*i:])
		x.Dims[i] = int(d)
		// Each factor is < 2^32 and the running product stays <= 2^31
		// (checked below), so this never overflows an int64.
		want *= int64(d)
		if want > MaxIDXBytes {
			return IDX{}, fmt.Errorf("%s: %w: dimensions %v announce more than %d bytes of data", name, ErrIDXTooLarge, dimsString(x.Dims[:i+1]), int64(MaxIDXBytes))
		}
	}
	// Read at most want+1 bytes, growing the buffer as data arrives.
	data, err := io.ReadAll(io.LimitReader(br, want+1))
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return IDX{}, fmt.Errorf("%s: %w (compressed stream ends early): dimensions %s: expected %d bytes of data, got %d", name, ErrIDXTruncated, dimsString(x.Dims), want, len(data))
	}
	if errors.Is(err, ErrIDXTooLarge) {
		return IDX{}, err
	}
	if err != nil {
		return IDX{}, fmt.Errorf("%s: reading data: expected %d bytes of data, got %d before the error: %w", name, want, len(data), err)
	}
	// A magic number with the wrong dimension count (0x0804 on a file of
	// images: 3 dimensions) reads data as dimensions: the data's size then
	// differs from the header's, and the magic is as likely the cause as
	// the data.
	magic := ""
	if ndims != 1 && ndims != 3 {
		magic = fmt.Sprintf("; the magic number 0x%08x declares %d dimensions (Fashion-MNIST images have 3, 0x00000803; labels 1, 0x00000801): if the file holds another number, the magic number is wrong",
			binary.BigEndian.Uint32(hdr[:]), ndims)
	}
	if int64(len(data)) < want {
		return IDX{}, fmt.Errorf("%s: %w: dimensions %s: expected %d bytes of data, got %d%s", name, ErrIDXTruncated, dimsString(x.Dims), want, len(data), magic)
	}
	if int64(len(data)) > want && gzipped {
		return IDX{}, fmt.Errorf("%s: %w: the gzip stream decompresses to more than the %d bytes its header declares (%d of header, dimensions %s: %d of data); decompression stopped there%s",
			name, ErrIDXTrailing, int64(4+len(dimBytes))+want, 4+len(dimBytes), dimsString(x.Dims), want, magic)
	}
	if int64(len(data)) > want {
		return IDX{}, fmt.Errorf("%s: %w: dimensions %s: expected %d bytes of data, the file holds more%s", name, ErrIDXTrailing, dimsString(x.Dims), want, magic)
	}
	x.Data = data
	return x, nil
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ratioGuard fails a gzip stream that expands more than MaxGzipRatio to one
// (see MaxGzipRatio).
type ratioGuard struct {
	r    io.Reader
	in   *countReader
	out  int64
	name string
}

func (g *ratioGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	g.out += int64(n)
	if g.out > gzipRatioFloor && g.out > int64(MaxGzipRatio)*max(g.in.n, 1) {
		return n, fmt.Errorf("%s: %w: the gzip stream expands more than %d:1 (%d bytes out of the first %d compressed bytes): a decompression bomb, not IDX data; refused",
			g.name, ErrIDXTooLarge, MaxGzipRatio, g.out, g.in.n)
	}
	return n, err
}

func readErr(err error) string {
	if err == nil || err == io.EOF || err == io.ErrUnexpectedEOF {
		return ""
	}
	return " (" + err.Error() + ")"
}

func dimsString(d []int) string {
	s := make([]string, len(d))
	for i, v := range d {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, "x")
}

// ReadIDX opens (files.OpenRead: a local path, or a URL where a filesystem is
// installed) and decodes an IDX file, plain or gzip.
func ReadIDX(path string) (IDX, error) {
	f, err := files.OpenRead(context.Background(), path)
	if err != nil {
		return IDX{}, err
	}
	defer f.Close()
	return DecodeIDX(f, path)
}

// Images converts an IDX file of N x H x W images into a batch of N rows of
// H*W pixels, Source the base name of x.Name: uint8 pixels as float32 0..255
// (not scaled), float32 and float64 pixels as they are (NaN included: the
// decode step rejects such rows).
func (x IDX) Images() (Batch, error) {
	if x.Type != IDXUint8 && x.Type != IDXFloat32 && x.Type != IDXFloat64 {
		return Batch{}, fmt.Errorf("%s: %w: images must be unsigned bytes (0x08) or floats (0x0d, 0x0e), the file holds type %#02x", x.Name, ErrIDXType, x.Type)
	}
	if len(x.Dims) != 3 {
		return Batch{}, fmt.Errorf("%s: %w: images need 3 dimensions (count, height, width), the file has %s", x.Name, ErrShape, dimsString(x.Dims))
	}
	if h, w := int64(x.Dims[1]), int64(x.Dims[2]); h < 0 || w < 0 || h != 0 && w > MaxIDXBytes/h {
		return Batch{}, fmt.Errorf("%s: %w: images of size %dx%d", x.Name, ErrShape, x.Dims[1], x.Dims[2])
	}
	n, cols := x.Dims[0], x.Dims[1]*x.Dims[2]
	size := idxElemSize(x.Type)
	if int64(len(x.Data)) != int64(n)*int64(cols)*int64(size) {
		return Batch{}, fmt.Errorf("%s: %w: dimensions %s need %d bytes, have %d", x.Name, ErrIDXTruncated, dimsString(x.Dims), n*cols*size, len(x.Data))
	}
	if n > 0 && cols == 0 {
		return Batch{}, fmt.Errorf("%s: %w: images of size %dx%d", x.Name, ErrShape, x.Dims[1], x.Dims[2])
	}
	b := Batch{Source: filepath.Base(x.Name), Rows: n, Cols: cols, X: make([]float32, n*cols)}
	switch x.Type {
	case IDXUint8:
		for i, v := range x.Data {
			b.X[i] = float32(v)
		}
	case IDXFloat32: // IDX is big-endian
		for i := range b.X {
			b.X[i] = math.Float32frombits(binary.BigEndian.Uint32(x.Data[4*i:]))
		}
	case IDXFloat64:
		for i := range b.X {
			b.X[i] = float32(math.Float64frombits(binary.BigEndian.Uint64(x.Data[8*i:])))
		}
	}
	return b, nil
}

// ImageSize returns the height and width of a 3-dimensional IDX (images).
func (x IDX) ImageSize() (h, w int, err error) {
	if len(x.Dims) != 3 {
		return 0, 0, fmt.Errorf("%s: %w: images need 3 dimensions, the file has %s", x.Name, ErrShape, dimsString(x.Dims))
	}
	return x.Dims[1], x.Dims[2], nil
}

// Labels converts a one-dimensional uint8 IDX file into labels.
func (x IDX) Labels() ([]int32, error) {
	if x.Type != IDXUint8 {
		return nil, fmt.Errorf("%s: %w: labels must be unsigned bytes (0x08), the file holds type %#02x", x.Name, ErrIDXType, x.Type)
	}
	if len(x.Dims) != 1 {
		return nil, fmt.Errorf("%s: %w: labels need 1 dimension, the file has %s", x.Name, ErrShape, dimsString(x.Dims))
	}
	if len(x.Data) != x.Dims[0] {
		return nil, fmt.Errorf("%s: %w: %d labels need %d bytes, have %d", x.Name, ErrIDXTruncated, x.Dims[0], x.Dims[0], len(x.Data))
	}
	l := make([]int32, len(x.Data))
	for i, v := range x.Data {
		l[i] = int32(v)
	}
	return l, nil
}

// ReadImages reads an IDX images file (uint8, N x H x W, plain or gzip) into
// a batch of N rows of H*W raw pixel values 0..255.
func ReadImages(path string) (Batch, error) {
	x, err := ReadIDX(path)
	if err != nil {
		return Batch{}, err
	}
	return x.Images()
}

// ReadImagesSize is ReadImages for a caller that requires H x W images (28x28
// for Fashion-MNIST); other sizes give an ErrShape error.
func ReadImagesSize(path string, h, w int) (Batch, error) {
	x, err := ReadIDX(path)
	if err != nil {
		return Batch{}, err
	}
	gh, gw, err := x.ImageSize()
	if err != nil {
		return Batch{}, err
	}
	if gh != h || gw != w {
		return Batch{}, fmt.Errorf("%s: %w: images are %dx%d, want %dx%d", path, ErrShape, gh, gw, h, w)
	}
	return x.Images()
}

// ReadLabels reads an IDX labels file (uint8, one dimension, plain or gzip).
func ReadLabels(path string) ([]int32, error) {
	x, err := ReadIDX(path)
	if err != nil {
		return nil, err
	}
	return x.Labels()
}

// ReadDataset reads images and their labels. labelsPath may be "": the
// batch then has nil Labels. Files holding different numbers of items give an
// ErrCount error.
func ReadDataset(imagesPath, labelsPath string) (Batch, error) {
	b, err := ReadImages(imagesPath)
	if err != nil || labelsPath == "" {
		return b, err
	}
	l, err := ReadLabels(labelsPath)
	if err != nil {
		return Batch{}, err
	}
	if len(l) != b.Rows {
		return Batch{}, fmt.Errorf("%w: %s holds %d images but %s holds %d labels", ErrCount, imagesPath, b.Rows, labelsPath, len(l))
	}
	b.Labels = l
	return b, nil
}

// EncodeIDX writes x in IDX format (uncompressed); it is the inverse of
// DecodeIDX, used to write test data.
func EncodeIDX(w io.Writer, x IDX) error {
	size := idxElemSize(x.Type)
	if size == 0 {
		return fmt.Errorf("%s: %w %#02x", x.Name, ErrIDXType, x.Type)
	}
	if len(x.Dims) == 0 || len(x.Dims) > maxIDXDims {
		return fmt.Errorf("%s: %w: %d dimensions", x.Name, ErrIDXDims, len(x.Dims))
	}
	n := size
	hdr := []byte{0, 0, x.Type, byte(len(x.Dims))}
	for _, d := range x.Dims {
		if d < 0 || uint64(d) > 0xffffffff {
			return fmt.Errorf("%s: %w: dimension %d", x.Name, ErrIDXDims, d)
		}
		hdr = binary.BigEndian.AppendUint32(hdr, uint32(d))
		n *= d
	}
	if n != len(x.Data) {
		return fmt.Errorf("%s: %w: dimensions %s need %d bytes, have %d", x.Name, ErrShape, dimsString(x.Dims), n, len(x.Data))
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	_, err := w.Write(x.Data)
	return err
}
