package workload

import "slices"

// ExampleImage stands for the beamgpu worker image in the examples: replace
// it with the image you pushed (or pass your own with --image).
const ExampleImage = "REGION-docker.pkg.dev/PROJECT_ID/beamgpu/worker:TAG"

// Example is one of the manifests checked in under containers/k8s: its file
// name and the command's arguments that generate it (make k8s writes them
// all with --examples).
type Example struct {
	File  string
	Args  []string
	About string
}

var examples = []Example{
	{
		File:  "train-l4.yaml",
		Args:  []string{"--workload=train", "--image=" + ExampleImage, "--accelerator=nvidia-l4"},
		About: "the Fashion-MNIST trainer on one L4 node; checkpoints on the work volume, so a restarted pod resumes",
	},
	{
		File:  "landsat-t4.yaml",
		Args:  []string{"--workload=landsat", "--image=" + ExampleImage, "--accelerator=nvidia-tesla-t4", "--", "--input=" + DataMount + "/landsat"},
		About: "the Landsat pipeline on one T4 node, on the scenes under landsat/ of the data volume",
	},
	{
		File:  "fashion-knn-l4.yaml",
		Args:  []string{"--workload=fashion", "--image=" + ExampleImage, "--accelerator=nvidia-l4", "--", "--model=knn", "--k=5"},
		About: "the Fashion-MNIST pipeline, kNN against the training set on the data volume, on one L4 node",
	},
	{
		File: "jax-tpu-v6e-4x4.yaml",
		Args: []string{
			"--command=bash", "--name=jax-tpu", "--image=us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:latest",
			"--accelerator=tpu-v6e-slice", "--topology=4x4", "--per_node=4", "--work_pvc=", "--data_pvc=",
			"--", "-c", `python -c 'import jax; print("TPU cores:", jax.device_count())'`,
		},
		About: "not a beamgpu workload: the flex-start TPU guide's multi-host JAX check on a 4x4 TPU v6e slice (4 VMs of 4 chips), the multi-host shape",
	},
}

// Examples returns the examples checked in under containers/k8s.
func Examples() []Example { return slices.Clone(examples) }
