// Package dataflow is the typed, validated GPU configuration of a Dataflow job.
//
// It says which GPU, how many, on which machine type, with which NVIDIA
// driver, in which region, with or without NVIDIA MPS, whole-pipeline (the
// worker_accelerator service option) or per step (right fitting, Beam
// accelerator resource hints); and the Dataflow runner flags it stands for.
//
// Why: a wrong GPU configuration is only refused by Dataflow after the job is
// built, staged and submitted, and some wrong ones are not refused at all but
// bill GPUs for CPU work: a driver too old for the CUDA 12 worker image, or a
// GPU that cannot load the kernels' PTX, leaves the executor without a
// device, and under --backend=auto every batch then runs on the CPU of a
// paid GPU worker. Config.Validate checks everything before anything is
// submitted and returns every broken rule at once, each naming the value,
// the rule and its source; Config.Warnings lists what the sources do not
// rule out but a job may still fail on (a region not known to offer GPUs).
//
// Both forms Dataflow's pages use are read: the typed flag of this project
// (--worker_accelerator=type:...;count:1;install-nvidia-driver:5xx) and the
// raw service option of the documentation
// (--dataflow_service_options=worker_accelerator=type:...), which
// Config.SetFlag and ParseFlags parse into the same Config, so both are
// validated alike. The accelerator string takes every part the pages show:
// type, count, machine_type (right fitting), install-nvidia-driver with or
// without a version (:5xx, :latest, :535.104.05) and use_nvidia_mps. A test
// holds every example of Dataflow's GPU, L4, MPS and right-fitting pages
// verbatim, with its source, and parses it.
//
// The rules are one data table (Rules), each row with its source, and the
// data they check against is a second table (GPUTypes, MachineTypes,
// GPURegions). The sources, in order of authority:
//
//   - Dataflow's own pages: GPU support, GPU best practices, Use NVIDIA L4
//     GPUs, Use NVIDIA MPS, Right fitting, FlexRS, Dataflow Prime,
//     Troubleshoot GPUs;
//   - Compute Engine's GPU machine types page, which Dataflow defers to for
//     the machine types of each GPU;
//   - Beam's vLLM notebook and Google's Gemma sample, which show the driver
//     a CUDA 12 image needs on Dataflow (install-nvidia-driver:5xx);
//   - the project's own files: the PTX's target (cmd/beamgpu-ptx) and the
//     worker image's CUDA version (Dockerfile);
//   - AI Platform Training's GPU page only where nothing newer
//     says otherwise: its per-GPU vCPU and memory bounds (V100, 4 x P100);
//     its count table per N1 machine type and its region list are warnings
//     only, because they are AI Platform's, not Dataflow's.
//
// Config.Skip switches a rule off, for a table that lags the service (a
// GPU type or machine added since).
//
// ExampleConfig_Flags shows a configuration, its flags and its errors:
//
//	cfg := dataflow.Config{
//		Region:            "us-central1",
//		MachineType:       "g2-standard-8",
//		WorkerAccelerator: &dataflow.GPU{Type: "nvidia-l4", Count: 1, InstallDriver: true, Driver: "5xx", MPS: true},
//	}
//	flags, err := cfg.Flags()
//
// The package does not import Beam: the launcher (runtime/launch) reads a
// Config from Beam's flags and its own, validates it before anything is
// built, builds the Dataflow job from it, and checks the right-fitting
// hints that runtime/rightfit put on the GPU steps' environments.
package dataflow
