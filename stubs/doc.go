// Package stubs documents the stand-ins of beamgpu's steps.
//
// Its subpackages (one per family of steps, e.g. stubs/raster) register
// them.
//
// A stub follows the two-stage workflow of (Google's "GPU best practices
// for Dataflow"): first build and test everything around the GPU step on a
// laptop with the step replaced by a stand-in that has its schema, then
// bring in the GPU. A stub here:
//
//   - has the step's exact input and output types (step.RegisterStub checks
//     them against the CPU implementation);
//   - returns an output of the same shape as the real step's: the same
//     number of planes, rows and columns, names and identities (a schema
//     change), or its input unchanged where the step keeps the type (a
//     pass-through);
//   - is deterministic and computes nothing: values are zero.
//
// Selecting them is a backend choice: --backend=stub for every step, or
// --backend_override=ndvi=stub for one. A pipeline imports the family's
// stubs package for its stubs to be registered, as pipelines/landsat does:
//
//	_ "github.com/beamgpu/beamgpu/stubs/raster"
//
// The contract (type and shape equal to the CPU output on each step's sample
// input) is tested for every registered step in this package's tests.
package stubs
