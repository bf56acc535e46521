//go:build !cgo

package kernelemu

import (
	"errors"

	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
)

// Available reports whether the kernels can run here: not without cgo.
const Available = false

// Launch fails: this build has no cgo.
func Launch(gpu.Kernel, int, int, []uint64) error {
	return errors.New("kernelemu: built without cgo")
}

// Names returns nothing without cgo.
func Names() []string { return nil }
