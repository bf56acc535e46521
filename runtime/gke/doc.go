// Package gke runs the project's container as a GKE flex-start batch job.
//
// It builds the Kubernetes manifests and the gcloud command that run the
// container as a batch job on Google Kubernetes Engine with flex-start
// provisioning: accelerators (TPU slices or GPUs) obtained on demand, for
// up to seven days, without reservations, billed at Dynamic Workload
// Scheduler prices, with node pools that scale from zero for the job and
// back to zero after it ("Run a small batch workload with TPUs and
// flex-start provisioning mode",
// https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training-tpu).
//
// Why: the same worker container that runs the Dataflow steps (and the
// trainer of the fashion pipeline) can run as a plain batch job where a
// Dataflow job is not the right shape, such as a long training run. The
// manifests are typed k8s.io/api structs, never YAML templates, so that they
// are checked by the compiler, tested as data, and easy to amend (add a
// volume for the checkpoints, a service account) before Marshal writes them.
//
// What the flex-start TPU guide gives, and where it is used:
//   - node selectors cloud.google.com/gke-flex-start: "true",
//     cloud.google.com/gke-tpu-accelerator and cloud.google.com/gke-tpu-topology;
//     requests equal to limits of google.com/tpu, NUM_CHIPS per VM being 1, 4
//     or 8 (SingleHostJob, MultiHostJob);
//   - the single-host Job: restartPolicy OnFailure, no backoffLimit
//     (SingleHostJob);
//   - the multi-host Job: a headless Service (clusterIP None) selecting
//     job-name, an Indexed Job with completions = parallelism = the slice's
//     node count, backoffLimit 0, restartPolicy Never, the pods' subdomain
//     set to the Service, TPU ports 8471 and 8431, privileged (MultiHostJob);
//   - the node pool: --flex-start, --enable-autoscaling, --num-nodes=0,
//     --min-nodes=0, --max-nodes = the topology's chips over the chips per VM
//     (4x4 at 4 per ct6e-standard-4t VM: 4), --reservation-affinity=none and,
//     for multi-host slices, --tpu-topology and --no-enable-autorepair
//     (NodePoolCommand, NodeCount).
//
// The flex-start TPU guide covers TPUs only. For GPUs the package uses GKE's GPU node label
// cloud.google.com/gke-accelerator, the nvidia.com/gpu resource and gcloud's
// --accelerator=type=T,count=N,gpu-driver-version=V; those come from GKE's
// documentation, not from the flex-start TPU guide, and are marked so in the code.
//
// Impossible combinations are errors, all of them reported at once: a
// topology whose chips do not divide into VMs; chips per VM other than a
// TPU version's (v4 and v5p VMs have 4, v5e and v6e 1, 4 or 8, and 1- and
// 8-chip VMs make single-host slices only); a topology of the wrong shape
// (AxBxC for v4 and v5p, AxB for v5e and v6e); a GPU count per node that no
// machine type has, or a machine type that does not carry the GPUs (both by
// runtime/dataflow's GPU and machine type tables, the one rule table of the
// project); a TPU machine type of another version or chip count.
// DefaultMachineType picks a machine type that fits.
//
// Package workload (runtime/gke/workload) and the command beamgpu-gke
// (runtime/gke/cmd/beamgpu-gke) use this package to run the project's
// trainer and pipelines as such Jobs, with their volumes; the examples under
// containers/k8s are their output.
package gke
