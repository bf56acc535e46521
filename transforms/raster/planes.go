package raster

import (
	"sync"
	"unsafe"

	"github.com/beamgpu/beamgpu/transforms/internal/uninit"
)

// The toa_ndvi step's output planes. Its kernels write every pixel, so a
// plane is allocated without zeroing (make would clear it first: a second
// pass over the memory, which doubles the bytes the step writes). And where
// the pipeline says that the step's consumers keep no tile
// (step.RecycleOutputs: the landsat pipeline's writes and combiners), the
// step's DoFn hands each tile back once emitted (recycleTile): the next
// tile of the same size is written into its planes while they are still in
// the cache, and makes no garbage. At 512x512 that made the step 3 times as
// fast (BenchmarkTOANDVI).

// newPlane returns a plane of n pixels, not zeroed: a recycled one where
// there is one of that size, else a new one (a variable, so that a test can
// hand out planes filled with garbage).
var newPlane = takePlane

// planePools holds the recycled planes, a sync.Pool per plane length (a
// scene's tiles have a few sizes: the full tile and the edges'). The pools
// give way to the garbage collector as any sync.Pool does: a plane left
// unused for two collections is freed.
var planePools sync.Map // int -> *sync.Pool of *[]float32

func takePlane(n int) []float32 {
	if pool, ok := planePools.Load(n); ok {
		if p, ok := pool.(*sync.Pool).Get().(*[]float32); ok {
			return *p
		}
	}
	return uninit.Slice[float32](n)
}

// recycleTile is the toa_ndvi step's Def.Recycle: it takes back t's planes,
// which nothing reads any more, for the step's next outputs. A plane that
// appears twice in t is taken back once.
func recycleTile(t Tile) {
	for i, p := range t.Data {
		if len(p) == 0 || sharesPlane(t.Data[:i], p) {
			continue
		}
		pool, _ := planePools.LoadOrStore(len(p), new(sync.Pool))
		p = p[:len(p):len(p)]
		pool.(*sync.Pool).Put(&p)
	}
}

func sharesPlane(planes [][]float32, p []float32) bool {
	for _, q := range planes {
		if len(q) > 0 && unsafe.SliceData(q) == unsafe.SliceData(p) {
			return true
		}
	}
	return false
}
