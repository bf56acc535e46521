package onnx

import (
	"github.com/beamgpu/beamgpu/runtime/executor/gpu"
	"github.com/beamgpu/beamgpu/transforms/tensor/nd"
)

// On the GPU executor a model runs the same plan as on the CPU, each step a
// launch on the device. A Kernel that can runs there implements Launcher;
// a model whose every kernel does runs wholly on the device.

// DevArray is a value on the device: its type, its shape and its address.
type DevArray struct {
	Type  nd.DType
	Shape []int
	Ptr   gpu.Ptr
}

// Device is what a kernel's Launch runs with: the batch's call on the
// device (gpu.Call: uploads, launches of the family's kernels, cuBLAS).
type Device struct {
	Call gpu.Call
}

// Launcher is a Kernel with a GPU implementation.
type Launcher interface {
	// Launch enqueues the node's work on the device: out holds device
	// buffers of the types and shapes Infer gave (views where the Kernel is
	// a Viewer), in the inputs'.
	Launch(d *Device, in, out []DevArray) error
}

// OpsWithoutGPU returns the operators of the model's nodes that have no
// GPU implementation (sorted, each once): a model with none runs wholly on
// the GPU executor's device.
func (m *Model) OpsWithoutGPU() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range m.g.nodes {
		if _, ok := n.kernel.(Launcher); !ok && !seen[n.Op] {
			seen[n.Op] = true
			out = append(out, n.Op)
		}
	}
	sortStrings(out)
	return out
}
