package raster

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// TIFF tags that golang.org/x/image/tiff does not interpret for us.
const (
	tagSampleFormat = 339   // 1 unsigned, 2 signed integer, 3 float
	tagGDALNoData   = 42113 // ASCII no-data value written by GDAL
)

// sampleInfo is what DecodeBand needs beyond x/image/tiff: the sample format
// (and where its value sits in the file) and GDAL's no-data value.
type sampleInfo struct {
	format    uint16
	formatAt  int // byte offset of the inline SampleFormat value, or -1
	order     binary.ByteOrder
	noData    int64
	hasNoData bool
}

// readSampleInfo walks the first IFD of a classic TIFF.
func readSampleInfo(data []byte) (sampleInfo, error) {
	si := sampleInfo{format: 1, formatAt: -1}
	if len(data) < 8 {
		return si, fmt.Errorf("too short for a TIFF header (%d bytes)", len(data))
	}
	switch string(data[:4]) {
	case "II*\x00":
		si.order = binary.LittleEndian
	case "MM\x00*":
		si.order = binary.BigEndian
	default:
		return si, fmt.Errorf("not a classic TIFF (BigTIFF and other formats are not supported)")
	}
	off := int(si.order.Uint32(data[4:8]))
	if off < 8 || off+2 > len(data) {
		return si, fmt.Errorf("first IFD offset %d out of range", off)
	}
	n := int(si.order.Uint16(data[off:]))
	if off+2+12*n > len(data) {
		return si, fmt.Errorf("IFD of %d entries runs past the end of the file", n)
	}
	for i := 0; i < n; i++ {
		e := data[off+2+12*i : off+14+12*i]
		tag, typ, count := si.order.Uint16(e), si.order.Uint16(e[2:]), si.order.Uint32(e[4:])
		switch tag {
		case tagSampleFormat:
			if typ != 3 || count != 1 {
				return si, fmt.Errorf("SampleFormat with %d values: want one band", count)
			}
			si.format = si.order.Uint16(e[8:])
			si.formatAt = off + 2 + 12*i + 8
		case tagGDALNoData:
			if typ != 2 {
				continue
			}
			var s []byte
			if count <= 4 {
				s = e[8 : 8+count]
			} else if at := int(si.order.Uint32(e[8:])); at >= 0 && at+int(count) <= len(data) {
				s = data[at : at+int(count)]
			}
			si.noData, si.hasNoData = parseNoData(string(s))
		}
	}
	return si, nil
}

// parseNoData reads GDAL's ASCII no-data value: an integer (the only kind
// that can match a 16-bit sample), or none.
func parseNoData(s string) (int64, bool) {
	v, err := strconv.ParseFloat(strings.TrimRight(strings.TrimSpace(s), "\x00"), 64)
	if err != nil || v != math.Trunc(v) || math.Abs(v) >= 1<<53 {
		return 0, false
	}
	return int64(v), true
}
