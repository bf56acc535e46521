// Package rastertest writes the inputs of the raster steps for tests.
//
// It writes single-band 16-bit GeoTIFFs in the layouts Landsat products and
// GIS tools use (stripped or tiled; uncompressed, LZW or Deflate; with or
// without the horizontal predictor; unsigned or signed with a GDAL no-data
// value), and whole Landsat 8 scenes (an _MTL.txt and bands 2-5), up to
// full size.
//
// Files are written block by block from a pixel function, so a full-size
// band never has to be in memory. golang.org/x/image/tiff and GDAL read
// what it writes (the package's tests check the first; gdalinfo the second).
package rastertest

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// TIFF compression schemes.
const (
	None    = 1
	LZW     = 5
	Deflate = 8
)

// TIFF describes how a band file is laid out.
type TIFF struct {
	// Tiled writes BlockW x BlockH tiles (multiples of 16); otherwise strips
	// of BlockH rows (0: one strip).
	Tiled          bool
	BlockW, BlockH int
	// Compression is None (the default when 0), LZW or Deflate.
	Compression int
	// Predictor applies horizontal differencing (TIFF predictor 2).
	Predictor bool
	// Signed writes SampleFormat 2 (int16): pixel values are the bits.
	Signed bool
	// NoData, when set, is written as GDAL_NODATA.
	NoData *int64
	// BigEndian writes a Motorola-order ("MM") file.
	BigEndian bool
	// Level is the Deflate level (0: zlib's default).
	Level int
}

// Pixel returns the raw 16-bit sample at column x, row y.
type Pixel func(x, y int) uint16

// Slice is the Pixel of a row-major plane of width w.
func Slice(plane []uint16, w int) Pixel {
	return func(x, y int) uint16 { return plane[y*w+x] }
}

// Encode writes a w x h band to a buffer.
func Encode(w, h int, px Pixel, t TIFF) ([]byte, error) {
	var b seekBuffer
	if err := Write(&b, w, h, px, t); err != nil {
		return nil, err
	}
	return b.buf, nil
}

// Write writes a w x h single-band 16-bit TIFF to ws: the header, the
// blocks in order, then the image file directory.
func Write(ws io.WriteSeeker, w, h int, px Pixel, t TIFF) error {
	if w <= 0 || h <= 0 {
		return fmt.Errorf("rastertest: size %dx%d", w, h)
	}
	if t.Compression == 0 {
		t.Compression = None
	}
	var order binary.ByteOrder = binary.LittleEndian
	magic := []byte("II*\x00")
	if t.BigEndian {
		order, magic = binary.BigEndian, []byte("MM\x00*")
	}
	bw, bh := w, h
	if t.Tiled {
		bw, bh = t.BlockW, t.BlockH
		if bw <= 0 || bh <= 0 || bw%16 != 0 || bh%16 != 0 {
			return fmt.Errorf("rastertest: tile size %dx%d: want multiples of 16", bw, bh)
		}
	} else if t.BlockH > 0 {
		bh = min(t.BlockH, h)
	}
	across, down := (w+bw-1)/bw, (h+bh-1)/bh
	out := bufio.NewWriterSize(ws, 1<<20)
	pos := int64(8)
	header := append(append([]byte(nil), magic...), 0, 0, 0, 0)
	if _, err := out.Write(header); err != nil {
		return err
	}
	var offsets, counts []uint32
	var block bytes.Buffer
	var zw *zlib.Writer // reused from block to block
	row := make([]uint16, bw)
	raw := make([]byte, 2*bw)
	for by := 0; by < down; by++ {
		for bx := 0; bx < across; bx++ {
			rows := bh
			if !t.Tiled {
				rows = min(bh, h-by*bh)
			}
			block.Reset()
			enc, err := compressor(&block, t, &zw)
			if err != nil {
				return err
			}
			for r := 0; r < rows; r++ {
				y := by*bh + r
				for c := range row {
					x := bx*bw + c
					row[c] = 0
					if x < w && y < h {
						row[c] = px(x, y)
					}
				}
				if t.Predictor {
					for c := len(row) - 1; c > 0; c-- {
						row[c] -= row[c-1]
					}
				}
				for c, v := range row {
					order.PutUint16(raw[2*c:], v)
				}
				if _, err := enc.Write(raw); err != nil {
					return err
				}
			}
			if err := enc.Close(); err != nil {
				return err
			}
			if pos+int64(block.Len()) > 1<<32-1 {
				return errors.New("rastertest: file larger than 4 GB")
			}
			offsets, counts = append(offsets, uint32(pos)), append(counts, uint32(block.Len()))
			n, err := out.Write(block.Bytes())
			if err != nil {
				return err
			}
			pos += int64(n)
			if pos%2 == 1 { // word-align the next block
				out.WriteByte(0)
				pos++
			}
		}
	}

	// The image file directory, its out-of-line values after it.
	type entry struct {
		tag, typ uint16
		vals     []uint32
		ascii    string
	}
	short := func(tag uint16, v ...uint32) entry { return entry{tag: tag, typ: 3, vals: v} }
	long := func(tag uint16, v ...uint32) entry { return entry{tag: tag, typ: 4, vals: v} }
	predictor, format := uint32(1), uint32(1)
	if t.Predictor {
		predictor = 2
	}
	if t.Signed {
		format = 2
	}
	entries := []entry{
		long(256, uint32(w)), long(257, uint32(h)), short(258, 16), short(259, uint32(t.Compression)),
		short(262, 1), short(277, 1), short(284, 1), short(317, predictor), short(339, format),
	}
	if t.Tiled {
		entries = append(entries, short(322, uint32(bw)), short(323, uint32(bh)), long(324, offsets...), long(325, counts...))
	} else {
		entries = append(entries, long(273, offsets...), long(278, uint32(bh)), long(279, counts...))
	}
	if t.NoData != nil {
		entries = append(entries, entry{tag: 42113, typ: 2, ascii: strconv.FormatInt(*t.NoData, 10) + "\x00"})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].tag < entries[j].tag })
	ifdAt := pos
	extraAt := ifdAt + 2 + 12*int64(len(entries)) + 4
	var ifd, extra bytes.Buffer
	put16 := func(b *bytes.Buffer, v uint16) { var x [2]byte; order.PutUint16(x[:], v); b.Write(x[:]) }
	put32 := func(b *bytes.Buffer, v uint32) { var x [4]byte; order.PutUint32(x[:], v); b.Write(x[:]) }
	put16(&ifd, uint16(len(entries)))
	for _, e := range entries {
		var val bytes.Buffer
		count := len(e.vals)
		switch {
		case e.typ == 2:
			count = len(e.ascii)
			val.WriteString(e.ascii)
		case e.typ == 3:
			for _, v := range e.vals {
				put16(&val, uint16(v))
			}
		default:
			for _, v := range e.vals {
				put32(&val, v)
			}
		}
		put16(&ifd, e.tag)
		put16(&ifd, e.typ)
		put32(&ifd, uint32(count))
		if val.Len() <= 4 {
			v := append(val.Bytes(), make([]byte, 4-val.Len())...)
			ifd.Write(v)
		} else {
			put32(&ifd, uint32(extraAt+int64(extra.Len())))
			extra.Write(val.Bytes())
			if extra.Len()%2 == 1 {
				extra.WriteByte(0)
			}
		}
	}
	put32(&ifd, 0) // no next IFD
	if _, err := out.Write(ifd.Bytes()); err != nil {
		return err
	}
	if _, err := out.Write(extra.Bytes()); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if _, err := ws.Seek(4, io.SeekStart); err != nil {
		return err
	}
	var at [4]byte
	order.PutUint32(at[:], uint32(ifdAt))
	if _, err := ws.Write(at[:]); err != nil {
		return err
	}
	_, err := ws.Seek(0, io.SeekEnd)
	return err
}

func compressor(w io.Writer, t TIFF, zw **zlib.Writer) (io.WriteCloser, error) {
	switch t.Compression {
	case None:
		return nopCloser{w}, nil
	case Deflate:
		if *zw != nil {
			(*zw).Reset(w)
			return *zw, nil
		}
		level := t.Level
		if level == 0 {
			level = zlib.DefaultCompression
		}
		var err error
		*zw, err = zlib.NewWriterLevel(w, level)
		return *zw, err
	case LZW:
		return newLZW(w), nil
	}
	return nil, fmt.Errorf("rastertest: compression %d", t.Compression)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// seekBuffer is an in-memory io.WriteSeeker.
type seekBuffer struct {
	buf []byte
	pos int
}

func (b *seekBuffer) Write(p []byte) (int, error) {
	if need := b.pos + len(p); need > len(b.buf) {
		b.buf = append(b.buf, make([]byte, need-len(b.buf))...)
	}
	copy(b.buf[b.pos:], p)
	b.pos += len(p)
	return len(p), nil
}

func (b *seekBuffer) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		b.pos = int(off)
	case io.SeekCurrent:
		b.pos += int(off)
	case io.SeekEnd:
		b.pos = len(b.buf) + int(off)
	}
	return int64(b.pos), nil
}

// lzwWriter is TIFF's LZW (MSB-first codes of 9 to 12 bits, a Clear code
// first, the code width growing one code earlier than GIF's).
type lzwWriter struct {
	w       *bufio.Writer
	bits    uint32
	nbits   uint
	width   uint
	emitted int // codes emitted since the last Clear
	table   map[uint32]uint16
	prefix  int // current string's code, -1 if none
}

const (
	lzwClear = 256
	lzwEOI   = 257
)

func newLZW(w io.Writer) *lzwWriter {
	z := &lzwWriter{w: bufio.NewWriter(w), prefix: -1}
	z.reset()
	z.code(lzwClear)
	return z
}

func (z *lzwWriter) reset() {
	z.width, z.emitted, z.table = 9, 0, map[uint32]uint16{}
}

func (z *lzwWriter) code(c int) {
	z.bits |= uint32(c) << (32 - z.width - z.nbits)
	z.nbits += z.width
	for z.nbits >= 8 {
		z.w.WriteByte(byte(z.bits >> 24))
		z.bits <<= 8
		z.nbits -= 8
	}
}

// data emits the code of a string and grows the code width as the decoder
// will: after the k-th code since a Clear it has 258+k table entries.
func (z *lzwWriter) data(c int) {
	z.code(c)
	z.emitted++
	if 258+z.emitted >= 1<<z.width && z.width < 12 {
		z.width++
	}
}

func (z *lzwWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if z.prefix < 0 {
			z.prefix = int(b)
			continue
		}
		key := uint32(z.prefix)<<8 | uint32(b)
		if c, ok := z.table[key]; ok {
			z.prefix = int(c)
			continue
		}
		z.data(z.prefix)
		next := 258 + len(z.table)
		z.table[key] = uint16(next)
		z.prefix = int(b)
		if next >= 4093 {
			z.code(lzwClear)
			z.reset()
		}
	}
	return len(p), nil
}

func (z *lzwWriter) Close() error {
	if z.prefix >= 0 {
		z.data(z.prefix)
	}
	z.code(lzwEOI)
	if z.nbits > 0 {
		z.w.WriteByte(byte(z.bits >> 24))
	}
	return z.w.Flush()
}
