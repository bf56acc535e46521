package onnx

import "github.com/beamgpu/beamgpu/transforms/nd"

// The element types of the operators' generic loops, by family: each loop
// is a generic function of its element type T, constrained by one of these
// and instantiated once per type.
type (
	floatElem    interface{ float32 | float64 }
	signedElem   interface{ int8 | int16 | int32 | int64 }
	unsignedElem interface {
		uint8 | uint16 | uint32 | uint64
	}
	intElem interface{ signedElem | unsignedElem }
	numElem interface{ floatElem | intElem }
)

// isNumeric reports whether t is an integer or float type (not Bool).
func isNumeric(t nd.DType) bool { return t.IsInt() || t.IsFloat() }
