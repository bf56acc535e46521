package clip_test

import (
	"math"
	"os"
	"strings"
	"testing"

	"example.com/clipstep/clip"
	_ "example.com/clipstep/clipstub"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/transforms/raster"
	"github.com/beamgpu/beamgpu/transforms/step/steptest"
)

func TestMain(m *testing.M) {
	steptest.MaybeServe() // this test binary is also the tests' GPU executor
	os.Exit(m.Run())
}

func TestClip(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		name    string
		in      []float32
		lo, hi  float32
		want    []float32
		wantErr string
	}{
		{name: "inside", in: []float32{0, 0.5}, lo: -1, hi: 1, want: []float32{0, 0.5}},
		{name: "clipped", in: []float32{-3, 3}, lo: -1, hi: 1, want: []float32{-1, 1}},
		{name: "NaN stays", in: []float32{nan, 2}, lo: 0, hi: 1, want: []float32{nan, 1}},
		{name: "bounds reversed", in: []float32{0, 0}, lo: 1, hi: 0, wantErr: "want lo <= hi"},
		{name: "NaN bound", in: []float32{0, 0}, lo: nan, hi: 0, wantErr: "want lo <= hi"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tile := raster.Tile{Scene: "s", SceneW: 2, SceneH: 1, Rect: raster.Rect{W: 2, H: 1}, Names: []string{"a"}, Data: [][]float32{c.in}}
			out, err := clip.Clip(clip.Input{Tile: tile, Lo: c.lo, Hi: c.hi})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range out.Data[0] {
				if w := c.want[i]; v != w && !(v != v && w != w) {
					t.Errorf("value %d = %v, want %v", i, v, w)
				}
			}
		})
	}
}

// The stand-in keeps the CPU output's type and shape.
func TestStubContract(t *testing.T) { steptest.CheckStubContract(t, clip.Step) }

// The step's GPU op, through a real executor process (this test binary,
// serving the op with the CPU function as the reference executor does), and
// its codecs give what the CPU function gives, on the sample and on random
// inputs.
func TestGPUOpMatchesCPU(t *testing.T) {
	sel := backend.MustNew(backend.Config{Default: backend.GPU, Executor: steptest.UseExecutor()})
	if _, err := sel.Resolve(clip.Step.Backend()); err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(8) {
		in, _ := clip.Step.RandomInput(seed)
		cpu, err := steptest.Apply(clip.Step, backend.CPU, in)
		if err != nil {
			t.Fatal(err)
		}
		gpu, err := steptest.Apply(clip.Step, backend.GPU, in)
		if err != nil {
			t.Fatal(err)
		}
		if err := steptest.Equal(in, cpu, gpu, clip.Step.Tolerance()); err != nil {
			t.Errorf("seed %d: %v", seed, err)
		}
	}
}
