package raster

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/beamgpu/beamgpu/internal/parallel"
	"golang.org/x/image/tiff/lzw"
)

// Decoding a window of a band: the strips or tiles that cover it, on up to
// GOMAXPROCS goroutines, each decompressed no further than its header declares.

// rowSink receives decoded rows of a window: row y of the band, columns
// x0..x0+len(dn)-1, as Landsat DNs (no-data 0).
type rowSink func(y, x0 int, dn []uint16)

// DecodeWindow decodes window win of a band from the blocks that cover it
// (blocks as Layout.Covering returns them) and hands its rows to put. It
// reads nothing but those blocks, and decodes from each no more than the
// header declares; a block that decodes to fewer bytes is an error naming
// the file and the block.
//
// The blocks are decoded on up to GOMAXPROCS goroutines (each a run of
// consecutive blocks): a window is one element of a bundle, and a runner
// that gives a scene's windows to one bundle (prism does) would otherwise
// decode a scene on one core per band. So put may be called from several
// goroutines at once, for rows of different blocks (never the same pixels
// twice), and r must allow concurrent ReadAt calls, as io.ReaderAt's
// contract says.
func DecodeWindow(r io.ReaderAt, f BandHeader, blocks []Block, win Rect, put func(y, x0 int, dn []uint16)) error {
	if win.W <= 0 || win.H <= 0 || win.X < 0 || win.Y < 0 || win.X+win.W > f.Width || win.Y+win.H > f.Height {
		return fmt.Errorf("%s: window %v outside the %dx%d band", f.Name, win, f.Width, f.Height)
	}
	type part struct {
		b      Block
		br, ix Rect
	}
	parts := make([]part, 0, len(blocks))
	covered := 0
	for _, b := range blocks {
		if b.Index < 0 || b.Index >= f.blocksAcross()*f.blocksDown() {
			return fmt.Errorf("%s: block %d does not exist", f.Name, b.Index)
		}
		br := f.blockRect(b.Index)
		ix := intersect(br, win)
		if ix.W <= 0 || ix.H <= 0 {
			continue
		}
		covered += ix.Area()
		parts = append(parts, part{b, br, ix})
	}
	if covered != win.Area() {
		return fmt.Errorf("%s: the blocks given cover %d of the %d pixels of window %v", f.Name, covered, win.Area(), win)
	}
	// decode decodes parts[lo:hi] in order with one decoder.
	decode := func(lo, hi int) error {
		dec := &blockDecoder{f: f}
		defer dec.close()
		for _, p := range parts[lo:hi] {
			var err error
			if f.Tiled {
				err = dec.tile(r, p.b, p.br, p.ix, put)
			} else {
				err = dec.strip(r, p.b, p.br, p.ix, put)
			}
			if err != nil {
				return fmt.Errorf("%s: corrupt or truncated TIFF: block %d: %w", f.Name, p.b.Index, err)
			}
		}
		return nil
	}
	// Each goroutine decodes a run of consecutive blocks; a run's error is
	// kept at its first block, so that the error returned is the first
	// failing run's, in block order.
	errs := make([]error, len(parts))
	parallel.Chunks(min(runtime.GOMAXPROCS(0), maxDecodeWorkers), len(parts), func(lo, hi int) { errs[lo] = decode(lo, hi) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// maxDecodeWorkers bounds the goroutines of one DecodeWindow (a window's
// bands are decoded at once, each by its own DecodeWindow).
const maxDecodeWorkers = 16

func intersect(a, b Rect) Rect {
	x0, y0 := max(a.X, b.X), max(a.Y, b.Y)
	x1, y1 := min(a.X+a.W, b.X+b.W), min(a.Y+a.H, b.Y+b.H)
	return Rect{X: x0, Y: y0, W: max(0, x1-x0), H: max(0, y1-y0)}
}

// blockDecoder decodes the blocks of one window of a band, reusing its
// buffers and its Deflate state from block to block (a stripped band has a
// strip per row).
type blockDecoder struct {
	f         BandHeader
	src       *bufio.Reader
	zr        io.ReadCloser // zlib, reset for each block
	raw, comp []byte
	row       []uint16
}

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// decompress returns a reader of the decoded bytes of a block read from src.
func (d *blockDecoder) decompress(src io.Reader) (io.Reader, func(), error) {
	switch d.f.Compression {
	case compressionNone:
		return src, func() {}, nil
	case compressionLZW:
		rc := lzw.NewReader(src, lzw.MSB, 8)
		return rc, func() { rc.Close() }, nil
	case compressionDeflate, compressionOldDeflate:
		var err error
		if d.zr == nil {
			d.zr, err = zlib.NewReader(src)
		} else {
			err = d.zr.(zlib.Resetter).Reset(src, nil)
		}
		if err != nil {
			d.zr = nil
			return nil, nil, fmt.Errorf("corrupt Deflate data: %w", err)
		}
		return d.zr, func() {}, nil
	}
	return nil, nil, fmt.Errorf("compression %d", d.f.Compression)
}

func (d *blockDecoder) close() {
	if d.zr != nil {
		d.zr.Close()
	}
}

// readDecoded fills buf from a decompressor, naming a short block.
func readDecoded(dec io.Reader, buf []byte, want int64, done int64) error {
	if _, err := io.ReadFull(dec, buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("decodes to fewer than the %d bytes the header declares", want)
		}
		return fmt.Errorf("after %d of %d decoded bytes: %w", done, want, err)
	}
	return nil
}

// samples converts a row of raw 16-bit samples to uint16 values, undoing
// the horizontal predictor.
func samples(f BandHeader, raw []byte, out []uint16) {
	if f.BigEndian {
		for i := range out {
			out[i] = uint16(raw[2*i])<<8 | uint16(raw[2*i+1])
		}
	} else {
		for i := range out {
			out[i] = uint16(raw[2*i]) | uint16(raw[2*i+1])<<8
		}
	}
	if f.Predictor == 2 {
		for i := 1; i < len(out); i++ {
			out[i] += out[i-1]
		}
	}
}

// toDNs maps raw samples to Landsat DNs in place (see toDN).
func toDNs(f BandHeader, v []uint16) {
	if !f.Signed && !f.HasNoData {
		return
	}
	si := sampleInfo{format: 1, noData: f.NoData, hasNoData: f.HasNoData}
	if f.Signed {
		si.format = 2
	}
	for i, x := range v {
		v[i] = toDN(x, si)
	}
}

// strip decodes the rows of strip b (covering br) that window part ix
// needs, row by row: an uncompressed strip is read at the rows' offsets, a
// compressed one is decoded up to the last row needed.
func (d *blockDecoder) strip(r io.ReaderAt, b Block, br, ix Rect, put rowSink) error {
	f := d.f
	rowBytes := 2 * int64(f.Width)
	d.raw, d.row = grow(d.raw, int(rowBytes)), grow(d.row, f.Width)
	raw, row := d.raw, d.row
	if f.Compression == compressionNone && f.Predictor == 1 {
		part := raw[:2*ix.W]
		for y := ix.Y; y < ix.Y+ix.H; y++ {
			at := b.Offset + int64(y-br.Y)*rowBytes + 2*int64(ix.X)
			if _, err := r.ReadAt(part, at); err != nil {
				return fmt.Errorf("reading row %d: %w", y, err)
			}
			samples(f, part, row[:ix.W])
			toDNs(f, row[:ix.W])
			put(y, ix.X, row[:ix.W])
		}
		return nil
	}
	section := io.NewSectionReader(r, b.Offset, b.Count)
	if d.src == nil {
		d.src = bufio.NewReaderSize(section, 64<<10)
	} else {
		d.src.Reset(section)
	}
	dec, done, err := d.decompress(d.src)
	if err != nil {
		return err
	}
	defer done()
	want := f.decodedBytes(b.Index)
	for y := br.Y; y < ix.Y+ix.H; y++ {
		if err := readDecoded(dec, raw, want, int64(y-br.Y)*rowBytes); err != nil {
			return err
		}
		if y < ix.Y {
			continue
		}
		samples(f, raw, row)
		part := row[ix.X : ix.X+ix.W]
		toDNs(f, part)
		put(y, ix.X, part)
	}
	return nil
}

// tile decodes tile b (covering br) whole, as stored, and hands the rows of
// window part ix to put.
func (d *blockDecoder) tile(r io.ReaderAt, b Block, br, ix Rect, put rowSink) error {
	f := d.f
	want := f.decodedBytes(b.Index)
	d.raw = grow(d.raw, int(want))
	buf := d.raw
	if f.Compression == compressionNone {
		if _, err := r.ReadAt(buf, b.Offset); err != nil {
			return fmt.Errorf("reading: %w", err)
		}
	} else {
		d.comp = grow(d.comp, int(b.Count))
		if _, err := r.ReadAt(d.comp, b.Offset); err != nil {
			return fmt.Errorf("reading: %w", err)
		}
		dec, done, err := d.decompress(bytes.NewReader(d.comp))
		if err != nil {
			return err
		}
		err = readDecoded(dec, buf, want, 0)
		done()
		if err != nil {
			return err
		}
	}
	d.row = grow(d.row, f.BlockW)
	row := d.row
	for y := ix.Y; y < ix.Y+ix.H; y++ {
		ty := y - br.Y
		samples(f, buf[2*ty*f.BlockW:2*(ty+1)*f.BlockW], row)
		part := row[ix.X-br.X : ix.X-br.X+ix.W]
		toDNs(f, part)
		put(y, ix.X, part)
	}
	return nil
}
