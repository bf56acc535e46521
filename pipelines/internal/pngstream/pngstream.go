// Package pngstream writes PNG pictures too large to hold in memory.
//
// It writes a strip of rows at a time, and compresses the strips on all
// cores.
//
// image/png compresses on one goroutine and asks an image.Image for each
// pixel through At: a full-size Landsat scene's true-colour picture (63
// megapixels) took about 7 s to encode that way at zlib's fastest level. Here
// each strip is filtered (the adaptive per-row filter of image/png) and
// deflated on its own, with a sync flush that ends it on a byte boundary, as
// pigz does; the strips' deflate blocks, written in order, make one zlib
// stream whose Adler-32 is combined from the strips'. The file is an ordinary
// PNG; it is a little larger than one compressed in one piece, as no match
// reaches back across a strip.
package pngstream

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// Encode writes a w x h picture as PNG (8 bits per channel) to out. fill is
// asked for the rows in order, a strip of rows at a time (n rows from y0,
// rows at most): it writes them into pix as non-premultiplied RGBA (4 bytes
// per pixel, image.NRGBA's layout with a stride of 4w). An opaque picture is
// written as RGB. level is a compress/flate level (flate.BestSpeed for the
// largest pictures). The strips are compressed on up to GOMAXPROCS goroutines
// while fill makes the next ones; about twice that many strips are held at
// once. An error of fill or of out stops the encoding, leaves the picture
// unfinished (no final block, no IEND), and is returned.
func Encode(out io.Writer, w, h, rows int, opaque bool, level int, fill func(y0, n int, pix []byte) error) error {
	if w <= 0 || h <= 0 || w > 1<<24 || h > 1<<24 {
		return fmt.Errorf("pngstream: picture of %dx%d pixels", w, h)
	}
	if rows <= 0 {
		return fmt.Errorf("pngstream: strips of %d rows", rows)
	}
	if level < flate.HuffmanOnly || level > flate.BestCompression {
		return fmt.Errorf("pngstream: invalid compression level %d", level)
	}
	bpp, colorType := 4, byte(6) // RGBA
	if opaque {
		bpp, colorType = 3, 2 // RGB
	}
	pw := &pngWriter{w: out}
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, colorType // bit depth, colour type; compression, filter, interlace 0
	pw.raw([]byte("\x89PNG\r\n\x1a\n"))
	pw.chunk("IHDR", ihdr[:])
	pw.chunk("IDAT", []byte{0x78, 0x01}) // zlib header: deflate, 32 KiB window

	workers := max(1, runtime.GOMAXPROCS(0))
	type result struct {
		z       []byte
		adler   uint32
		n       int // uncompressed (filtered) bytes
		err     error
		pending chan struct{}
		last    bool // the end of the strips: finish the picture unless err
	}
	jobs := make(chan func(*worker), workers)
	results := make(chan *result, workers) // in strip order
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			w := &worker{level: level}
			for job := range jobs {
				job(w)
			}
		})
	}
	// The writer takes the strips in order as they are done.
	written := make(chan error, 1)
	var failed atomic.Bool
	go func() {
		adler, first := uint32(1), true
		var err error
		for r := range results {
			<-r.pending
			if err == nil {
				err = r.err
			}
			if err != nil {
				failed.Store(true)
				continue
			}
			if r.last {
				break
			}
			adler = combineAdler(adler, r.adler, r.n, first)
			first = false
			pw.chunk("IDAT", r.z)
			err = pw.err
		}
		for range results { // after the last: nothing more comes
		}
		if err == nil {
			var tail [6]byte
			tail[0], tail[1] = 0x03, 0x00 // an empty final block (fixed Huffman)
			binary.BigEndian.PutUint32(tail[2:], adler)
			pw.chunk("IDAT", tail[:])
			pw.chunk("IEND", nil)
			err = pw.err
		}
		written <- err
	}()

	stride := bpp * w
	prev := make([]byte, stride) // the row above the strip's first (zeros above the picture)
	var err error
	for y0 := 0; y0 < h && err == nil && !failed.Load(); y0 += rows {
		n := min(rows, h-y0)
		pix := make([]byte, 4*w*n)
		if err = fill(y0, n, pix); err != nil {
			break
		}
		if opaque { // RGBA -> RGB in place
			for i := 0; i < w*n; i++ {
				copy(pix[3*i:3*i+3], pix[4*i:4*i+3])
			}
			pix = pix[:3*w*n]
		}
		above := prev
		prev = append([]byte(nil), pix[len(pix)-stride:]...)
		r := &result{pending: make(chan struct{})}
		results <- r // blocks while workers strips are in flight
		jobs <- func(w *worker) {
			defer close(r.pending)
			r.z, r.adler, r.n, r.err = w.compressStrip(pix, above, stride, bpp)
		}
	}
	done := make(chan struct{})
	close(done)
	results <- &result{err: err, pending: done, last: true}
	close(jobs)
	wg.Wait()
	close(results)
	if werr := <-written; err == nil {
		err = werr
	}
	return err
}

// worker is one compressing goroutine's state, kept from strip to strip: a
// Deflate writer (hundreds of KiB of tables) and the row filter's buffers.
type worker struct {
	level int
	zw    *flate.Writer
	f     rowFilter
}

// compressStrip filters the strip's rows (the row above the first is above)
// and deflates them, ending with a sync flush and no final block.
func (w *worker) compressStrip(pix, above []byte, stride, bpp int) ([]byte, uint32, int, error) {
	rows := len(pix) / stride
	filtered := make([]byte, 0, rows*(stride+1))
	for y := 0; y < rows; y++ {
		cur := pix[y*stride : (y+1)*stride]
		filtered = w.f.append(filtered, cur, above, bpp)
		above = cur
	}
	var buf bytes.Buffer
	buf.Grow(len(filtered) / 2)
	if w.zw == nil {
		zw, err := flate.NewWriter(&buf, w.level)
		if err != nil {
			return nil, 0, 0, err
		}
		w.zw = zw
	} else {
		w.zw.Reset(&buf)
	}
	if _, err := w.zw.Write(filtered); err != nil {
		return nil, 0, 0, err
	}
	if err := w.zw.Flush(); err != nil {
		return nil, 0, 0, err
	}
	return buf.Bytes(), adler32.Checksum(filtered), len(filtered), nil
}

// rowFilter chooses each row's PNG filter as image/png does: the one whose
// output has the smallest sum of absolute values (as signed bytes).
type rowFilter struct{ cand [4][]byte } // Sub, Up, Average, Paeth (None is the row itself)

func (f *rowFilter) append(dst, cur, above []byte, bpp int) []byte {
	n := len(cur)
	for i := range f.cand {
		if cap(f.cand[i]) < n {
			f.cand[i] = make([]byte, n)
		}
		f.cand[i] = f.cand[i][:n]
	}
	sub, up, avg, paeth := f.cand[0][:n], f.cand[1][:n], f.cand[2][:n], f.cand[3][:n]
	above = above[:n]
	// One pass computes every candidate and its sum; the first pixel has
	// no left neighbour (a = c = 0, where Paeth predicts b).
	var sNone, sSub, sUp, sAvg, sPaeth int
	for i := range min(bpp, n) {
		v, b := cur[i], above[i]
		sub[i], up[i], avg[i], paeth[i] = v, v-b, v-b/2, v-b
		sNone += abs8(v)
		sSub += abs8(v)
		sUp += abs8(v - b)
		sAvg += abs8(v - b/2)
		sPaeth += abs8(v - b)
	}
	for i := bpp; i < n; i++ {
		v, a, b, c := cur[i], cur[i-bpp], above[i], above[i-bpp]
		fs, fu := v-a, v-b
		fa := v - byte((int(a)+int(b))>>1)
		fp := v - paethPredict(a, b, c)
		sub[i], up[i], avg[i], paeth[i] = fs, fu, fa, fp
		sNone += abs8(v)
		sSub += abs8(fs)
		sUp += abs8(fu)
		sAvg += abs8(fa)
		sPaeth += abs8(fp)
	}
	best, sum := 0, sNone
	for k, s := range [4]int{sSub, sUp, sAvg, sPaeth} {
		if s < sum {
			best, sum = k+1, s
		}
	}
	dst = append(dst, byte(best))
	if best == 0 {
		return append(dst, cur...)
	}
	return append(dst, f.cand[best-1]...)
}

func abs8(v byte) int {
	x := int(int8(v))
	m := x >> 63
	return (x ^ m) - m
}

// paethPredict is the Paeth predictor of the PNG specification.
func paethPredict(a, b, c byte) byte {
	// p - a = b - c, p - b = a - c, p - c = a + b - 2c.
	pa, pb, pc := absInt(int(b)-int(c)), absInt(int(a)-int(c)), absInt(int(a)+int(b)-2*int(c))
	if pa <= pb && pa <= pc {
		return a
	}
	if pb <= pc {
		return b
	}
	return c
}

func absInt(x int) int {
	m := x >> 63
	return (x ^ m) - m
}

// adlerBase is Adler-32's modulus.
const adlerBase = 65521

// combineAdler is the Adler-32 of a stream of which a is the checksum of the
// start and b that of the next n bytes (zlib's adler32_combine); first says a
// covers nothing yet (it is then 1, the empty stream's).
func combineAdler(a, b uint32, n int, first bool) uint32 {
	if first {
		return b
	}
	rem := uint32(n % adlerBase)
	sum1 := a & 0xffff
	sum2 := (rem * sum1) % adlerBase
	sum1 += (b & 0xffff) + adlerBase - 1
	sum2 += (a >> 16) + (b >> 16) + adlerBase - rem
	if sum1 >= adlerBase {
		sum1 -= adlerBase
	}
	if sum1 >= adlerBase {
		sum1 -= adlerBase
	}
	if sum2 >= adlerBase<<1 {
		sum2 -= adlerBase << 1
	}
	if sum2 >= adlerBase {
		sum2 -= adlerBase
	}
	return sum1 | sum2<<16
}

// pngWriter writes chunks, keeping the first error.
type pngWriter struct {
	w   io.Writer
	err error
}

func (p *pngWriter) raw(b []byte) {
	if p.err == nil {
		_, p.err = p.w.Write(b)
	}
}

func (p *pngWriter) chunk(kind string, data []byte) {
	if p.err != nil {
		return
	}
	if len(data) > 1<<31-1 {
		p.err = errors.New("pngstream: chunk too large")
		return
	}
	var head [8]byte
	binary.BigEndian.PutUint32(head[:4], uint32(len(data)))
	copy(head[4:], kind)
	crc := crc32.NewIEEE()
	crc.Write(head[4:])
	crc.Write(data)
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], crc.Sum32())
	p.raw(head[:])
	p.raw(data)
	p.raw(tail[:])
}
