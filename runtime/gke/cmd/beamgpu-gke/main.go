// Command beamgpu-gke writes the manifests of a beamgpu workload on GKE flex-start nodes.
//
// The workload (the Fashion-MNIST trainer, the Landsat or the Fashion-MNIST
// pipeline, or another command) runs as a batch Job; the command also
// prints the gcloud command that creates the flex-start node pool for it.
// See package runtime/gke/workload, and run it with --help.
//
//	go run ./runtime/gke/cmd/beamgpu-gke --workload=train --image=IMAGE --accelerator=nvidia-l4 > train.yaml
package main

import (
	"os"

	"github.com/beamgpu/beamgpu/runtime/gke/workload"
)

func main() {
	os.Exit(workload.Main(os.Args[1:], os.Stdout, os.Stderr))
}
