package raster

import (
	"context"
	"fmt"
	"path"

	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/step/files"
)

// StepRead is the read step: a scene directory (its _MTL.txt and band
// GeoTIFFs, local or on any filesystem package files reaches) to its tiles.
var StepRead = step.Register(step.Def[SceneRef, []DNTile]{
	Name: "read",
	Doc:  "read a scene's _MTL.txt and band GeoTIFFs and split it into tiles",
	CPU:  ReadScene,
	Sample: func() SceneRef {
		return SceneRef{Dir: SampleSceneDir(), TileSize: 16, Bands: DefaultBands}
	},
})

// ReadScene is the CPU implementation of the read step: it parses the
// scene's _MTL.txt, decodes the requested bands, checks that they have one
// size, and splits them into tiles of ref.TileSize.
func ReadScene(ref SceneRef) ([]DNTile, error) {
	return readScene(ref, true)
}

// ReadSceneHeaders reads the MTL and only the headers of the bands: it is the
// read step's stand-in, with zero pixels of the real shape.
func ReadSceneHeaders(ref SceneRef) ([]DNTile, error) {
	return readScene(ref, false)
}

func readScene(ref SceneRef, pixels bool) ([]DNTile, error) {
	ctx := context.Background()
	if len(ref.Bands) == 0 {
		return nil, fmt.Errorf("%s: no bands requested", ref.Dir)
	}
	m, err := readMTL(ctx, ref.Dir)
	if err != nil {
		return nil, err
	}
	cal := make([]Calibration, len(ref.Bands))
	planes := make([][]uint16, len(ref.Bands))
	w, h := 0, 0
	firstName := ""
	for i, b := range ref.Bands {
		if cal[i], err = m.Calibration(b); err != nil {
			return nil, err
		}
		name := path.Join(ref.Dir, m.BandFile(b))
		bw, bh, dn, err := readBand(ctx, name, pixels)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			w, h, firstName = bw, bh, name
		} else if bw != w || bh != h {
			return nil, fmt.Errorf("%s: band %d is %dx%d but %s is %dx%d: bands of a scene must have one size", name, b, bw, bh, firstName, w, h)
		}
		planes[i] = dn
	}
	rects, err := Split(w, h, ref.TileSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref.Dir, err)
	}
	tiles := make([]DNTile, len(rects))
	for i, r := range rects {
		t := DNTile{Scene: m.ProductID, SceneW: w, SceneH: h, Rect: r, SunElevation: m.SunElevation,
			Cal: cal, DN: make([][]uint16, len(planes))}
		for j, p := range planes {
			if pixels {
				t.DN[j] = crop(p, w, r)
			} else {
				t.DN[j] = make([]uint16, r.Area())
			}
		}
		tiles[i] = t
	}
	return tiles, nil
}

func readMTL(ctx context.Context, dir string) (MTL, error) {
	mtls, err := files.List(ctx, path.Join(dir, "*_MTL.txt"))
	if err != nil {
		return MTL{}, fmt.Errorf("%s: listing: %w", dir, err)
	}
	switch len(mtls) {
	case 0:
		return MTL{}, fmt.Errorf("%s: no *_MTL.txt metadata file: not a Landsat scene directory", dir)
	case 1:
	default:
		return MTL{}, fmt.Errorf("%s: %d *_MTL.txt files, want one per scene directory", dir, len(mtls))
	}
	r, err := files.OpenRead(ctx, mtls[0])
	if err != nil {
		return MTL{}, fmt.Errorf("%s: %w", mtls[0], err)
	}
	defer r.Close()
	return ParseMTL(r, mtls[0])
}

func readBand(ctx context.Context, name string, pixels bool) (int, int, []uint16, error) {
	r, err := files.OpenRead(ctx, name)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("%s: cannot open band: %w", name, err)
	}
	defer r.Close()
	if !pixels {
		w, h, err := DecodeBandConfig(r, name)
		return w, h, nil, err
	}
	return DecodeBand(r, name)
}

// IsSceneDir reports whether dir holds a *_MTL.txt file.
func IsSceneDir(ctx context.Context, dir string) (bool, error) {
	mtls, err := files.List(ctx, path.Join(dir, "*_MTL.txt"))
	return len(mtls) > 0, err
}
