package tensor

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/beamgpu/beamgpu/transforms/step/files"
)

// MLP is a multi-layer perceptron: a chain of Dense layers, ReLU on the
// hidden layers and none on the last, which gives logits.
//
// The shipped Fashion-MNIST model (pipelines/fashion/data) takes pixels
// scaled to 0..1: apply Scaler{Mode: ScaleUnit} to raw IDX pixels first.
type MLP struct {
	Layers []Dense

	name string // the file it was read from, for error messages
}

// NewMLP returns an MLP of the given layer sizes (input first, classes last,
// e.g. 784, 256, 128, 10) with zero weights, ReLU on every layer but the
// last.
func NewMLP(dims ...int) (*MLP, error) {
	if len(dims) < 2 {
		return nil, fmt.Errorf("an MLP needs at least 2 sizes (input, output), got %v", dims)
	}
	m := &MLP{}
	for i := 0; i+1 < len(dims); i++ {
		in, out := dims[i], dims[i+1]
		if in <= 0 || out <= 0 || in > maxModelDim || out > maxModelDim {
			return nil, fmt.Errorf("MLP size %v: every size must be in 1..%d", dims, maxModelDim)
		}
		m.Layers = append(m.Layers, Dense{In: in, Out: out, W: make([]float32, in*out), B: make([]float32, out), ReLU: i+2 < len(dims)})
	}
	return m, nil
}

// Dims returns the layer sizes: the first layer's input, then each layer's
// output.
func (m *MLP) Dims() []int {
	if len(m.Layers) == 0 {
		return nil
	}
	d := []int{m.Layers[0].In}
	for _, l := range m.Layers {
		d = append(d, l.Out)
	}
	return d
}

func (m *MLP) label() string {
	if m.name != "" {
		return "model " + m.name
	}
	return "model"
}

// Validate checks every layer's shape and that the layers chain (the output
// of layer i is the input of layer i+1).
func (m *MLP) Validate() error {
	if len(m.Layers) == 0 {
		return fmt.Errorf("%s: %w: no layers", m.label(), ErrModelShape)
	}
	for i, l := range m.Layers {
		if err := l.check(); err != nil {
			return fmt.Errorf("%s: %w: layer %d: %v", m.label(), ErrModelShape, i, err)
		}
		if i > 0 && m.Layers[i-1].Out != l.In {
			return fmt.Errorf("%s: %w: layer %d outputs %d values but layer %d takes %d", m.label(), ErrModelShape, i-1, m.Layers[i-1].Out, i, l.In)
		}
	}
	return nil
}

// CheckShape fails unless the model's layer sizes are exactly dims (e.g.
// 784, 256, 128, 10); the error names the model file.
func (m *MLP) CheckShape(dims ...int) error {
	if err := m.Validate(); err != nil {
		return err
	}
	got := m.Dims()
	if len(got) != len(dims) {
		return fmt.Errorf("%s: %w: shape %s, want %s", m.label(), ErrModelShape, shapeString(got), shapeString(dims))
	}
	for i := range got {
		if got[i] != dims[i] {
			return fmt.Errorf("%s: %w: shape %s, want %s", m.label(), ErrModelShape, shapeString(got), shapeString(dims))
		}
	}
	return nil
}

func shapeString(d []int) string {
	s := make([]string, len(d))
	for i, v := range d {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, "-")
}

// Forward returns the logits of each row of b (ReLU on the hidden layers,
// none on the last): apply Softmax for probabilities.
func (m *MLP) Forward(b Batch) (Batch, error) {
	if err := m.Validate(); err != nil {
		return Batch{}, fmt.Errorf("%s: %w", b.ID(), err)
	}
	if b.Cols != m.Layers[0].In {
		return Batch{}, fmt.Errorf("%s: %d columns, %s takes %d", b.ID(), b.Cols, m.label(), m.Layers[0].In)
	}
	h := b
	for _, l := range m.Layers {
		var err error
		if h, err = l.Forward(h); err != nil {
			return Batch{}, err
		}
	}
	return h, nil
}

// Predict classifies each row of b: Forward, Softmax, Argmax. Scores are the
// class probabilities, Labels are copied from b.
func (m *MLP) Predict(b Batch) (Predictions, error) {
	if err := b.Validate(); err != nil {
		return Predictions{}, err
	}
	logits, err := m.Forward(b)
	if err != nil {
		return Predictions{}, err
	}
	probs, err := Softmax(logits)
	if err != nil {
		return Predictions{}, fmt.Errorf("%s: %w", m.label(), err)
	}
	return Argmax(probs), nil
}

// Model file format (all integers and floats little-endian):
//
//	"BGMLP"                     5 bytes, magic
//	version                     uint32 (ModelVersion)
//	layer count L               uint32, 1..64
//	L x (in, out, activation)   uint32 each; activation 0 = none, 1 = ReLU
//	L x (W in*out, B out)       float32, W row-major in x out
//	SHA-256                     32 bytes, of everything before it
const (
	ModelMagic   = "BGMLP"
	ModelVersion = 1
	// MaxModelBytes caps the weights of a model file (2 GiB).
	MaxModelBytes = 1 << 31
	maxLayers     = 64
	maxModelDim   = 1 << 24
)

// Errors of ReadMLP, wrapped (test with errors.Is) in errors naming the file.
var (
	ErrModelMagic     = errors.New("not a beamgpu MLP file (wrong magic)")
	ErrModelVersion   = errors.New("unknown model file version")
	ErrModelTruncated = errors.New("truncated model file")
	ErrModelTrailing  = errors.New("trailing data after the model")
	ErrModelChecksum  = errors.New("model checksum mismatch (corrupt file)")
	ErrModelShape     = errors.New("bad model shape")
	ErrModelValue     = errors.New("bad model value")
)

// WriteTo writes the model in the format above. It fails if the model is not
// valid (see Validate).
func (m *MLP) WriteTo(w io.Writer) (int64, error) {
	if err := m.Validate(); err != nil {
		return 0, err
	}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(w, h)}
	bw := bufio.NewWriterSize(cw, 1<<16)
	bw.WriteString(ModelMagic)
	put := func(v uint32) { bw.Write(binary.LittleEndian.AppendUint32(nil, v)) }
	put(ModelVersion)
	put(uint32(len(m.Layers)))
	for _, l := range m.Layers {
		put(uint32(l.In))
		put(uint32(l.Out))
		act := uint32(0)
		if l.ReLU {
			act = 1
		}
		put(act)
	}
	buf := make([]byte, 0, 4096)
	putFloats := func(f []float32) {
		for len(f) > 0 {
			n := min(len(f), 1024)
			buf = buf[:0]
			for _, v := range f[:n] {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			}
			bw.Write(buf)
			f = f[n:]
		}
	}
	for _, l := range m.Layers {
		putFloats(l.W)
		putFloats(l.B)
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	_, err := w.Write(h.Sum(nil))
	return cw.n + sha256.Size, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadMLP reads a model written by WriteTo; name (the file) is used in error
// messages and by CheckShape. It checks, in order: the magic, the version,
// the layer shapes (each positive, chaining), the length of the data (read
// incrementally: a header announcing more than the file holds allocates no
// more than the file), the SHA-256 checksum, and that every weight is finite.
func ReadMLP(r io.Reader, name string) (*MLP, error) {
	h := sha256.New()
	tr := io.TeeReader(r, h)
	var hdr [13]byte
	if n, err := io.ReadFull(tr, hdr[:]); err != nil {
		if n >= len(ModelMagic) && string(hdr[:len(ModelMagic)]) != ModelMagic {
			return nil, fmt.Errorf("%s: %w: starts with %q", name, ErrModelMagic, hdr[:len(ModelMagic)])
		}
		return nil, fmt.Errorf("%s: %w: header is %d bytes, got %d", name, ErrModelTruncated, len(hdr), n)
	}
	if string(hdr[:5]) != ModelMagic {
		return nil, fmt.Errorf("%s: %w: starts with %q, want %q", name, ErrModelMagic, hdr[:5], ModelMagic)
	}
	if v := binary.LittleEndian.Uint32(hdr[5:]); v != ModelVersion {
		return nil, fmt.Errorf("%s: %w %d (this build reads version %d)", name, ErrModelVersion, v, ModelVersion)
	}
	nl := binary.LittleEndian.Uint32(hdr[9:])
	if nl == 0 || nl > maxLayers {
		return nil, fmt.Errorf("%s: %w: %d layers (want 1..%d)", name, ErrModelShape, nl, maxLayers)
	}
	lh := make([]byte, 12*nl)
	if n, err := io.ReadFull(tr, lh); err != nil {
		return nil, fmt.Errorf("%s: %w: %d layer headers need %d bytes, got %d", name, ErrModelTruncated, nl, len(lh), n)
	}
	m := &MLP{name: name, Layers: make([]Dense, nl)}
	var total int64
	for i := range m.Layers {
		in := binary.LittleEndian.Uint32(lh[12*i:])
		out := binary.LittleEndian.Uint32(lh[12*i+4:])
		act := binary.LittleEndian.Uint32(lh[12*i+8:])
		if in == 0 || out == 0 || in > maxModelDim || out > maxModelDim {
			return nil, fmt.Errorf("%s: %w: layer %d is %dx%d (each size must be in 1..%d)", name, ErrModelShape, i, in, out, maxModelDim)
		}
		if act > 1 {
			return nil, fmt.Errorf("%s: %w: layer %d has activation %d (want 0 = none or 1 = ReLU)", name, ErrModelShape, i, act)
		}
		if i > 0 && uint32(m.Layers[i-1].Out) != in {
			return nil, fmt.Errorf("%s: %w: layer %d outputs %d values but layer %d takes %d", name, ErrModelShape, i-1, m.Layers[i-1].Out, i, in)
		}
		m.Layers[i] = Dense{In: int(in), Out: int(out), ReLU: act == 1}
		total += 4 * (int64(in)*int64(out) + int64(out))
		if total > MaxModelBytes {
			return nil, fmt.Errorf("%s: %w: the layers announce more than %d bytes of weights", name, ErrModelShape, int64(MaxModelBytes))
		}
	}
	data, err := io.ReadAll(io.LimitReader(tr, total))
	if err != nil {
		return nil, fmt.Errorf("%s: reading weights: %w", name, err)
	}
	if int64(len(data)) < total {
		return nil, fmt.Errorf("%s: %w: shape %s: expected %d bytes of weights, got %d", name, ErrModelTruncated, shapeString(m.Dims()), total, len(data))
	}
	want := h.Sum(nil)
	var sum [sha256.Size + 1]byte
	n, _ := io.ReadFull(r, sum[:])
	switch {
	case n < sha256.Size:
		return nil, fmt.Errorf("%s: %w: expected a %d-byte checksum after the weights, got %d bytes", name, ErrModelTruncated, sha256.Size, n)
	case n > sha256.Size:
		return nil, fmt.Errorf("%s: %w: the file goes on after the checksum", name, ErrModelTrailing)
	case !bytes.Equal(sum[:sha256.Size], want):
		return nil, fmt.Errorf("%s: %w: stored SHA-256 %x, computed %x", name, ErrModelChecksum, sum[:sha256.Size], want)
	}
	off := 0
	floats := func(layer int, what string, n int) ([]float32, error) {
		f := make([]float32, n)
		for i := range f {
			f[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
			off += 4
			if isBad(f[i]) {
				return nil, fmt.Errorf("%s: %w: layer %d %s[%d] is %v", name, ErrModelValue, layer, what, i, f[i])
			}
		}
		return f, nil
	}
	for i := range m.Layers {
		l := &m.Layers[i]
		if l.W, err = floats(i, "W", l.In*l.Out); err != nil {
			return nil, err
		}
		if l.B, err = floats(i, "B", l.Out); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// SaveMLP writes m to path atomically: to a temporary file in the same
// directory, synced, then renamed over path (see WriteFileAtomic).
func SaveMLP(path string, m *MLP) error {
	return WriteFileAtomic(path, func(w io.Writer) error {
		_, err := m.WriteTo(w)
		return err
	})
}

// LoadMLP reads a model file written by SaveMLP (opened with files.OpenRead: a
// local path, or a URL where an opener is installed).
func LoadMLP(path string) (*MLP, error) {
	f, err := files.OpenRead(context.Background(), path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadMLP(bufio.NewReaderSize(f, 1<<16), path)
}
