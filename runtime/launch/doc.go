// Package launch is the one launcher of every pipeline in pipelines/: it
// takes a constructed Beam pipeline to Beam's local runner prism (the
// default, in this process), to Google Cloud Dataflow (submitted, or only
// planned), or to any portable job server (--endpoint), and on the way
// places the GPU steps.
//
// Placement: GPU steps mark their composites with resource hints
// (runtime/rightfit). With right fitting (the default), Run marshals the
// pipeline and moves those steps into environments that carry the hints,
// after a fusion break, so that on Dataflow only their stages get GPU
// workers; prism runs the same rewritten pipeline with one loopback worker
// per environment. With --worker_accelerator every Dataflow worker gets the
// GPU instead and the hints are dropped: the two are never combined.
//
// A plan (--plan_out=DIR) is the Dataflow dry run made useful: plan.txt, a
// summary to review (environments, which steps sit in which, hints, fusion
// breaks, GPU sharing, service options, experiments, machine type,
// container image), plan.json (the same as data), the pipeline proto
// (pipeline.pb, pipeline.txtpb) and, for Dataflow, job.json: the job that
// would be submitted. A plan is made offline: it needs no project (it says
// PROJECT), no staging bucket and no credentials, and holds none; pipeline
// options whose names suggest a secret are redacted.
//
// Validation comes first: Flags.Validate checks the runner and, for
// Dataflow, the typed GPU configuration against every rule of
// runtime/dataflow before the pipeline is constructed; Run checks it again
// with the right-fitting hints once they are known, before anything is
// staged or written.
//
// GPU sharing: the SDK processes of one worker share its GPU, each with its
// executor. Run works out how many (one for Go's multi-core SDK container,
// or --gpu_processes), and hands the workers each executor's memory budget
// and concurrency as the pipeline option beamgpu_gpu_sharing; the plan says
// so, with whether NVIDIA MPS is on.
//
// Typical use, in a pipeline's main:
//
//	var lf launch.Flags
//	lf.Register(flag.CommandLine)
//	flag.Parse()
//	beam.Init()
//	if err := lf.Validate(); err != nil { ... }      // before any work
//	ex, _ := lf.Executor(stepops.Executor(""))        // GPUs here, or on the workers
//	... construct p with steps resolved against ex ...
//	out, err := launch.Run(ctx, p, lf)                // out.Result has the metrics
package launch
