//go:build cuda

package clip_test

import (
	"testing"

	"example.com/clipstep/clip"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
)

// The launch names a kernel of the PTX with the arguments it takes (no GPU
// needed).
func TestLaunchMatchesThePTX(t *testing.T) {
	if r := steptest.CheckLaunch(t, clip.Step); len(r.Launches) != 2 {
		t.Fatalf("%d launches, want one per plane", len(r.Launches))
	}
}
