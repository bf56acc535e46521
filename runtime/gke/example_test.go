package gke_test

import (
	"fmt"
	"strings"

	"github.com/beamgpu/beamgpu/runtime/gke"
)

// A single-host flex-start Job that runs the project's trainer on one L4.
// Add a volume for /ckpt to the returned Job so checkpoints outlive the pod.
func ExampleSingleHostJob() {
	job, err := gke.SingleHostJob(gke.JobSpec{
		Name:        "fashion-train",
		Image:       "<your image>",
		Command:     []string{"/opt/beamgpu/bin/fashion-train", "--checkpoint_dir=/ckpt"},
		Accelerator: gke.Accelerator{Type: "nvidia-l4", PerNode: 1},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := gke.Marshal(job)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// apiVersion: batch/v1
	// kind: Job
	// metadata:
	//   name: fashion-train
	// spec:
	//   template:
	//     spec:
	//       containers:
	//       - command:
	//         - /opt/beamgpu/bin/fashion-train
	//         - --checkpoint_dir=/ckpt
	//         image: <your image>
	//         name: fashion-train
	//         resources:
	//           limits:
	//             nvidia.com/gpu: "1"
	//           requests:
	//             nvidia.com/gpu: "1"
	//       nodeSelector:
	//         cloud.google.com/gke-accelerator: nvidia-l4
	//         cloud.google.com/gke-flex-start: "true"
	//       restartPolicy: OnFailure
}

// The node pool for a 4x4 TPU Trillium slice: 16 chips at 4 per VM make 4 nodes.
func ExampleNodePoolCommand() {
	cmd, err := gke.NodePoolCommand(gke.NodePoolSpec{
		Name: "flex-pool", Cluster: "ml", Location: "us-east5", NodeZones: []string{"us-east5-a"},
		MachineType: "ct6e-standard-4t",
		Accelerator: gke.Accelerator{Type: "tpu-v6e-slice", Topology: "4x4", PerNode: 4},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Printed as in the flex-start TPU guide: the command and name on one line, a flag a line.
	fmt.Println(strings.Join(cmd[:5], " ") + " \\\n    " + strings.Join(cmd[5:], " \\\n    "))
	// Output:
	// gcloud container node-pools create flex-pool \
	//     --cluster=ml \
	//     --location=us-east5 \
	//     --node-locations=us-east5-a \
	//     --machine-type=ct6e-standard-4t \
	//     --tpu-topology=4x4 \
	//     --reservation-affinity=none \
	//     --enable-autoscaling \
	//     --flex-start \
	//     --num-nodes=0 \
	//     --min-nodes=0 \
	//     --max-nodes=4 \
	//     --no-enable-autorepair
}

// The machine type of a node pool, where none is given: a TPU version's VM
// with the chips per node, or the first machine type that carries the GPUs.
func ExampleDefaultMachineType() {
	for _, a := range []gke.Accelerator{
		{Type: "tpu-v6e-slice", Topology: "4x4", PerNode: 4},
		{Type: "nvidia-l4", PerNode: 1},
		{Type: "nvidia-l4", PerNode: 2},
		{Type: "nvidia-tesla-t4", PerNode: 1},
		{Type: "nvidia-l4", PerNode: 3},
	} {
		m, err := gke.DefaultMachineType(a)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("%s x%d: %s\n", a.Type, a.PerNode, m)
	}
	// Output:
	// tpu-v6e-slice x4: ct6e-standard-4t
	// nvidia-l4 x1: g2-standard-4
	// nvidia-l4 x2: g2-standard-24
	// nvidia-tesla-t4 x1: n1-standard-4
	// error: accelerator nvidia-l4: 3 GPUs per node is not a count its machine types have; a node has 1, 2, 4 or 8
}
