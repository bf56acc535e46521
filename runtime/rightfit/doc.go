// Package rightfit puts resource hints on Beam Go composites, for right fitting.
//
// Beam Go lacks resource hints on a composite transform
// (https://github.com/apache/beam/issues/23893); with them only a
// pipeline's GPU steps run on GPU workers.
//
// A step marks its composite with Scope and the hints it needs (Beam's
// options/resource hints: an accelerator, min_ram). The hints travel in the
// pipeline proto as annotations of that composite. At launch, Apply rewrites
// the proto: the composite's leaf transforms move to a clone of their
// environment that carries the hints (one clone per distinct set of merged
// hints; nested hints merge as in Beam, inner accelerator wins, largest
// min_ram wins), a reshuffle is inserted before them as a fusion break, and
// every other transform stays where it was. Runners read resource hints from
// environments: Dataflow gives each hinted environment's stages workers
// with those resources, and a local runner such as prism starts one worker
// per environment and runs the rewritten pipeline unchanged.
//
// Strip is the other mode: a job whose every worker has the GPU (Dataflow's
// worker_accelerator service option) must not carry per-step accelerator
// hints, so the annotations are dropped and nothing moves.
//
// Why a proto pass: Beam Go applies --resource_hints to its one default
// environment only, and contextreg's environment extractor is not used by
// the marshaller; transform annotations are, and the proto is what every
// runner receives. The pass uses public Beam APIs only (graphx, pipelinex)
// and Beam's own marshalled Reshuffle as the fusion break's template.
package rightfit
