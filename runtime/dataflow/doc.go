// Package dataflow is the typed, validated GPU configuration of a Dataflow
// job: which GPU, how many, on which machine type, in which region, with or
// without NVIDIA MPS, whole-pipeline (the worker_accelerator service option)
// or per step (right fitting, Beam accelerator resource hints); and the
// Dataflow runner flags it stands for.
//
// Why: a wrong GPU configuration is only refused by Dataflow after the job is
// built, staged and submitted, and some wrong ones (MPS with several GPUs, a
// worker_accelerator on top of right fitting) are not refused at all but run
// badly. Config.Validate checks everything before anything is submitted and
// returns every broken rule at once, each naming the value and the rule.
//
// The rules are one data table (Rules), each row with the source it comes
// from, and the data they check against is a second table (GPUTypes,
// MachineTypes, GPURegions). The sources are Google Cloud's pages kept in the
// project's shared/seeds:
//
//   - seed 000, GPU best practices for Dataflow: N1 GPUs also work on N1
//     custom machine types; the GPU type and count bound a worker's vCPUs and
//     memory; right fitting; no_use_multiple_sdk_containers and
//     --number_of_worker_harness_threads limit a worker's processes.
//   - seed 001, GPUs for training: the usable GPU types, the table of valid
//     GPU counts per machine type (N1 with T4, P4, P100, V100; A100 on the A2
//     types with fixed counts), the vCPU and memory each V100 provides (12,
//     76 GB) and the cap of 4 P100s (64 vCPUs, 208 GB), and the regions that
//     provide GPUs.
//   - seed 002, NVIDIA MPS on Dataflow: use_nvidia_mps on worker_accelerator,
//     count 1 only, not with no_use_multiple_sdk_containers nor other options
//     that restrict parallelism, not on Dataflow Prime.
//
// No seed covers L4 (G2), A100 80GB (A2 Ultra) or H100 (A3); their rows come
// from Compute Engine's GPU machine types page and say so. Seed 001 is
// written for AI Platform Training; its region list may lag Dataflow's, which
// is what Config.Skip is for. Choices made where the seeds are ambiguous are
// written next to the rule or the data they concern.
//
// Example:
//
//	cfg := dataflow.Config{
//		Region:            "us-central1",
//		MachineType:       "g2-standard-8",
//		WorkerAccelerator: &dataflow.GPU{Type: "nvidia-l4", Count: 1, InstallDriver: true, MPS: true},
//	}
//	flags, err := cfg.Flags() // --region=us-central1 --worker_machine_type=g2-standard-8
//	//   --dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps
//
// The package does not import Beam: the launcher (runtime/launch) reads a
// Config from Beam's flags and its own, validates it before anything is
// built, builds the Dataflow job from it, and checks the right-fitting
// hints that runtime/rightfit put on the GPU steps' environments.
package dataflow
