package tensor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadFashionTestSet(t *testing.T) {
	b := testSet(t)
	assert.Equal(t, "t10k-images-idx3-ubyte.gz", b.Source)
	assert.Equal(t, 10000, b.Rows)
	assert.Equal(t, 28*28, b.Cols)
	require.Len(t, b.Labels, 10000)
	assert.Equal(t, int32(9), b.Labels[0]) // an ankle boot
	assert.Equal(t, []int32{9, 2, 1, 1, 6}, b.Labels[:5])
	var sum float32
	for _, v := range b.Row(0) {
		sum += v
	}
	assert.Equal(t, float32(33456), sum) // raw pixels, not scaled
	counts := make([]int, 10)
	for _, l := range b.Labels {
		counts[l]++
	}
	for c, n := range counts {
		assert.Equal(t, 1000, n, "class %d", c)
	}
	require.NoError(t, b.Validate())

	x, err := ReadIDX(filepath.Join(fashionDir, "t10k-images-idx3-ubyte.gz"))
	require.NoError(t, err)
	assert.Equal(t, IDXUint8, x.Type)
	assert.Equal(t, []int{10000, 28, 28}, x.Dims)
	_, err = ReadImagesSize(filepath.Join(fashionDir, "t10k-images-idx3-ubyte.gz"), 28, 28)
	require.NoError(t, err)
	_, err = ReadImagesSize(filepath.Join(fashionDir, "t10k-images-idx3-ubyte.gz"), 32, 32)
	require.ErrorIs(t, err, ErrShape)
	assert.ErrorContains(t, err, "t10k-images-idx3-ubyte.gz: unexpected shape: images are 28x28, want 32x32")
}

func TestDecodeIDXPlainAndGzip(t *testing.T) {
	raw := idxBytes(t, IDXUint8, []int{2, 2, 3}, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255})
	for name, data := range map[string][]byte{"plain": raw, "gzip": gz(raw)} {
		t.Run(name, func(t *testing.T) {
			x, err := DecodeIDX(bytes.NewReader(data), "f.idx") // the name says nothing about gzip
			require.NoError(t, err)
			assert.Equal(t, []int{2, 2, 3}, x.Dims)
			b, err := x.Images()
			require.NoError(t, err)
			assert.Equal(t, 2, b.Rows)
			assert.Equal(t, 6, b.Cols)
			assert.Equal(t, float32(255), b.X[11])
		})
	}
	// Other element types decode too; integer types other than uint8 are not images.
	x, err := DecodeIDX(bytes.NewReader(idxBytes(t, IDXInt16, []int{1, 2, 2}, make([]byte, 8))), "d")
	require.NoError(t, err)
	assert.Len(t, x.Data, 8)
	_, err = x.Images()
	assert.ErrorIs(t, err, ErrIDXType)
	_, err = x.Labels()
	assert.ErrorIs(t, err, ErrIDXType)

	// float32 images (big-endian, like every IDX number) keep their values, NaN included.
	f := make([]byte, 8)
	binary.BigEndian.PutUint32(f, math.Float32bits(0.25))
	binary.BigEndian.PutUint32(f[4:], math.Float32bits(float32(math.NaN())))
	x, err = DecodeIDX(bytes.NewReader(idxBytes(t, IDXFloat32, []int{1, 1, 2}, f)), "f")
	require.NoError(t, err)
	b, err := x.Images()
	require.NoError(t, err)
	assert.Equal(t, float32(0.25), b.X[0])
	assert.True(t, math.IsNaN(float64(b.X[1])))
}

func TestDecodeIDXCorrupt(t *testing.T) {
	valid := idxBytes(t, IDXUint8, []int{3, 2, 2}, make([]byte, 12))
	noise := make([]byte, 1200)
	rand.NewChaCha8([32]byte{1}).Read(noise)
	bigGz := gz(idxBytes(t, IDXUint8, []int{3, 20, 20}, noise))
	hdr := func(b ...byte) []byte { return b }
	cases := []struct {
		name string
		data []byte
		is   error
		msg  string
	}{
		{"empty", nil, ErrIDXTruncated, "x.idx: truncated IDX file: header is 4 bytes, got 0"},
		{"short header", valid[:3], ErrIDXTruncated, "header is 4 bytes, got 3"},
		{"wrong magic", append([]byte{0x1f, 0x00}, valid[2:]...), ErrIDXMagic, "x.idx: not an IDX file (wrong magic): first bytes are 0x1f 0x00, want 0x00 0x00"},
		{"unsupported type", hdr(0, 0, 0x07, 1, 0, 0, 0, 0), ErrIDXType, "x.idx: unsupported IDX element type 0x07"},
		{"no dims", hdr(0, 0, 8, 0), ErrIDXDims, "0 dimensions (want 1 to 8)"},
		{"too many dims", hdr(0, 0, 8, 9), ErrIDXDims, "9 dimensions (want 1 to 8)"},
		{"truncated dims", hdr(0, 0, 8, 3, 0, 0, 0, 3, 0), ErrIDXTruncated, "3 dimensions need 12 header bytes, got 5"},
		{"truncated data", valid[:len(valid)-5], ErrIDXTruncated, "x.idx: truncated IDX file: dimensions 3x2x2: expected 12 bytes of data, got 7"},
		{"truncated gzip", bigGz[:len(bigGz)-100], ErrIDXTruncated, "truncated IDX file (compressed stream ends early): dimensions 3x20x20: expected 1200 bytes of data, got"},
		{"trailing data", append(append([]byte{}, valid...), 1, 2), ErrIDXTrailing, "expected 12 bytes of data, the file holds more"},
		{"huge dims", hdr(0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), ErrIDXTooLarge, "announce more than 2147483648 bytes"},
		{"huge but allowed dims, tiny file", hdr(0, 0, 8, 1, 0x7f, 0xff, 0xff, 0xff, 1), ErrIDXTruncated, "expected 2147483647 bytes of data, got 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeIDX(bytes.NewReader(c.data), "x.idx")
			require.Error(t, err)
			assert.True(t, errors.Is(err, c.is), "%v is not %v", err, c.is)
			assert.ErrorContains(t, err, c.msg)
			assert.ErrorContains(t, err, "x.idx")
		})
	}
}

func TestReadDatasetErrors(t *testing.T) {
	dir := t.TempDir()
	img := writeFile(t, dir, "img", gz(idxBytes(t, IDXUint8, []int{3, 2, 2}, make([]byte, 12))))
	lab := writeFile(t, dir, "lab", idxBytes(t, IDXUint8, []int{3}, []byte{1, 2, 3}))
	short := writeFile(t, dir, "short", idxBytes(t, IDXUint8, []int{2}, []byte{1, 2}))

	b, err := ReadDataset(img, lab)
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 2, 3}, b.Labels)
	assert.Equal(t, "img[0:3]", b.ID())

	b, err = ReadDataset(img, "")
	require.NoError(t, err)
	assert.Nil(t, b.Labels)

	_, err = ReadDataset(img, short)
	require.ErrorIs(t, err, ErrCount)
	assert.EqualError(t, err, "count mismatch: "+img+" holds 3 images but "+short+" holds 2 labels")

	// Labels file given as images and vice versa.
	_, err = ReadImages(lab)
	require.ErrorIs(t, err, ErrShape)
	assert.ErrorContains(t, err, lab+": unexpected shape: images need 3 dimensions (count, height, width), the file has 3")
	_, err = ReadLabels(img)
	require.ErrorIs(t, err, ErrShape)
	assert.ErrorContains(t, err, img+": unexpected shape: labels need 1 dimension, the file has 3x2x2")

	_, err = ReadImages(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// FuzzDecodeIDX checks that no input makes the decoder panic or return data
// inconsistent with its header. Seeds: testdata/fuzz/FuzzDecodeIDX.
func FuzzDecodeIDX(f *testing.F) {
	f.Add(idxBytes(f, IDXUint8, []int{2, 2, 2}, []byte{1, 2, 3, 4, 5, 6, 7, 8}))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := DecodeIDX(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		n := idxElemSize(x.Type)
		for _, d := range x.Dims {
			n *= d
		}
		if n != len(x.Data) {
			t.Fatalf("dims %v type %#x: %d bytes of data", x.Dims, x.Type, len(x.Data))
		}
		if b, err := x.Images(); err == nil {
			if err := b.Validate(); err != nil {
				t.Fatal(err)
			}
		}
		if l, err := x.Labels(); err == nil && len(l) != x.Dims[0] {
			t.Fatalf("%d labels for dims %v", len(l), x.Dims)
		}
	})
}

// An images file whose magic says 4 dimensions (0x0804) reads pixels as a
// dimension: the error says the magic may be wrong, not only "trailing data".
func TestIDXWrongDimensionCountNamesTheMagic(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, EncodeIDX(&buf, IDX{Type: IDXUint8, Dims: []int{2, 28, 28}, Data: bytes.Repeat([]byte{0}, 2*28*28)}))
	data := buf.Bytes()
	data[3] = 4 // magic 0x00000804
	path := filepath.Join(t.TempDir(), "x-images-idx3-ubyte")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err := ReadIDX(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the magic number 0x00000804 declares 4 dimensions (Fashion-MNIST images have 3, 0x00000803; labels 1, 0x00000801): if the file holds another number, the magic number is wrong")
}
