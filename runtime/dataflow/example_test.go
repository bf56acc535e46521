package dataflow_test

import (
	"fmt"

	"github.com/beamgpu/beamgpu/runtime/dataflow"
)

// A whole-pipeline L4 with MPS becomes Dataflow's flags; with two GPUs and
// a 4xx driver, Validate reports every broken rule at once.
func ExampleConfig_Flags() {
	cfg := dataflow.Config{
		Region:            "us-central1",
		MachineType:       "g2-standard-8",
		WorkerAccelerator: &dataflow.GPU{Type: "nvidia-l4", Count: 1, InstallDriver: true, Driver: "5xx", MPS: true},
	}
	flags, err := cfg.Flags()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range flags {
		fmt.Println(f)
	}

	cfg.WorkerAccelerator.Count = 2
	cfg.WorkerAccelerator.Driver = "4xx"
	fmt.Println(cfg.Validate())
	// Output:
	// --region=us-central1
	// --worker_machine_type=g2-standard-8
	// --dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:5xx;use_nvidia_mps
	// gpu-driver: worker_accelerator "type:nvidia-l4;count:2;install-nvidia-driver:4xx;use_nvidia_mps" asks for a 4xx driver, but the worker image is CUDA 12 and needs R525 or newer (Dockerfile (nvidia/cuda:12.4.1-runtime: CUDA 12 needs driver R525+)); ask for install-nvidia-driver:5xx (or :latest)
	// gpu-count-machine: worker_accelerator "type:nvidia-l4;count:2;install-nvidia-driver:4xx;use_nvidia_mps": machine type g2-standard-8 comes with exactly 1 nvidia-l4, not count 2 (https://cloud.google.com/compute/docs/gpus)
	// mps-single-gpu: worker_accelerator "type:nvidia-l4;count:2;install-nvidia-driver:4xx;use_nvidia_mps" sets use_nvidia_mps with count 2; MPS is supported only on workers with a single GPU, so count must be 1 (https://cloud.google.com/dataflow/docs/gpu/use-nvidia-mps)
}
