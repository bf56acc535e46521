// Package stepbeam runs beamgpu steps in Beam pipelines: one generic DoFn,
// registered per instantiation as Beam's own transforms/batch does, applies
// any step to a PCollection, with the step's implementation chosen at
// construction (the backend selector, and its explain report), its Beam
// metrics, its dead-letter output, and under --backend=auto a batch whose GPU
// cannot be had run on the CPU.
//
// A family registers the DoFns of its steps from its Beam package's init,
// and its PTransforms apply them:
//
//	func init() { stepbeam.Register(raster.TOANDVI) }
//
//	func ReflectanceAndNDVI(s beam.Scope, tiles beam.PCollection, opts ...step.Option) (out, failed beam.PCollection) {
//		return stepbeam.Apply(s, raster.TOANDVI, tiles, opts...)
//	}
//
// A step with parameters that do not travel with each element (a layer's
// weights, a scaler) binds them with a Binder, a serializable value that
// turns an element into the step's input:
//
//	stepbeam.ApplyBound(s, tensor.Dense, batches, tensor.WithLayer{Layer: l})
//
// Steps whose DoFn does more than one batch in, one batch out (a side input,
// a group, several outputs per input) embed Exec in their own DoFn and call
// Exec.Run.
//
// A pipeline whose consumers of a step's outputs keep none of them may say so
// (step.RecycleOutputs); the DoFn then hands each output of the CPU
// implementation back to the step once emitted, for its next outputs'
// buffers (the landsat pipeline's toa_ndvi step: planes written while in the
// cache, with no garbage).
//
// Metrics (namespace beamgpu, each name prefixed by the step's name and a
// dot): batches, items, bytes, failures, gpu_fallbacks, recycled, and the
// distribution kernel_ns.
package stepbeam
