// Package step declares beamgpu's steps and runs them on the CPU, the GPU or a stub.
//
// It imports no Beam package: a family's step package, the GPU executor and
// the trainer link it without Beam.
//
// A step is one unit of batch work (a tile of pixels, a matrix of rows) from
// an input type In to an output type Out, declared once with Register as a
// Def[In, Out], in its family's package:
//
//   - CPU: func(In) (Out, error), the reference;
//   - GPU (optional): the op's name on the executor, its resource hints, and
//     the Codecs that move In and Out across the executor boundary (a small
//     header and raw arrays, each in shared memory of its own), with the side
//     data many batches share (weights, a reference set) sent once;
//   - a CUDA Launch, registered with RegisterLaunch from the family's files
//     behind the cuda tag, written against the device API of
//     runtime/executor/gpu;
//   - a stub, registered with RegisterStub from the stubs/ tree, in the way
//     image formats register with package image.
//
// Every part is typed: a CPU function, codec, launch or stub of the wrong
// type does not compile. Register returns the *Step[In, Out] that the rest
// refers to; Any is a step of any types, for the registry (All, Lookup) and
// the harnesses.
//
// Implementations run where they are chosen: Impl returns the CPU function,
// the stub, or the GPU implementation, Offload, which sends the batch to the
// GPU executor (a separate process; UseExecutor names it) and splits a batch
// that does not fit. On the executor, ReferenceOp serves the op with the CPU
// function (the CPU reference executor) and LaunchOp with the launch on a
// device (an Engine: the CUDA executor's). Package serve builds executors
// from the registered steps, package stepbeam runs steps in Beam pipelines
// (one generic DoFn, the explain report, metrics, the dead-letter output),
// package steptest checks the contracts, and package files is how steps read
// files.
//
// Example declares a step, chooses its implementation and runs it and its
// stand-in; Step.Offload's example runs the GPU implementation through an
// executor process and shows its fallback error.
//
// Adding a step to a family touches its package (the Def, and for a GPU step
// the kernel in the family's kernels.cu and its launch), the family's Beam
// package (registering the DoFn, a PTransform) and its stubs package; nothing
// under runtime/. docs/writing-a-step.md has the recipe, and
// examples/clipstep is a step of another module.
package step
