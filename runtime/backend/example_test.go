package backend_test

import (
	"fmt"
	"os"

	"github.com/beamgpu/beamgpu/runtime/backend"
)

// A pipeline-wide default with one step overridden, on a machine without a
// GPU executor: the explain report says what runs where and why.
func Example() {
	steps := []backend.Step{{Name: "toa", GPUOp: "raster.toa"}, {Name: "ndvi", GPUOp: "raster.ndvi"}}
	sel, err := backend.New(backend.Config{
		Default:   backend.Auto,
		Overrides: map[string]backend.Kind{"ndvi": backend.Stub},
		Steps:     steps,
		Executor:  backend.NoExecutor{Why: "no GPU executor found"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range steps {
		if _, err := sel.Resolve(st); err != nil {
			fmt.Println(err)
		}
	}
	_ = sel.Report().WriteText(os.Stdout)
	// Output:
	// explain (--backend=auto)
	//   STEP  IMPL  GPU OP       HINTS  REASON
	//   toa   cpu   raster.toa   -      auto: no GPU executor found
	//   ndvi  stub  raster.ndvi  -      requested by --backend_override=ndvi=stub
}
