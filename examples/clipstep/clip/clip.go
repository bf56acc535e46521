// Package clip is a beamgpu step of another module: it clips a tile's values.
//
// It is written as a user of the library writes one: every value of a float
// tile is clipped to [Lo, Hi]. Its CPU
// function, codec, kernel (kernels.cu and its PTX) and CUDA launch
// (launch_cuda.go, behind the cuda tag) are all here; its stub registers
// from package clipstub, its Beam side from package clipbeam.
package clip

import (
	_ "embed"
	"fmt"
	"math"

	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step"
	"github.com/beamgpu/beamgpu/transforms/wire"
)

// Input is the clip step's batch: a tile and the bounds.
type Input struct {
	Tile   raster.Tile
	Lo, Hi float32
}

// ID names the batch in failures.
func (in Input) ID() string { return in.Tile.ID() }

// Items and Bytes implement step.Sized: the step's metrics, and the run's
// summary (pixels, MB in, pixels/s), count the tile's pixels and bytes.
// Without them each batch would count as one item of 0 bytes.
func (in Input) Items() int { return in.Tile.Items() }

// Bytes implements step.Sized.
func (in Input) Bytes() int { return in.Tile.Bytes() }

// Clip is the CPU implementation: every value v of every plane becomes
// min(max(v, Lo), Hi); NaN stays NaN.
func Clip(in Input) (raster.Tile, error) {
	if !(in.Lo <= in.Hi) {
		return raster.Tile{}, fmt.Errorf("%s: clip bounds [%g, %g]: want lo <= hi", in.ID(), in.Lo, in.Hi)
	}
	out := in.Tile
	out.Data = make([][]float32, len(in.Tile.Data))
	for i, p := range in.Tile.Data {
		if len(p) != in.Tile.Area() {
			return raster.Tile{}, fmt.Errorf("%s: plane %d has %d pixels, want %d", in.ID(), i, len(p), in.Tile.Area())
		}
		q := make([]float32, len(p))
		for j, v := range p {
			if v == v {
				v = min(max(v, in.Lo), in.Hi)
			}
			q[j] = v
		}
		out.Data[i] = q
	}
	return out, nil
}

// InputCodec moves the batch: the tile's codec, the bounds added to its header.
var InputCodec = step.Codec[Input]{
	Encode: func(in Input) (step.Parts, error) {
		p, err := raster.TileCodec.Encode(in.Tile)
		h := wire.AppendFloat64(wire.AppendFloat64(nil, float64(in.Lo)), float64(in.Hi))
		p.Header = append(h, p.Header...)
		return p, err
	},
	Decode: func(p step.Parts) (Input, error) {
		if len(p.Header) < 16 {
			return Input{}, fmt.Errorf("clip input: header of %d bytes", len(p.Header))
		}
		d := wire.NewDecoder(p.Header[:16], "clip input")
		lo, hi := float32(d.Float64()), float32(d.Float64())
		t, err := raster.TileCodec.Decode(step.Parts{Header: p.Header[16:], Arrays: p.Arrays})
		return Input{Tile: t, Lo: lo, Hi: hi}, err
	},
}

//go:embed kernels.ptx
var ptx []byte

// Module is the clip kernel's PTX module.
var Module = gpu.NewModule("example.com/clipstep/clip", ptx)

// Step is the clip step.
var Step = step.Register(step.Def[Input, raster.Tile]{
	Name: "clip",
	Doc:  "clip every value of a tile to [lo, hi]",
	CPU:  Clip,
	GPU: &step.GPU[Input, raster.Tile]{Op: "clipstep.clip", In: InputCodec, Out: raster.TileCodec,
		Hints: backend.Hints{Accelerator: "type:nvidia-l4;count:1;install-nvidia-driver:5xx"}},
	Sample: func() Input { return Sample(4, 3) },
	Random: func(seed uint64) Input { return Sample(1+int(seed%9), 1+int(seed%5)) },
})

// Sample is a w x h tile of two planes of values in [-2, 2], one NaN.
func Sample(w, h int) Input {
	t := raster.Tile{Scene: "sample", SceneW: w, SceneH: h, Rect: raster.Rect{W: w, H: h}, Names: []string{"a", "b"}}
	for p := range 2 {
		plane := make([]float32, w*h)
		for i := range plane {
			plane[i] = float32(math.Sin(float64(i*7+p))) * 2
		}
		t.Data = append(t.Data, plane)
	}
	t.Data[0][0] = float32(math.NaN())
	return Input{Tile: t, Lo: -0.5, Hi: 1}
}
