package raster

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// MTL is what the steps need from a Landsat Collection 1 _MTL.txt file.
type MTL struct {
	// Name is the file the metadata came from, for error messages.
	Name string
	// ProductID is LANDSAT_PRODUCT_ID (or LANDSAT_SCENE_ID if absent).
	ProductID string
	// SunElevation is SUN_ELEVATION in degrees.
	SunElevation float64
	// Fields holds every KEY = VALUE of the file, quotes removed.
	Fields map[string]string
}

// maxMTLSize bounds how much of a metadata file is read; real ones are ~9 KB.
const maxMTLSize = 1 << 20

// ParseMTL parses a Landsat _MTL.txt (ODL "KEY = VALUE" lines in GROUPs).
// name is used in errors.
func ParseMTL(r io.Reader, name string) (MTL, error) {
	m := MTL{Name: name, Fields: map[string]string{}}
	sc := bufio.NewScanner(io.LimitReader(r, maxMTLSize))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text == "END" {
			continue
		}
		key, val, ok := strings.Cut(text, "=")
		if !ok {
			return MTL{}, fmt.Errorf("%s:%d: not a KEY = VALUE line: %.40q", name, line, text)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if key == "GROUP" || key == "END_GROUP" {
			continue
		}
		m.Fields[key] = strings.Trim(val, `"`)
	}
	if err := sc.Err(); err != nil {
		return MTL{}, fmt.Errorf("%s: %w", name, err)
	}
	if len(m.Fields) == 0 {
		return MTL{}, fmt.Errorf("%s: no metadata fields: not a Landsat _MTL.txt file", name)
	}
	m.ProductID = m.Fields["LANDSAT_PRODUCT_ID"]
	if m.ProductID == "" {
		m.ProductID = m.Fields["LANDSAT_SCENE_ID"]
	}
	if m.ProductID == "" {
		return MTL{}, fmt.Errorf("%s: missing LANDSAT_PRODUCT_ID and LANDSAT_SCENE_ID", name)
	}
	elev, err := m.Float("SUN_ELEVATION")
	if err != nil {
		return MTL{}, err
	}
	if elev <= 0 || elev > 90 {
		return MTL{}, fmt.Errorf("%s: SUN_ELEVATION = %g: want (0, 90] degrees (the sun must be above the horizon)", name, elev)
	}
	m.SunElevation = elev
	return m, nil
}

// Float returns the numeric field key, or an error naming the file and key.
func (m MTL) Float(key string) (float64, error) {
	s, ok := m.Fields[key]
	if !ok {
		return 0, fmt.Errorf("%s: missing %s", m.Name, key)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s: %s = %q is not a finite number", m.Name, key, s)
	}
	return v, nil
}

// Calibration returns the reflectance coefficients of band n.
func (m MTL) Calibration(band int) (Calibration, error) {
	mult, err := m.Float(fmt.Sprintf("REFLECTANCE_MULT_BAND_%d", band))
	if err != nil {
		return Calibration{}, err
	}
	add, err := m.Float(fmt.Sprintf("REFLECTANCE_ADD_BAND_%d", band))
	if err != nil {
		return Calibration{}, err
	}
	return Calibration{Band: band, Mult: mult, Add: add}, nil
}

// BandFile returns the file name of band n: FILE_NAME_BAND_n, or
// <product>_B<n>.TIF when the MTL does not list it.
func (m MTL) BandFile(band int) string {
	if f := m.Fields[fmt.Sprintf("FILE_NAME_BAND_%d", band)]; f != "" {
		return f
	}
	return fmt.Sprintf("%s_B%d.TIF", m.ProductID, band)
}
