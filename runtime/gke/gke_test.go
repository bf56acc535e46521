package gke

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestNodeCount(t *testing.T) {
	for _, tc := range []struct {
		topology string
		perNode  int
		want     int
		err      string
	}{
		// The flex-start TPU guide: "a 4x4 topology consists of 16 chips and each
		// ct6e-standard-4t VM has 4 chips", so --max-nodes=4.
		{"4x4", 4, 4, ""},
		{"2x2", 4, 1, ""},
		{"2x4", 8, 1, ""},
		{"4x4x4", 4, 16, ""},
		{"2x2x1", 1, 4, ""},
		{"16x16", 4, 64, ""},
		{"4x4", 3, 0, "topology 4x4 has 16 chips, which is not a multiple of 3 chips per node"},
		{"1x1", 4, 0, "topology 1x1 has 1 chips, which is not a multiple of 4 chips per node"},
		{"4x4", 0, 0, "chips per node 0 is not positive"},
		{"4x4", -4, 0, "chips per node -4 is not positive"},
		{"16", 4, 0, `topology "16" is not AxB or AxBxC`},
		{"", 4, 0, `topology "" is not AxB or AxBxC`},
		{"2x2x2x2", 4, 0, `topology "2x2x2x2" is not AxB or AxBxC`},
		{"4x0", 4, 0, `topology "4x0" is not a product of positive integers (AxB or AxBxC): "0"`},
		{"-2x2", 4, 0, `topology "-2x2" is not a product of positive integers (AxB or AxBxC): "-2"`},
		{"+2x2", 4, 0, `topology "+2x2" is not a product of positive integers (AxB or AxBxC): "+2"`},
		{"4X4", 4, 0, `topology "4X4" is not AxB or AxBxC`},
		{"axb", 4, 0, `topology "axb" is not a product of positive integers (AxB or AxBxC): "a"`},
		{"4x", 4, 0, `topology "4x" is not a product of positive integers (AxB or AxBxC): ""`},
		{"2048x2048", 4, 0, `topology "2048x2048" has too many chips`},
	} {
		t.Run(tc.topology+"/"+tc.err, func(t *testing.T) {
			got, err := NodeCount(tc.topology, tc.perNode)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// decode parses a YAML stream written by Marshal back into typed objects.
func decode(t *testing.T, data []byte, into ...any) {
	t.Helper()
	docs := strings.Split(string(data), "\n---\n")
	require.Len(t, docs, len(into), "documents in:\n%s", data)
	for i, d := range docs {
		require.NoError(t, yaml.UnmarshalStrict([]byte(d), into[i]), "document %d:\n%s", i, d)
	}
}

// amounts turns a resource list into plain strings, for comparison.
func amounts(rl corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for name, q := range rl {
		out[string(name)] = q.String()
	}
	return out
}

func tpuSpec(topology string, perNode int) JobSpec {
	return JobSpec{
		Name:        "job-1",
		Image:       "us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:latest",
		Command:     []string{"bash", "-c"},
		Args:        []string{"python -c 'import jax; print(jax.device_count())'"},
		Accelerator: Accelerator{Type: "tpu-v6e-slice", Topology: topology, PerNode: perNode},
	}
}

func gpuSpec(nodes int) JobSpec {
	return JobSpec{
		Name:        "fashion-train",
		Namespace:   "ml",
		Image:       "europe-docker.pkg.dev/p/beamgpu/worker:1",
		Command:     []string{"/opt/beamgpu/bin/fashion-train", "--checkpoint_dir=/ckpt"},
		Accelerator: Accelerator{Type: "nvidia-l4", PerNode: 1, Nodes: nodes},
	}
}

func TestSingleHostJobTPU(t *testing.T) {
	job, err := SingleHostJob(tpuSpec("2x2", 4))
	require.NoError(t, err)
	data, err := Marshal(job)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "status:")

	var got batchv1.Job
	decode(t, data, &got)
	assert.Equal(t, "batch/v1", got.APIVersion)
	assert.Equal(t, "Job", got.Kind)
	assert.Equal(t, "job-1", got.Name)
	pod := got.Spec.Template.Spec
	assert.Equal(t, map[string]string{
		"cloud.google.com/gke-flex-start":      "true",
		"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
		"cloud.google.com/gke-tpu-topology":    "2x2",
	}, pod.NodeSelector)
	assert.Equal(t, corev1.RestartPolicyOnFailure, pod.RestartPolicy)
	// the flex-start TPU guide's single-host Job sets no backoffLimit and is not Indexed.
	assert.Nil(t, got.Spec.BackoffLimit)
	assert.Nil(t, got.Spec.CompletionMode)
	assert.Nil(t, got.Spec.Completions)
	assert.Empty(t, pod.Tolerations)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, "us-docker.pkg.dev/cloud-tpu-images/jax-ai-image/tpu:latest", c.Image)
	assert.Equal(t, []string{"bash", "-c"}, c.Command)
	assert.Equal(t, []string{"python -c 'import jax; print(jax.device_count())'"}, c.Args)
	assert.Equal(t, map[string]string{"google.com/tpu": "4"}, amounts(c.Resources.Requests))
	assert.Equal(t, map[string]string{"google.com/tpu": "4"}, amounts(c.Resources.Limits))
	assert.Empty(t, c.Ports)
	assert.Nil(t, c.SecurityContext)
}

func TestSingleHostJobGPU(t *testing.T) {
	job, err := SingleHostJob(gpuSpec(0))
	require.NoError(t, err)
	data, err := Marshal(job)
	require.NoError(t, err)

	var got batchv1.Job
	decode(t, data, &got)
	assert.Equal(t, "ml", got.Namespace)
	pod := got.Spec.Template.Spec
	assert.Equal(t, map[string]string{
		"cloud.google.com/gke-flex-start":  "true",
		"cloud.google.com/gke-accelerator": "nvidia-l4",
	}, pod.NodeSelector)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, "fashion-train", c.Name)
	assert.Equal(t, []string{"/opt/beamgpu/bin/fashion-train", "--checkpoint_dir=/ckpt"}, c.Command)
	assert.Equal(t, map[string]string{"nvidia.com/gpu": "1"}, amounts(c.Resources.Requests))
	assert.Equal(t, map[string]string{"nvidia.com/gpu": "1"}, amounts(c.Resources.Limits))
	assert.Equal(t, corev1.RestartPolicyOnFailure, pod.RestartPolicy)
}

func TestMultiHostJobTPU(t *testing.T) {
	job, svc, err := MultiHostJob(tpuSpec("4x4", 4))
	require.NoError(t, err)
	// the flex-start TPU guide's order: the Service, then the Job.
	data, err := Marshal(svc, job)
	require.NoError(t, err)

	var gotSvc corev1.Service
	var gotJob batchv1.Job
	decode(t, data, &gotSvc, &gotJob)

	assert.Equal(t, "v1", gotSvc.APIVersion)
	assert.Equal(t, "Service", gotSvc.Kind)
	assert.Equal(t, "job-1-headless", gotSvc.Name)
	assert.Equal(t, "None", gotSvc.Spec.ClusterIP)
	assert.Equal(t, map[string]string{"job-name": "job-1"}, gotSvc.Spec.Selector)

	spec := gotJob.Spec
	require.NotNil(t, spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *spec.CompletionMode)
	require.NotNil(t, spec.Completions)
	require.NotNil(t, spec.Parallelism)
	require.NotNil(t, spec.BackoffLimit)
	assert.EqualValues(t, 4, *spec.Completions, "4x4 = 16 chips at 4 per VM")
	assert.EqualValues(t, 4, *spec.Parallelism)
	assert.EqualValues(t, 0, *spec.BackoffLimit)
	pod := spec.Template.Spec
	assert.Equal(t, "job-1-headless", pod.Subdomain)
	assert.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
	assert.Equal(t, "true", pod.NodeSelector["cloud.google.com/gke-flex-start"])
	assert.Equal(t, "tpu-v6e-slice", pod.NodeSelector["cloud.google.com/gke-tpu-accelerator"])
	assert.Equal(t, "4x4", pod.NodeSelector["cloud.google.com/gke-tpu-topology"])
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, []corev1.ContainerPort{{ContainerPort: 8471}, {ContainerPort: 8431}}, c.Ports)
	require.NotNil(t, c.SecurityContext)
	require.NotNil(t, c.SecurityContext.Privileged)
	assert.True(t, *c.SecurityContext.Privileged)
	assert.Equal(t, map[string]string{"google.com/tpu": "4"}, amounts(c.Resources.Limits))
}

func TestMultiHostJobGPU(t *testing.T) {
	spec := gpuSpec(3)
	spec.ServiceName = "trainers"
	job, svc, err := MultiHostJob(spec)
	require.NoError(t, err)
	data, err := Marshal(svc, job)
	require.NoError(t, err)

	var gotSvc corev1.Service
	var gotJob batchv1.Job
	decode(t, data, &gotSvc, &gotJob)
	assert.Equal(t, "trainers", gotSvc.Name)
	assert.Equal(t, "ml", gotSvc.Namespace)
	assert.Equal(t, "None", gotSvc.Spec.ClusterIP)
	assert.EqualValues(t, 3, *gotJob.Spec.Completions)
	assert.EqualValues(t, 3, *gotJob.Spec.Parallelism)
	assert.Equal(t, batchv1.IndexedCompletion, *gotJob.Spec.CompletionMode)
	assert.Equal(t, "trainers", gotJob.Spec.Template.Spec.Subdomain)
	c := gotJob.Spec.Template.Spec.Containers[0]
	assert.Empty(t, c.Ports, "TPU ports are for TPUs")
	assert.Nil(t, c.SecurityContext, "privileged is for TPUs")
	assert.Equal(t, map[string]string{"nvidia.com/gpu": "1"}, amounts(c.Resources.Requests))
	assert.Equal(t, "nvidia-l4", gotJob.Spec.Template.Spec.NodeSelector["cloud.google.com/gke-accelerator"])
}

func TestJobValidation(t *testing.T) {
	mod := func(s JobSpec, f func(*JobSpec)) JobSpec { f(&s); return s }
	for _, tc := range []struct {
		name  string
		spec  JobSpec
		multi bool
		want  []string
	}{
		{"single host needs one node", tpuSpec("4x4", 4), false, []string{
			"a single-host job runs on 1 node, but accelerator tpu-v6e-slice with topology 4x4 at 4 chips per node needs 4 nodes; use MultiHostJob",
		}},
		{"single host gpu with nodes", gpuSpec(2), false, []string{
			"a single-host job runs on 1 node, but accelerator nvidia-l4 asks for 2 nodes; use MultiHostJob",
		}},
		{"unknown accelerator", mod(gpuSpec(1), func(s *JobSpec) { s.Accelerator.Type = "nvidia-rtx-9000" }), false, []string{
			`accelerator type "nvidia-rtx-9000" is unknown; the known types are tpu-v4-podslice, tpu-v5-lite-podslice, tpu-v5p-slice, tpu-v6e-slice, nvidia-tesla-t4,`,
		}},
		{"tpu chips per VM", tpuSpec("2x2", 2), false, []string{
			"accelerator tpu-v6e-slice: 2 chips per node; a TPU VM has 1, 4 or 8 chips (https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training-tpu)",
		}},
		{"zero per node", tpuSpec("2x2", 0), true, []string{"accelerator tpu-v6e-slice: 0 per node is not positive"}},
		{"bad topology", tpuSpec("4x4x", 4), true, []string{`accelerator tpu-v6e-slice: topology "4x4x" is not a product of positive integers`}},
		{"topology on a gpu", mod(gpuSpec(1), func(s *JobSpec) { s.Accelerator.Topology = "2x2" }), false, []string{
			`accelerator nvidia-l4 is a GPU; topology "2x2" applies to TPUs only`,
		}},
		{"nodes disagree with topology", mod(tpuSpec("4x4", 4), func(s *JobSpec) { s.Accelerator.Nodes = 2 }), true, []string{
			"accelerator tpu-v6e-slice: nodes 2 disagrees with topology 4x4 at 4 chips per node, which makes 4 nodes",
		}},
		{"negative nodes", gpuSpec(-1), true, []string{"accelerator nvidia-l4: node count -1 is not between 0 and 1048576"}},
		{"names and image", mod(gpuSpec(1), func(s *JobSpec) {
			s.Name = "Fashion_Train"
			s.Namespace = "ML"
			s.Image = " "
		}), true, []string{`job name "Fashion_Train": a lowercase RFC 1123 label`, `namespace "ML"`, `service name "Fashion_Train-headless"`, "image is empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.multi {
				var job *batchv1.Job
				var svc *corev1.Service
				job, svc, err = MultiHostJob(tc.spec)
				assert.Nil(t, job)
				assert.Nil(t, svc)
			} else {
				var job *batchv1.Job
				job, err = SingleHostJob(tc.spec)
				assert.Nil(t, job)
			}
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestNodePoolCommand(t *testing.T) {
	base := NodePoolSpec{
		Name: "flex-pool", Cluster: "ml", Location: "us-east5",
		NodeZones:   []string{"us-east5-a"},
		MachineType: "ct6e-standard-4t",
		Accelerator: Accelerator{Type: "tpu-v6e-slice", Topology: "4x4", PerNode: 4},
	}
	for _, tc := range []struct {
		name string
		spec NodePoolSpec
		want []string
	}{
		{
			// the flex-start TPU guide's multi-host example: 4x4 at 4 chips per ct6e-standard-4t VM.
			name: "multi-host TPU",
			spec: base,
			want: []string{
				"gcloud", "container", "node-pools", "create", "flex-pool",
				"--cluster=ml", "--location=us-east5", "--node-locations=us-east5-a",
				"--machine-type=ct6e-standard-4t", "--tpu-topology=4x4",
				"--reservation-affinity=none", "--enable-autoscaling", "--flex-start",
				"--num-nodes=0", "--min-nodes=0", "--max-nodes=4", "--no-enable-autorepair",
			},
		},
		{
			name: "single-host TPU",
			spec: func() NodePoolSpec {
				s := base
				s.Accelerator.Topology = "2x2"
				s.NodeZones = nil
				return s
			}(),
			want: []string{
				"gcloud", "container", "node-pools", "create", "flex-pool",
				"--cluster=ml", "--location=us-east5",
				"--machine-type=ct6e-standard-4t",
				"--reservation-affinity=none", "--enable-autoscaling", "--flex-start",
				"--num-nodes=0", "--min-nodes=0", "--max-nodes=1",
			},
		},
		{
			name: "GPU",
			spec: NodePoolSpec{
				Name: "l4-pool", Cluster: "ml", Location: "europe-west4",
				NodeZones:   []string{"europe-west4-a", "europe-west4-b"},
				MachineType: "g2-standard-8", GPUDriverVersion: "latest",
				Accelerator: Accelerator{Type: "nvidia-l4", PerNode: 1, Nodes: 2},
			},
			want: []string{
				"gcloud", "container", "node-pools", "create", "l4-pool",
				"--cluster=ml", "--location=europe-west4", "--node-locations=europe-west4-a,europe-west4-b",
				"--machine-type=g2-standard-8", "--accelerator=type=nvidia-l4,count=1,gpu-driver-version=latest",
				"--reservation-affinity=none", "--enable-autoscaling", "--flex-start",
				"--num-nodes=0", "--min-nodes=0", "--max-nodes=2", "--no-enable-autorepair",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NodePoolCommand(tc.spec)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestNodePoolCommandErrors(t *testing.T) {
	valid := NodePoolSpec{
		Name: "p", Cluster: "c", Location: "us-east5", MachineType: "ct6e-standard-4t",
		Accelerator: Accelerator{Type: "tpu-v6e-slice", Topology: "4x4", PerNode: 4},
	}
	mod := func(f func(*NodePoolSpec)) NodePoolSpec { s := valid; f(&s); return s }
	for _, tc := range []struct {
		name string
		spec NodePoolSpec
		want []string
	}{
		{"empty fields", NodePoolSpec{Accelerator: valid.Accelerator}, []string{
			"node pool name is empty", "cluster is empty", "location is empty", "machine type is empty",
		}},
		{"chips not divisible", mod(func(s *NodePoolSpec) { s.Accelerator.Topology = "2x3" }), []string{
			"accelerator tpu-v6e-slice: topology 2x3 has 6 chips, which is not a multiple of 4 chips per node",
		}},
		{"topology not a product", mod(func(s *NodePoolSpec) { s.Accelerator.Topology = "4by4" }), []string{
			`topology "4by4" is not AxB or AxBxC`,
		}},
		{"machine chips disagree", mod(func(s *NodePoolSpec) { s.MachineType = "ct6e-standard-8t" }), []string{
			"machine type ct6e-standard-8t has 8 chips per VM, but the accelerator asks for 4 per node",
		}},
		{"not a TPU machine", mod(func(s *NodePoolSpec) { s.MachineType = "n2-standard-8" }), []string{
			`machine type "n2-standard-8" is not a TPU machine type (like ct6e-standard-4t) for accelerator tpu-v6e-slice`,
		}},
		{"driver on a TPU pool", mod(func(s *NodePoolSpec) { s.GPUDriverVersion = "latest" }), []string{
			`gpu driver version "latest" applies to GPU node pools, not to TPU tpu-v6e-slice`,
		}},
		{"unknown accelerator", mod(func(s *NodePoolSpec) { s.Accelerator.Type = "tpu-v9" }), []string{
			`accelerator type "tpu-v9" is unknown; the known types are`,
		}},
		{"zero per node", mod(func(s *NodePoolSpec) { s.Accelerator.PerNode = 0 }), []string{
			"accelerator tpu-v6e-slice: 0 per node is not positive",
		}},
		{"GPU on a TPU machine, bad driver", mod(func(s *NodePoolSpec) {
			s.Accelerator = Accelerator{Type: "nvidia-l4", PerNode: 1}
			s.GPUDriverVersion = "535"
		}), []string{
			"machine type ct6e-standard-4t is a TPU machine type, but accelerator nvidia-l4 is a GPU",
			`gpu driver version "535" is not one of default, latest, disabled`,
		}},
		{"bad zone", mod(func(s *NodePoolSpec) { s.NodeZones = []string{"a,b"} }), []string{`node zone "a,b" is not a zone name`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NodePoolCommand(tc.spec)
			assert.Nil(t, got)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestMarshalErrors(t *testing.T) {
	_, err := Marshal()
	assert.EqualError(t, err, "no objects to marshal")
	_, err = Marshal(nil)
	assert.EqualError(t, err, "object 0 is nil")
	_, err = Marshal(&batchv1.Job{})
	assert.EqualError(t, err, "object 0 (*v1.Job) has no apiVersion and kind; set its TypeMeta")
}

// FuzzNodeCount: NodeCount never panics, and a count it returns times the
// chips per node gives back the topology's chips.
func FuzzNodeCount(f *testing.F) {
	f.Add("4x4", 4)
	f.Add("2x2x1", 1)
	f.Add("16x16", 8)
	f.Fuzz(func(t *testing.T, topology string, perNode int) {
		n, err := NodeCount(topology, perNode)
		if err != nil {
			return
		}
		chips, err := topologyChips(topology)
		if err != nil {
			t.Fatalf("NodeCount(%q, %d) = %d, but the topology does not parse: %v", topology, perNode, n, err)
		}
		if n < 1 || n*perNode != chips {
			t.Fatalf("NodeCount(%q, %d) = %d; %d chips", topology, perNode, n, chips)
		}
	})
}

// Every GPU type of the accelerator table is a row of runtime/dataflow's GPU
// table, which gives its counts and machine types.
func TestGPUTypesAreInTheDataflowTable(t *testing.T) {
	for _, a := range accelerators {
		if a.kind != GPU {
			assert.NotEmpty(t, a.machine, "%s: a TPU row needs its machine type", a.name)
			continue
		}
		g, ok := gpuType(a.name)
		require.True(t, ok, a.name)
		for _, n := range g.Counts {
			m, err := DefaultMachineType(Accelerator{Type: a.name, PerNode: n})
			require.NoError(t, err, "%s x %d", a.name, n)
			require.NoError(t, gpuMachineFits(m, Accelerator{Type: a.name, PerNode: n}), "%s x %d on %s", a.name, n, m)
		}
	}
}

func TestAcceleratorCombinations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		a     Accelerator
		nodes int
		err   string
	}{
		{"l4 x1", Accelerator{Type: "nvidia-l4", PerNode: 1}, 1, ""},
		{"l4 x8 on 2 nodes", Accelerator{Type: "nvidia-l4", PerNode: 8, Nodes: 2}, 2, ""},
		{"l4 x3", Accelerator{Type: "nvidia-l4", PerNode: 3}, 0,
			"accelerator nvidia-l4: 3 GPUs per node is not a count its machine types have; a node has 1, 2, 4 or 8"},
		{"t4 x8", Accelerator{Type: "nvidia-tesla-t4", PerNode: 8}, 0,
			"accelerator nvidia-tesla-t4: 8 GPUs per node is not a count its machine types have; a node has 1, 2 or 4"},
		{"h100 mega x1", Accelerator{Type: "nvidia-h100-mega-80gb", PerNode: 1}, 0,
			"accelerator nvidia-h100-mega-80gb: 1 GPUs per node is not a count its machine types have; a node has 8"},
		{"v6e 2x4 on one 8-chip VM", Accelerator{Type: "tpu-v6e-slice", Topology: "2x4", PerNode: 8}, 1, ""},
		{"v6e 1x1", Accelerator{Type: "tpu-v6e-slice", Topology: "1x1", PerNode: 1}, 1, ""},
		{"v5e 8x8", Accelerator{Type: "tpu-v5-lite-podslice", Topology: "8x8", PerNode: 4}, 16, ""},
		{"v4 2x2x2", Accelerator{Type: "tpu-v4-podslice", Topology: "2x2x2", PerNode: 4}, 2, ""},
		{"v6e 4x4 of 8-chip VMs", Accelerator{Type: "tpu-v6e-slice", Topology: "4x4", PerNode: 8}, 0,
			"accelerator tpu-v6e-slice: topology 4x4 at 8 chips per node makes 2 nodes, but 8-chip VMs make single-host slices only (of 8 chips); a multi-host slice is made of 4-chip VMs"},
		{"v6e 2x2 of 1-chip VMs", Accelerator{Type: "tpu-v6e-slice", Topology: "2x2", PerNode: 1}, 0,
			"accelerator tpu-v6e-slice: topology 2x2 at 1 chips per node makes 4 nodes, but 1-chip VMs make single-host slices only (of 1 chips); a multi-host slice is made of 4-chip VMs"},
		{"v4 with 8 chips", Accelerator{Type: "tpu-v4-podslice", Topology: "2x2x2", PerNode: 8}, 0,
			"accelerator tpu-v4-podslice: 8 chips per node; its VMs have 4 chips (ct4p-hightpu-4t)"},
		{"v4 in 2D", Accelerator{Type: "tpu-v4-podslice", Topology: "4x4", PerNode: 4}, 0,
			"accelerator tpu-v4-podslice: topology 4x4 has 2 dimensions; tpu-v4-podslice slices have 3 (AxBxC)"},
		{"v6e in 3D", Accelerator{Type: "tpu-v6e-slice", Topology: "2x2x4", PerNode: 4}, 0,
			"accelerator tpu-v6e-slice: topology 2x2x4 has 3 dimensions; tpu-v6e-slice slices have 2 (AxB)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, n, err := tc.a.nodes()
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.nodes, n)
		})
	}
}

func TestDefaultMachineType(t *testing.T) {
	for _, tc := range []struct {
		a    Accelerator
		want string
	}{
		{Accelerator{Type: "tpu-v6e-slice", Topology: "4x4", PerNode: 4}, "ct6e-standard-4t"}, // the flex-start TPU guide's
		{Accelerator{Type: "tpu-v6e-slice", Topology: "2x4", PerNode: 8}, "ct6e-standard-8t"},
		{Accelerator{Type: "tpu-v5-lite-podslice", Topology: "2x2", PerNode: 4}, "ct5lp-hightpu-4t"},
		{Accelerator{Type: "tpu-v5p-slice", Topology: "2x2x1", PerNode: 4}, "ct5p-hightpu-4t"},
		{Accelerator{Type: "nvidia-tesla-t4", PerNode: 1}, "n1-standard-4"},
		{Accelerator{Type: "nvidia-tesla-v100", PerNode: 8}, "n1-standard-4"},
		{Accelerator{Type: "nvidia-l4", PerNode: 1}, "g2-standard-4"},
		{Accelerator{Type: "nvidia-l4", PerNode: 2}, "g2-standard-24"},
		{Accelerator{Type: "nvidia-tesla-a100", PerNode: 16}, "a2-megagpu-16g"},
		{Accelerator{Type: "nvidia-a100-80gb", PerNode: 4}, "a2-ultragpu-4g"},
		{Accelerator{Type: "nvidia-h100-80gb", PerNode: 8}, "a3-highgpu-8g"},
		{Accelerator{Type: "nvidia-h100-mega-80gb", PerNode: 8}, "a3-megagpu-8g"},
	} {
		got, err := DefaultMachineType(tc.a)
		require.NoError(t, err, "%+v", tc.a)
		assert.Equal(t, tc.want, got, "%+v", tc.a)
	}
	_, err := DefaultMachineType(Accelerator{Type: "nvidia-l4", PerNode: 5})
	assert.ErrorContains(t, err, "5 GPUs per node is not a count")
}

func TestNodePoolMachineFits(t *testing.T) {
	gpu := func(typ string, n int, machine string) NodePoolSpec {
		return NodePoolSpec{Name: "p", Cluster: "c", Location: "l", MachineType: machine, Accelerator: Accelerator{Type: typ, PerNode: n}}
	}
	tpu := func(machine string) NodePoolSpec {
		return NodePoolSpec{Name: "p", Cluster: "c", Location: "l", MachineType: machine,
			Accelerator: Accelerator{Type: "tpu-v6e-slice", Topology: "4x4", PerNode: 4}}
	}
	for _, tc := range []struct {
		spec NodePoolSpec
		err  string
	}{
		{gpu("nvidia-l4", 2, "g2-standard-24"), ""},
		{gpu("nvidia-tesla-t4", 4, "n1-standard-8"), ""},
		{gpu("nvidia-tesla-t4", 1, "n1-custom-8-30720"), ""}, // N1 shapes the table does not list
		{gpu("nvidia-l4", 2, "g2-standard-8"), "machine type g2-standard-8 takes 1 nvidia-l4, not 2; machine types with 2: g2-standard-24"},
		{gpu("nvidia-tesla-t4", 1, "g2-standard-8"), "machine type g2-standard-8 does not carry nvidia-tesla-t4; machine types with 1: n1-standard-4,"},
		{gpu("nvidia-tesla-t4", 1, "n1-standard-64"), "machine type n1-standard-64 takes 4 nvidia-tesla-t4, not 1;"},
		{gpu("nvidia-l4", 1, "n2-standard-8"), "machine type n2-standard-8 does not carry nvidia-l4 (it goes with G2 machine types); machine types with 1: g2-standard-4, g2-standard-8,"},
		{gpu("nvidia-l4", 1, "n1-standard-8"), "machine type n1-standard-8 does not carry nvidia-l4; machine types with 1: g2-standard-4,"},
		{tpu("ct6e-standard-4t"), ""},
		{tpu("ct5lp-hightpu-4t"), "machine type ct5lp-hightpu-4t is not a machine type of tpu-v6e-slice, whose 4-chip VMs are ct6e-standard-4t"},
		{func() NodePoolSpec { s := tpu("ct6e-standard-4t"); s.Name = "Flex_Pool"; return s }(), `node pool name "Flex_Pool": GKE wants`},
		{func() NodePoolSpec { s := tpu("ct6e-standard-4t"); s.Name = strings.Repeat("p", 41); return s }(), "GKE wants 1 to 40"},
	} {
		t.Run(tc.spec.MachineType+"/"+tc.spec.Accelerator.Type, func(t *testing.T) {
			_, err := NodePoolCommand(tc.spec)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// A Service's "status: {loadBalancer: {}}" is left out like a Job's "status: {}".
func TestMarshalDropsEmptyServiceStatus(t *testing.T) {
	job, svc, err := MultiHostJob(tpuSpec("4x4", 4))
	require.NoError(t, err)
	data, err := Marshal(svc, job)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "status")
	assert.NotContains(t, string(data), "loadBalancer")
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.1"}}
	data, err = Marshal(svc)
	require.NoError(t, err)
	assert.Contains(t, string(data), "10.0.0.1", "a status with content stays")
}
