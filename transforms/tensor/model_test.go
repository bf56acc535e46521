package tensor

import (
	"bytes"
	"crypto/sha256"
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

func modelBytes(t testing.TB, m *MLP) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := m.WriteTo(&buf)
	require.NoError(t, err)
	require.Equal(t, int64(buf.Len()), n)
	return buf.Bytes()
}

// resum replaces the checksum of a model file after an edit.
func resum(b []byte) []byte {
	body := b[:len(b)-sha256.Size]
	s := sha256.Sum256(body)
	return append(append([]byte{}, body...), s[:]...)
}

func le32(b []byte, v ...uint32) []byte {
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, x)
	}
	return b
}

func TestModelRoundTrip(t *testing.T) {
	m := randMLP(rand.New(rand.NewPCG(7, 8)), 20, 8, 6, 3)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.bgmlp")
	require.NoError(t, SaveMLP(path, m))
	got, err := LoadMLP(path)
	require.NoError(t, err)
	assert.Equal(t, m.Layers, got.Layers)
	assert.Equal(t, []int{20, 8, 6, 3}, got.Dims())
	require.NoError(t, got.CheckShape(20, 8, 6, 3))
	err = got.CheckShape(784, 256, 128, 10)
	require.ErrorIs(t, err, ErrModelShape)
	assert.EqualError(t, err, "model "+path+": bad model shape: shape 20-8-6-3, want 784-256-128-10")
	assert.EqualError(t, got.CheckShape(20, 8, 3), "model "+path+": bad model shape: shape 20-8-6-3, want 20-8-3")

	// No temporary file is left behind, and the file is readable by others.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

	// The layout is the documented one.
	b := modelBytes(t, m)
	assert.Equal(t, "BGMLP", string(b[:5]))
	assert.Equal(t, uint32(1), binary.LittleEndian.Uint32(b[5:]))
	assert.Equal(t, uint32(3), binary.LittleEndian.Uint32(b[9:]))
	assert.Len(t, b, 13+3*12+4*(20*8+8+8*6+6+6*3+3)+32)
}

func TestModelCorrupt(t *testing.T) {
	m := randMLP(rand.New(rand.NewPCG(9, 10)), 4, 3, 2)
	good := modelBytes(t, m)
	set32 := func(off int, v uint32) []byte {
		b := append([]byte{}, good...)
		binary.LittleEndian.PutUint32(b[off:], v)
		return resum(b)
	}
	flip := append([]byte{}, good...)
	flip[40] ^= 1
	nan := append([]byte{}, good...)
	binary.LittleEndian.PutUint32(nan[13+2*12+4:], math.Float32bits(float32(math.NaN())))
	cases := []struct {
		name string
		data []byte
		is   error
		msg  string
	}{
		{"empty", nil, ErrModelTruncated, "m.bgmlp: truncated model file: header is 13 bytes, got 0"},
		{"wrong magic", append([]byte("BGMLQ"), good[5:]...), ErrModelMagic, `m.bgmlp: not a beamgpu MLP file (wrong magic): starts with "BGMLQ", want "BGMLP"`},
		{"short wrong magic", []byte("\x89PNG\r\n"), ErrModelMagic, `starts with "\x89PNG\r"`},
		{"unknown version", set32(5, 2), ErrModelVersion, "m.bgmlp: unknown model file version 2 (this build reads version 1)"},
		{"no layers", set32(9, 0), ErrModelShape, "m.bgmlp: bad model shape: 0 layers (want 1..64)"},
		{"not chaining", set32(13+12, 4), ErrModelShape, "m.bgmlp: bad model shape: layer 0 outputs 3 values but layer 1 takes 4"},
		{"zero size", set32(13, 0), ErrModelShape, "layer 0 is 0x3"},
		{"bad activation", set32(13+8, 7), ErrModelShape, "layer 0 has activation 7"},
		{"huge layer", set32(13, 1<<24), ErrModelTruncated, "expected 201326636 bytes of weights, got 124"},
		{"too large", le32([]byte("BGMLP"), 1, 1, 1<<24, 1<<24, 0), ErrModelShape, "m.bgmlp: bad model shape: the layers announce more than 2147483648 bytes of weights"},
		{"truncated weights", good[:60], ErrModelTruncated, "m.bgmlp: truncated model file: shape 4-3-2: expected 92 bytes of weights, got 23"},
		{"truncated checksum", good[:len(good)-1], ErrModelTruncated, "expected a 32-byte checksum after the weights, got 31 bytes"},
		{"trailing", append(append([]byte{}, good...), 0), ErrModelTrailing, "the file goes on after the checksum"},
		{"bit flip", flip, ErrModelChecksum, "m.bgmlp: model checksum mismatch (corrupt file): stored SHA-256"},
		{"NaN weight", resum(nan), ErrModelValue, "m.bgmlp: bad model value: layer 0 W[1] is NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadMLP(bytes.NewReader(c.data), "m.bgmlp")
			require.Error(t, err)
			assert.True(t, errors.Is(err, c.is), "%v is not %v", err, c.is)
			assert.ErrorContains(t, err, c.msg)
		})
	}
	_, err := LoadMLP(filepath.Join(t.TempDir(), "none.bgmlp"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestModelValidate(t *testing.T) {
	m := randMLP(rand.New(rand.NewPCG(1, 1)), 4, 3, 2)
	m.Layers[1].In = 5
	_, err := m.WriteTo(&bytes.Buffer{})
	assert.ErrorIs(t, err, ErrModelShape)
	_, err = m.Forward(Batch{Source: "b", Rows: 1, Cols: 4, X: make([]float32, 4)})
	assert.ErrorContains(t, err, "b[0:1]: model: bad model shape: layer 1: dense layer 5x2: W has 6 values, want 10")
	m = randMLP(rand.New(rand.NewPCG(1, 1)), 4, 3, 2)
	_, err = m.Predict(Batch{Source: "b", Rows: 1, Cols: 5, X: make([]float32, 5)})
	assert.EqualError(t, err, "b[0:1]: 5 columns, model takes 4")
	_, err = NewMLP(784)
	assert.Error(t, err)
	_, err = NewMLP(784, 0, 10)
	assert.Error(t, err)
	// Writing to a directory that does not exist fails and leaves nothing.
	assert.Error(t, SaveMLP(filepath.Join(t.TempDir(), "no", "m.bgmlp"), m))
}

// FuzzReadMLP checks that no input makes ReadMLP panic, and that whatever it
// accepts is a valid model that writes back to the same bytes. Seeds:
// testdata/fuzz/FuzzReadMLP.
func FuzzReadMLP(f *testing.F) {
	f.Add(modelBytes(f, randMLP(rand.New(rand.NewPCG(1, 2)), 3, 2, 2)))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadMLP(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := m.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), data) {
			t.Fatal("accepted a file that does not write back identically")
		}
	})
}
