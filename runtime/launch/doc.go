// Package launch takes a constructed pipeline to prism, Dataflow or a job server.
//
// It is the one launcher of beamgpu's pipelines (package job calls it): it
// takes a constructed Beam pipeline to Beam's local runner prism (the
// default, in this process), to Google Cloud Dataflow (submitted, or only
// planned), or to any portable job server (--endpoint), and on the way
// places the GPU steps.
//
// Placement: GPU steps mark their composites with resource hints
// (runtime/rightfit). With right fitting (--right_fitting=auto, the default,
// applies it on Dataflow and portable job servers), Run marshals the
// pipeline and moves those steps into environments that carry the hints,
// after a fusion break, so that on Dataflow only their stages get GPU
// workers. On prism in this process auto leaves it off: every environment
// would run in this one process, and prism holds the data at each fusion
// break in memory (24 GB for a full-size Landsat scene). --right_fitting
// asks for it there too: prism then runs the rewritten pipeline with one
// loopback worker per environment. With --worker_accelerator every Dataflow
// worker gets the GPU instead and the hints are dropped: the two are never
// combined.
//
// A plan (--plan_out=DIR) is the Dataflow dry run made useful: plan.txt, a
// summary to review (environments, which steps sit in which, hints, fusion
// breaks, GPU sharing, service options, experiments, machine type,
// container image), plan.json (the same as data), the pipeline proto
// (pipeline.pb, pipeline.txtpb) and, for Dataflow, job.json: the job that
// would be submitted. A plan is made offline: it needs no project (it says
// PROJECT), no staging bucket and no credentials, and holds none; in it,
// and only in it, pipeline options whose names suggest a secret
// (IsSecretName: my_access_key, apiKey, db-password) read <redacted>: a
// submission sends them as given, or the workers would get "<redacted>".
//
// A Dataflow submission sets the job options as Beam's own Dataflow runner
// does, with its checks (labels, template_location, update and
// transform_name_mapping, disks, autoscaling, public IPs, FlexRS, the
// streaming experiments, cross-language artifacts), stages the worker
// binary (--worker_binary, else this binary when it is a static
// linux/amd64 one, else Beam cross-compiles from source), and with
// --template_location stages a template and submits nothing.
//
// Validation comes first: Flags.Validate checks the runner and, for
// Dataflow, the GPU configuration (typed flags and Dataflow's raw
// worker_accelerator service option alike) against every rule of
// runtime/dataflow, and that --sdk_container_image names a registry
// (CheckImage), before the pipeline is constructed; Run checks the rules
// again with the right-fitting hints once they are known, before anything
// is staged or written, and puts the rules' warnings in the plan.
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
//	ex, _ := lf.Executor(step.UseExecutor(""))        // GPUs here, or on the workers
//	... construct p with steps resolved against ex ...
//	out, err := launch.Run(ctx, p, lf)                // out.Result has the metrics
package launch
