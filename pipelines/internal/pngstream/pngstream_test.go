package pngstream

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"hash/adler32"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// picture is a w x h NRGBA picture of smooth gradients with noise (so that
// every filter gets chosen somewhere), opaque or with varying alpha.
func picture(w, h int, opaque bool, seed uint64) *image.NRGBA {
	r := rand.New(rand.NewPCG(seed, 7))
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			a := uint8(255)
			if !opaque {
				a = uint8(x * 3)
			}
			n := uint8(r.IntN(8))
			m.SetNRGBA(x, y, color.NRGBA{uint8(x) + n, uint8(y * 2), uint8(x+y) ^ n, a})
		}
	}
	return m
}

func encode(t testing.TB, m *image.NRGBA, rows int, opaque bool, level int) []byte {
	var buf bytes.Buffer
	w, h := m.Bounds().Dx(), m.Bounds().Dy()
	calls := 0
	err := Encode(&buf, w, h, rows, opaque, level, func(y0, n int, pix []byte) error {
		require.Equal(t, calls*rows, y0, "strips in order")
		require.Len(t, pix, 4*w*n)
		calls++
		copy(pix, m.Pix[y0*m.Stride:(y0+n)*m.Stride])
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, (h+rows-1)/rows, calls)
	return buf.Bytes()
}

// What Encode writes decodes (image/png) to the picture it was given, for
// sizes and strip heights that do not divide each other, opaque (RGB) and
// not (RGBA), at several levels.
func TestEncodeRoundTrips(t *testing.T) {
	for _, c := range []struct{ w, h, rows int }{{1, 1, 1}, {7, 5, 1}, {31, 257, 16}, {300, 199, 64}, {64, 64, 1000}} {
		for _, opaque := range []bool{true, false} {
			for _, level := range []int{flate.BestSpeed, flate.DefaultCompression, flate.NoCompression} {
				name := fmt.Sprintf("%dx%d/%d rows/opaque=%v/level=%d", c.w, c.h, c.rows, opaque, level)
				m := picture(c.w, c.h, opaque, uint64(c.w*c.h))
				got, err := png.Decode(bytes.NewReader(encode(t, m, c.rows, opaque, level)))
				require.NoError(t, err, name)
				require.Equal(t, m.Bounds(), got.Bounds(), name)
				for y := 0; y < c.h; y++ {
					for x := 0; x < c.w; x++ {
						want := m.NRGBAAt(x, y)
						if !assert.Equal(t, want, color.NRGBAModel.Convert(got.At(x, y)), "%s at %d,%d", name, x, y) {
							return
						}
					}
				}
				if opaque {
					_, isRGBA := got.(*image.RGBA) // image/png decodes RGB as *image.RGBA
					assert.True(t, isRGBA, name)
				}
			}
		}
	}
}

// An error of fill stops the encoding: it is returned and the picture is
// left without its end, so that no reader takes it for whole.
func TestFillErrorLeavesThePictureUnfinished(t *testing.T) {
	boom := errors.New("reading rows 64 to 127: boom")
	var buf bytes.Buffer
	err := Encode(&buf, 100, 300, 64, true, flate.BestSpeed, func(y0, n int, pix []byte) error {
		if y0 == 64 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	assert.False(t, bytes.Contains(buf.Bytes(), []byte("IEND")))
	_, err = png.Decode(bytes.NewReader(buf.Bytes()))
	assert.Error(t, err)
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after -= len(p); w.after < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// An error of the output stops the encoding early (fill is not asked for
// every strip) and is returned.
func TestWriteErrorStops(t *testing.T) {
	calls := 0
	err := Encode(&failingWriter{after: 100}, 1000, 10000, 10, false, flate.BestSpeed, func(y0, n int, pix []byte) error {
		calls++
		for i := range pix {
			pix[i] = byte(i*7 + y0)
		}
		return nil
	})
	require.ErrorContains(t, err, "disk full")
	assert.Less(t, calls, 1000)
}

func TestBadArguments(t *testing.T) {
	fill := func(int, int, []byte) error { return nil }
	assert.Error(t, Encode(&bytes.Buffer{}, 0, 5, 1, true, flate.BestSpeed, fill))
	assert.Error(t, Encode(&bytes.Buffer{}, 5, 5, 0, true, flate.BestSpeed, fill))
	assert.Error(t, Encode(&bytes.Buffer{}, 5, 5, 1, true, 42, fill))
}

// combineAdler of the parts is the Adler-32 of the whole, for parts of
// every size around the modulus.
func TestCombineAdler(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 300000)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for _, cuts := range [][]int{{0}, {1}, {65520, 65521, 65522}, {100, 200000}, {299999}} {
		a, first, at := uint32(1), true, 0
		for _, c := range append(cuts, len(data)) {
			a = combineAdler(a, adler32.Checksum(data[at:c]), c-at, first)
			first, at = false, c
		}
		assert.Equal(t, adler32.Checksum(data), a, "cuts %v", cuts)
	}
}

// BenchmarkEncode encodes a 4096x2048 opaque picture at zlib's fastest level
// and reports it as a ratio to image/png encoding the same picture at the
// same level in the same run (ratio_to_image_png: its time over ours).
func BenchmarkEncode(b *testing.B) {
	m := picture(4096, 2048, true, 1)
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	var ours, theirs time.Duration
	for b.Loop() {
		t := time.Now()
		encode(b, m, 64, true, flate.BestSpeed)
		ours += time.Since(t)
		t = time.Now()
		require.NoError(b, enc.Encode(&bytes.Buffer{}, m))
		theirs += time.Since(t)
	}
	b.ReportMetric(float64(theirs)/float64(ours), "ratio_to_image_png")
}
