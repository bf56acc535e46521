package raster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Limits of the band files the windowed reader accepts. They are checked
// against the file's header, before any pixel is decoded, and every error
// names the file.
const (
	// MaxBandSide is the largest width or height of a band (a Landsat 8
	// panchromatic band is about 15600 x 15800 pixels).
	MaxBandSide = 32768
	// MaxBlockBytes is the largest decoded size of one TIFF tile (16-bit
	// samples: a 4096 x 4096 tile). Strips are decoded row by row, so their
	// size is not bounded beyond the band's.
	MaxBlockBytes = 32 << 20
	// MaxBlocks is the most strips or tiles a band may have.
	MaxBlocks = 1 << 20
	// maxIFDEntries bounds the entries of the image file directory (GeoTIFFs
	// have about 20).
	maxIFDEntries = 4096
)

// TIFF compression schemes the reader decodes.
const (
	compressionNone       = 1
	compressionLZW        = 5
	compressionDeflate    = 8
	compressionOldDeflate = 32946
)

// TIFF tags the windowed reader interprets.
const (
	tagImageWidth      = 256
	tagImageLength     = 257
	tagBitsPerSample   = 258
	tagCompression     = 259
	tagPhotometric     = 262
	tagStripOffsets    = 273
	tagSamplesPerPixel = 277
	tagRowsPerStrip    = 278
	tagStripByteCounts = 279
	tagPlanarConfig    = 284
	tagPredictor       = 317
	tagTileWidth       = 322
	tagTileLength      = 323
	tagTileOffsets     = 324
	tagTileByteCounts  = 325
)

// BandHeader is what the windowed reader knows of a band's GeoTIFF from its
// header: enough to decode any window from the strips or tiles that cover
// it. It is carried by Window elements, without the block tables.
type BandHeader struct {
	// Name is the file, as opened and as named in errors.
	Name string
	// Size is the file's length in bytes.
	Size          int64
	Width, Height int
	BigEndian     bool
	// Signed is set for SampleFormat 2 (int16): negative samples are no-data.
	Signed bool
	// NoData is GDAL's no-data value (GDAL_NODATA), when HasNoData.
	NoData    int64
	HasNoData bool
	// Compression is 1 (none), 5 (LZW) or 8 / 32946 (Deflate); Predictor
	// is 1 (none) or 2 (horizontal differencing).
	Compression, Predictor int
	// Tiled says whether blocks are tiles (BlockW x BlockH) or strips
	// (Width x BlockH rows, the last one shorter).
	Tiled          bool
	BlockW, BlockH int
}

// Layout is a band's header with its block tables: the offset and byte
// count in the file of each strip or tile, in TIFF order (tiles row by row).
type Layout struct {
	BandHeader
	Offsets, Counts []int64
}

// Block is one strip or tile of a band: its index in TIFF order and where
// its compressed bytes are.
type Block struct {
	Index         int
	Offset, Count int64
}

// blocksAcross is the number of blocks in a row of blocks.
func (f BandHeader) blocksAcross() int {
	if !f.Tiled {
		return 1
	}
	return (f.Width + f.BlockW - 1) / f.BlockW
}

// blocksDown is the number of rows of blocks.
func (f BandHeader) blocksDown() int { return (f.Height + f.BlockH - 1) / f.BlockH }

// blockRect is the part of the band that block i covers (clipped to the band).
func (f BandHeader) blockRect(i int) Rect {
	across := f.blocksAcross()
	bx, by := i%across, i/across
	r := Rect{X: bx * f.BlockW, Y: by * f.BlockH, W: f.BlockW, H: f.BlockH}
	if !f.Tiled {
		r.X, r.W = 0, f.Width
	}
	r.W = min(r.W, f.Width-r.X)
	r.H = min(r.H, f.Height-r.Y)
	return r
}

// decodedBytes is the decoded size of block i as stored: tiles are stored
// whole (padded at the band's edges), strips hold their rows only.
func (f BandHeader) decodedBytes(i int) int64 {
	if f.Tiled {
		return 2 * int64(f.BlockW) * int64(f.BlockH)
	}
	return 2 * int64(f.Width) * int64(f.blockRect(i).H)
}

// Covering returns the blocks of the layout that intersect window r.
func (l Layout) Covering(r Rect) []Block {
	var out []Block
	across := l.blocksAcross()
	by0, by1 := r.Y/l.BlockH, (r.Y+r.H-1)/l.BlockH
	bx0, bx1 := 0, 0
	if l.Tiled {
		bx0, bx1 = r.X/l.BlockW, (r.X+r.W-1)/l.BlockW
	}
	for by := by0; by <= by1; by++ {
		for bx := bx0; bx <= bx1; bx++ {
			i := by*across + bx
			out = append(out, Block{Index: i, Offset: l.Offsets[i], Count: l.Counts[i]})
		}
	}
	return out
}

// truncated marks header errors that say the file is cut short (the
// header points past its end).
type truncated struct{ error }

func truncatedf(format string, args ...any) error { return truncated{fmt.Errorf(format, args...)} }

// ifdEntry is one raw entry of an image file directory.
type ifdEntry struct {
	tag, typ uint16
	count    uint32
	value    [4]byte // the value, or the offset of the values
}

// ReadLayout reads and checks the header of a single-band 16-bit GeoTIFF:
// the first image file directory and its strip or tile tables, never the
// pixels. r reads the file, size is its length, name is used in errors.
// Everything the decoder relies on is checked here: the sizes against
// MaxBandSide, MaxBlockBytes and MaxBlocks, and each block's bytes against
// the file's length.
func ReadLayout(r io.ReaderAt, size int64, name string) (Layout, error) {
	l, err := readLayout(r, size)
	if errors.As(err, new(truncated)) {
		return Layout{}, fmt.Errorf("%s: corrupt or truncated TIFF: %w", name, err)
	}
	if err != nil {
		return Layout{}, fmt.Errorf("%s: not a readable band GeoTIFF: %w", name, err)
	}
	l.Name = name
	return l, nil
}

func readLayout(r io.ReaderAt, size int64) (Layout, error) {
	l := Layout{BandHeader: BandHeader{Size: size}}
	var hdr [8]byte
	if size < 8 {
		return l, fmt.Errorf("too short for a TIFF header (%d bytes)", size)
	}
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return l, fmt.Errorf("reading the header: %w", err)
	}
	var order binary.ByteOrder
	switch string(hdr[:4]) {
	case "II*\x00":
		order = binary.LittleEndian
	case "MM\x00*":
		order, l.BigEndian = binary.BigEndian, true
	case "II+\x00", "MM\x00+":
		return l, errors.New("BigTIFF is not supported (a band of up to 4 GB is a classic TIFF)")
	default:
		return l, errors.New("not a TIFF file")
	}
	off := int64(order.Uint32(hdr[4:]))
	if off < 8 || off+2 > size {
		return l, truncatedf("first IFD offset %d out of range (file of %d bytes)", off, size)
	}
	var nb [2]byte
	if _, err := r.ReadAt(nb[:], off); err != nil {
		return l, fmt.Errorf("reading the IFD: %w", err)
	}
	n := int64(order.Uint16(nb[:]))
	if n == 0 || n > maxIFDEntries {
		return l, fmt.Errorf("IFD of %d entries: want 1 to %d", n, maxIFDEntries)
	}
	if off+2+12*n > size {
		return l, truncatedf("IFD of %d entries at offset %d does not fit the file of %d bytes", n, off, size)
	}
	raw := make([]byte, 12*n)
	if _, err := r.ReadAt(raw, off+2); err != nil {
		return l, fmt.Errorf("reading the IFD: %w", err)
	}
	entries := map[uint16]ifdEntry{}
	for i := int64(0); i < n; i++ {
		e := raw[12*i : 12*i+12]
		var ent ifdEntry
		ent.tag, ent.typ, ent.count = order.Uint16(e), order.Uint16(e[2:]), order.Uint32(e[4:])
		copy(ent.value[:], e[8:12])
		if _, dup := entries[ent.tag]; dup {
			return l, fmt.Errorf("tag %d appears twice in the IFD", ent.tag)
		}
		entries[ent.tag] = ent
	}
	d := ifd{r: r, size: size, order: order, entries: entries}

	var err error
	scalar := func(tag uint16, def int64) int64 {
		if err != nil {
			return 0
		}
		var v int64
		v, err = d.scalar(tag, def)
		return v
	}
	w, h := scalar(tagImageWidth, -1), scalar(tagImageLength, -1)
	bits, spp := scalar(tagBitsPerSample, 1), scalar(tagSamplesPerPixel, 1)
	format := scalar(tagSampleFormat, 1)
	comp, pred := scalar(tagCompression, compressionNone), scalar(tagPredictor, 1)
	planar := scalar(tagPlanarConfig, 1)
	photometric := scalar(tagPhotometric, -1)
	if err != nil {
		return l, err
	}
	switch {
	case w <= 0 || h <= 0:
		return l, fmt.Errorf("missing or zero ImageWidth/ImageLength (%dx%d)", w, h)
	case w > MaxBandSide || h > MaxBandSide:
		return l, fmt.Errorf("band of %dx%d pixels: more than %d a side", w, h, MaxBandSide)
	case spp != 1:
		return l, fmt.Errorf("%d samples per pixel: want a single-band file", spp)
	case bits != 16:
		return l, fmt.Errorf("%d bits per sample: want 16-bit integers", bits)
	case format != 1 && format != 2:
		return l, fmt.Errorf("TIFF sample format %d (floating point or unknown): want 16-bit integers", format)
	case photometric != 1:
		return l, fmt.Errorf("photometric interpretation %d: want MinIsBlack (1), as GeoTIFF bands have", photometric)
	case planar != 1 && planar != 2:
		return l, fmt.Errorf("planar configuration %d", planar)
	case comp != compressionNone && comp != compressionLZW && comp != compressionDeflate && comp != compressionOldDeflate:
		return l, fmt.Errorf("compression %d: want none (1), LZW (5) or Deflate (8)", comp)
	case pred != 1 && pred != 2:
		return l, fmt.Errorf("predictor %d: want none (1) or horizontal (2)", pred)
	}
	l.Width, l.Height, l.Signed = int(w), int(h), format == 2
	l.Compression, l.Predictor = int(comp), int(pred)

	offTag, countTag := uint16(tagStripOffsets), uint16(tagStripByteCounts)
	if _, tiled := entries[tagTileWidth]; tiled {
		l.Tiled = true
		tw, th := scalar(tagTileWidth, -1), scalar(tagTileLength, -1)
		if err != nil {
			return l, err
		}
		if tw <= 0 || th <= 0 || tw%16 != 0 || th%16 != 0 || tw > MaxBandSide || th > MaxBandSide {
			return l, fmt.Errorf("tile size %dx%d: want positive multiples of 16", tw, th)
		}
		if 2*tw*th > MaxBlockBytes {
			return l, fmt.Errorf("tiles of %dx%d pixels: more than %d bytes each", tw, th, MaxBlockBytes)
		}
		l.BlockW, l.BlockH = int(tw), int(th)
		offTag, countTag = tagTileOffsets, tagTileByteCounts
	} else {
		rps := scalar(tagRowsPerStrip, h)
		if err != nil {
			return l, err
		}
		if rps <= 0 {
			return l, fmt.Errorf("RowsPerStrip %d", rps)
		}
		l.BlockW, l.BlockH = l.Width, int(min(rps, h))
	}
	blocks := l.blocksAcross() * l.blocksDown()
	if blocks > MaxBlocks {
		return l, fmt.Errorf("%d strips or tiles: more than %d", blocks, MaxBlocks)
	}
	if l.Offsets, err = d.array(offTag, blocks); err != nil {
		return l, err
	}
	if l.Counts, err = d.array(countTag, blocks); err != nil {
		return l, err
	}
	for i := range l.Offsets {
		o, c, want := l.Offsets[i], l.Counts[i], l.decodedBytes(i)
		switch {
		case o < 0 || c < 0 || o > size || c > size-o:
			return l, truncatedf("block %d (offset %d, %d bytes) lies outside the file of %d bytes", i, o, c, size)
		case l.Compression == compressionNone && c < want:
			return l, fmt.Errorf("uncompressed block %d holds %d bytes, its %dx%d pixels need %d", i, c, l.BlockW, l.blockRect(i).H, want)
		case l.Compression != compressionNone && c > 2*want+4096:
			return l, fmt.Errorf("compressed block %d of %d bytes is larger than twice its %d decoded bytes", i, c, want)
		}
	}
	if nd, ok := entries[tagGDALNoData]; ok && nd.typ == 2 {
		if s, err := d.ascii(nd); err == nil {
			l.NoData, l.HasNoData = parseNoData(s)
		}
	}
	return l, nil
}

// ifd reads the values of entries of one image file directory.
type ifd struct {
	r       io.ReaderAt
	size    int64
	order   binary.ByteOrder
	entries map[uint16]ifdEntry
}

// typeSize is the byte size of the TIFF field types the reader accepts.
func typeSize(typ uint16) int64 {
	switch typ {
	case 1, 2, 7: // BYTE, ASCII, UNDEFINED
		return 1
	case 3: // SHORT
		return 2
	case 4: // LONG
		return 4
	}
	return 0
}

// values returns the bytes of an entry's values, checked against the file.
func (d ifd) values(tag uint16, e ifdEntry, most int64) ([]byte, error) {
	ts := typeSize(e.typ)
	if ts == 0 {
		return nil, fmt.Errorf("tag %d has field type %d", tag, e.typ)
	}
	n := int64(e.count) * ts
	if int64(e.count) > most {
		return nil, fmt.Errorf("tag %d has %d values, want at most %d", tag, e.count, most)
	}
	if n <= 4 {
		return e.value[:n], nil
	}
	at := int64(d.order.Uint32(e.value[:]))
	if at < 8 || at > d.size || n > d.size-at {
		return nil, truncatedf("values of tag %d (%d bytes at offset %d) lie outside the file of %d bytes", tag, n, at, d.size)
	}
	buf := make([]byte, n)
	if _, err := d.r.ReadAt(buf, at); err != nil {
		return nil, fmt.Errorf("reading tag %d: %w", tag, err)
	}
	return buf, nil
}

// scalar returns the single SHORT or LONG value of tag, or def if absent
// (def < 0: the tag is required).
func (d ifd) scalar(tag uint16, def int64) (int64, error) {
	e, ok := d.entries[tag]
	if !ok {
		if def < 0 {
			return 0, fmt.Errorf("missing tag %d", tag)
		}
		return def, nil
	}
	if e.count != 1 || (e.typ != 3 && e.typ != 4) {
		if tag == tagBitsPerSample || tag == tagSampleFormat {
			return 0, fmt.Errorf("tag %d has %d values: want a single-band file", tag, e.count)
		}
		return 0, fmt.Errorf("tag %d: want one SHORT or LONG value, got %d of type %d", tag, e.count, e.typ)
	}
	if e.typ == 3 {
		return int64(d.order.Uint16(e.value[:])), nil
	}
	return int64(d.order.Uint32(e.value[:])), nil
}

// array returns the n SHORT or LONG values of tag.
func (d ifd) array(tag uint16, n int) ([]int64, error) {
	e, ok := d.entries[tag]
	if !ok {
		return nil, fmt.Errorf("missing tag %d (strip or tile offsets and byte counts)", tag)
	}
	if int(e.count) != n || (e.typ != 3 && e.typ != 4) {
		return nil, fmt.Errorf("tag %d has %d values of type %d: the layout needs %d SHORT or LONG", tag, e.count, e.typ, n)
	}
	b, err := d.values(tag, e, MaxBlocks)
	if err != nil {
		return nil, err
	}
	out := make([]int64, n)
	for i := range out {
		if e.typ == 3 {
			out[i] = int64(d.order.Uint16(b[2*i:]))
		} else {
			out[i] = int64(d.order.Uint32(b[4*i:]))
		}
	}
	return out, nil
}

// ascii returns an ASCII entry's text.
func (d ifd) ascii(e ifdEntry) (string, error) {
	b, err := d.values(tagGDALNoData, e, 1<<16)
	return string(b), err
}
