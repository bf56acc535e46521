// Package workload turns a beamgpu workload into a GKE flex-start batch Job.
//
// A workload (the Fashion-MNIST trainer, the Landsat or the Fashion-MNIST
// pipeline, or any other command) becomes the manifests of a batch Job on
// GKE flex-start nodes and the gcloud command of its node pool, on package
// gke's typed, validated builders. It is the
// command beamgpu-gke (runtime/gke/cmd/beamgpu-gke; Main and Generate), and
// it generates the examples checked in under containers/k8s.
//
// A workload runs the worker image's binary (under /opt/beamgpu/bin) as the
// container's command, replacing the image's ENTRYPOINT (Beam's boot loader),
// in a single-host Job (restartPolicy OnFailure, as the flex-start TPU guide shows) on one
// node with the GPU: the pipelines run on Beam's prism runner inside the pod
// with --backend=gpu, so a GPU that cannot be used is an error rather than a
// silent run on the CPU. The workloads refuse TPUs (the GPU executor is CUDA
// only: a TPU would sit idle) and multi-host Jobs (each is one process);
// --command gives the guide's multi-host Indexed Job with its headless Service.
//
// Volumes. The Job restarts a pod that fails, and flex-start may take its
// node back, so what a pod writes must outlive it: a PersistentVolumeClaim
// (WorkPVC) is mounted read-write at /work, and each Job writes under
// /work/<job name>. For the trainer that is --checkpoint_dir and --out: a
// restarted pod resumes from the newest valid checkpoint there (a torn
// newest one is skipped; the trainer writes one on SIGTERM too, within the
// pod's grace period). Its resume is bitwise on one machine (tested in
// transforms/tensor/train); a pod restarted on another node of the same
// machine type runs the same code on the same kind of CPU. The input data comes from a second claim (DataPVC), mounted
// read-only at /data (Fashion-MNIST in /data/fashion-mnist): read-only, so
// a job cannot damage it, and a claim of its own, so that one copy can serve
// many Jobs (a ReadOnlyMany volume) and the data is not baked into the image
// or fetched from the internet at every start. The pipelines also get a
// memory-backed emptyDir at /dev/shm, where the GPU executor's shared-memory
// batches live (a container's own /dev/shm is 64 MiB).
package workload
