// Package step is what every beamgpu step is built from.
//
// A step is one unit of batch work (a tile of pixels, a matrix of rows) with
// interchangeable implementations, declared once with Register:
//
//   - CPU: a pure Go function func(In) (Out, error), the reference;
//   - GPU: the name of an op the GPU executor serves (a slot: the op may not
//     be served by every build);
//   - Stub: a stand-in with the same output type and shape and no
//     computation, registered from the stubs/ tree with RegisterStub, in the
//     way image formats register with package image.
//
// A step's PTransform resolves its implementation at construction with
// Scope (Resolve through a backend.Selector, so the explain report lists it;
// on the GPU the step's scope carries its resource hints for right fitting,
// runtime/rightfit) and runs it in its DoFn with Run, which times the kernel, feeds the step's Beam
// metrics and turns an error into a Failure on the dead-letter output. The
// input that failed is named in the Failure, and nothing is dropped silently.
package step
