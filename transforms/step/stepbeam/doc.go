// Package stepbeam runs beamgpu steps in Beam pipelines, with one generic DoFn.
//
// The DoFn applies any step to a PCollection: the step's implementation is
// chosen at construction (the backend selector, which records it in the
// explain report), each element is timed and counted in the step's Beam
// metrics, an error or a panic becomes a step.Failure on the dead-letter
// output, and under --backend=auto a batch whose GPU cannot be had runs on
// the CPU. The DoFn is registered once per instantiation, as Beam's own
// transforms/batch registers its generic DoFns.
//
// A family registers the DoFns of its steps from its Beam package's init,
// and its PTransforms apply them (package rasterbeam):
//
//	func init() {
//		stepbeam.Register(raster.StepTOANDVI)
//	}
//
//	func ReflectanceAndNDVI(s beam.Scope, tiles beam.PCollection, opts ...step.Option) (out, failed beam.PCollection) {
//		return stepbeam.Apply(s, raster.StepTOANDVI, tiles, opts...)
//	}
//
// A step with parameters that do not travel with each element (a layer's
// weights, a scaler) binds them with a Binder, a serializable value that
// turns an element into the step's input (package tensorbeam):
//
//	stepbeam.RegisterBound[WithLayer](tensor.StepDense)
//
//	return stepbeam.ApplyBound(s, tensor.StepDense, batches, WithLayer{layer}, opts...)
//
// Example and ExampleApplyBound run both on Beam's local runner. Steps whose
// DoFn does more than one batch in, one batch out (a side input, a group,
// several outputs per input) embed Exec in their own DoFn and call
// Exec.Run.
//
// A pipeline whose consumers of a step's outputs keep none of them may say
// so (step.RecycleOutputs); the DoFn then hands each output of the CPU
// implementation back to the step once emitted, for its next outputs'
// buffers.
//
// Metrics (namespace beamgpu, each name prefixed by the step's name and a
// dot): batches, items, bytes, failures, gpu_fallbacks, recycled, and the
// distribution kernel_ns.
package stepbeam
