package raster

import (
	"bufio"
	"errors"
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
	lines := map[string]int{} // the line of each key
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
		val = strings.Trim(val, `"`)
		if prev, ok := m.Fields[key]; ok && prev != val {
			return MTL{}, fmt.Errorf("%s:%d: %s given twice, with different values (%q on line %d, %q here): which one holds is unknown", name, line, key, prev, lines[key], val)
		}
		m.Fields[key], lines[key] = val, line
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
	if err := PlainName(m.ProductID); err != nil {
		return MTL{}, fmt.Errorf("%s: product ID %q: %w", name, m.ProductID, err)
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

// Bounds of the reflectance coefficients accepted from an MTL. USGS
// publishes REFLECTANCE_MULT_BAND_n = 2.0E-05 and REFLECTANCE_ADD_BAND_n =
// -0.1 for every reflective band of Landsat 8 and 9; the bounds are a factor
// of 100 around them. A value outside fails the scene when it is read.
const (
	MinReflectanceMult = 2.0e-7
	MaxReflectanceMult = 2.0e-3
	MaxReflectanceAdd  = 10.0 // |REFLECTANCE_ADD_BAND_n|
)

// Calibration returns the reflectance coefficients of band n, checked
// against MinReflectanceMult, MaxReflectanceMult and MaxReflectanceAdd.
func (m MTL) Calibration(band int) (Calibration, error) {
	multKey, addKey := fmt.Sprintf("REFLECTANCE_MULT_BAND_%d", band), fmt.Sprintf("REFLECTANCE_ADD_BAND_%d", band)
	mult, err := m.Float(multKey)
	if err != nil {
		return Calibration{}, err
	}
	add, err := m.Float(addKey)
	if err != nil {
		return Calibration{}, err
	}
	if !(mult >= MinReflectanceMult && mult <= MaxReflectanceMult) {
		return Calibration{}, fmt.Errorf("%s: %s = %g: outside [%g, %g] (USGS publishes 2.0E-05)", m.Name, multKey, mult, MinReflectanceMult, MaxReflectanceMult)
	}
	if !(math.Abs(add) <= MaxReflectanceAdd) {
		return Calibration{}, fmt.Errorf("%s: %s = %g: outside [-%g, %g] (USGS publishes -0.1)", m.Name, addKey, add, MaxReflectanceAdd, MaxReflectanceAdd)
	}
	return Calibration{Band: band, Mult: mult, Add: add}, nil
}

// BandFile returns the file name of band n: FILE_NAME_BAND_n, or
// <product>_B<n>.TIF when the MTL does not list it. The name must be plain
// (PlainName): it is resolved inside the scene directory.
func (m MTL) BandFile(band int) (string, error) {
	key := fmt.Sprintf("FILE_NAME_BAND_%d", band)
	f := m.Fields[key]
	if f == "" {
		return fmt.Sprintf("%s_B%d.TIF", m.ProductID, band), nil
	}
	if err := PlainName(f); err != nil {
		return "", fmt.Errorf("%s: %s = %q: %w", m.Name, key, f, err)
	}
	return f, nil
}

// PlainName checks that a name taken from metadata (a product ID, a band
// file name) names a file inside a directory and nothing else: letters,
// digits, '_', '-' and '.', not starting with '.', no "..", at most 255
// bytes. Path separators, parent references and hidden names are refused.
func PlainName(s string) error {
	switch {
	case s == "":
		return errors.New("empty name")
	case len(s) > 255:
		return fmt.Errorf("not a plain file name: %d bytes, more than 255", len(s))
	case strings.ContainsAny(s, `/\`):
		return errors.New("not a plain file name: it holds a path separator")
	case strings.Contains(s, ".."):
		return errors.New(`not a plain file name: it holds ".."`)
	case s[0] == '.':
		return errors.New("not a plain file name: it starts with '.'")
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("not a plain file name: character %q (want letters, digits, '_', '-', '.')", r)
		}
	}
	return nil
}
