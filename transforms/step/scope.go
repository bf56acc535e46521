package step

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/resource"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/beamgpu/beamgpu/runtime/rightfit"
)

// Scope resolves the registered step name (as Resolve does) and returns the
// scope its transforms go in with the Exec its DoFn carries. The scope is
// s.Scope(name), except where the step runs on the GPU: then it carries the
// step's resource hints (accelerator, min_ram; rightfit.Scope), so that the
// launcher can place the step's transforms on GPU workers (right fitting).
func Scope(s beam.Scope, name string, opts ...Option) (beam.Scope, Exec) {
	ex := Resolve(name, opts...)
	d, _ := Lookup(name) // Resolve panics on an unknown step
	if ex.Impl != backend.GPU {
		return s.Scope(name), ex
	}
	return rightfit.Scope(s, name, Hints(d.Step.Hints)...), ex
}

// Hints converts a step's hints to Beam's resource hints.
func Hints(h backend.Hints) []resource.Hint {
	var out []resource.Hint
	if h.Accelerator != "" {
		out = append(out, resource.Accelerator(h.Accelerator))
	}
	if h.MinRAMBytes > 0 {
		out = append(out, resource.MinRAMBytes(uint64(h.MinRAMBytes)))
	}
	return out
}
