package raster

import (
	"github.com/beamgpu/beamgpu/transforms/step"
)

// StepScan is the step that reads a scene's metadata and band headers and
// plans its windows (no pixel is decoded); StepRead the one that decodes one
// window, from the strips or tiles of the band files that cover it, into
// tiles. Both read files through package files: local, and in a Beam
// pipeline any of Beam's filesystems (gs://).
var (
	StepScan = step.Register(step.Def[SceneRef, SceneScan]{
		Name: "scan",
		Doc:  "read a scene's _MTL.txt and its bands' GeoTIFF headers, check them and plan the windows to decode",
		CPU:  ScanScene,
		Sample: func() SceneRef {
			return SceneRef{Dir: SampleSceneDir(), TileSize: 16, Bands: DefaultBands}
		},
	})
	StepRead = step.Register(step.Def[Window, []DNTile]{
		Name:   "read",
		Doc:    "decode one window of a scene's bands, from the strips or tiles that cover it, into tiles",
		CPU:    ReadWindow,
		Sample: sampleWindow,
	})
)

// sampleWindow is the first window of the committed crop in 16x16 tiles.
func sampleWindow() Window {
	sc, err := ScanScene(SceneRef{Dir: SampleSceneDir(), TileSize: 16, Bands: DefaultBands})
	if err != nil || len(sc.Windows) == 0 {
		return Window{}
	}
	return sc.Windows[0]
}
