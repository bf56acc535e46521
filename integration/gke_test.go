package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamgpu/beamgpu/runtime/gke/workload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The GKE flex-start manifests of runtime/gke/workload (the command
// beamgpu-gke), checked as data: generated, parsed back strictly into the
// k8s.io/api types, and their fields compared with the flex-start TPU guide's manifests.

// gkeObjects is one YAML stream parsed back: its Service (multi-host only)
// and its Job.
type gkeObjects struct {
	svc *corev1.Service
	job *batchv1.Job
}

// parseGKE parses a stream of Service and Job documents strictly: a field
// the k8s.io/api types do not know (or a duplicate one) is an error.
func parseGKE(t *testing.T, data []byte) gkeObjects {
	t.Helper()
	var out gkeObjects
	for i, doc := range strings.Split(string(data), "\n---\n") {
		var tm metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal([]byte(doc), &tm), "document %d", i)
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Service":
			require.Nil(t, out.svc, "one Service")
			out.svc = &corev1.Service{}
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), out.svc), "document %d:\n%s", i, doc)
		case "batch/v1 Job":
			require.Nil(t, out.job, "one Job")
			out.job = &batchv1.Job{}
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), out.job), "document %d:\n%s", i, doc)
		default:
			t.Fatalf("document %d is a %q %q, not a Service or a Job", i, tm.APIVersion, tm.Kind)
		}
	}
	require.NotNil(t, out.job, "a Job")
	return out
}

// Strict parsing is what catches a misspelt field.
func TestGKEParseIsStrict(t *testing.T) {
	var job batchv1.Job
	err := yaml.UnmarshalStrict([]byte("apiVersion: batch/v1\nkind: Job\nspec:\n  backofLimit: 0\n"), &job)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown field "backofLimit"`)
}

func gkeContainer(t *testing.T, job *batchv1.Job) corev1.Container {
	t.Helper()
	require.Len(t, job.Spec.Template.Spec.Containers, 1)
	return job.Spec.Template.Spec.Containers[0]
}

// quantities turns a resource list into plain strings.
func quantities(rl corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for name, q := range rl {
		out[string(name)] = q.String()
	}
	return out
}

// gkeVolumes describes the pod's volume mounts as "mount path -> source".
func gkeVolumes(t *testing.T, job *batchv1.Job) map[string]string {
	t.Helper()
	pod := job.Spec.Template.Spec
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	out := map[string]string{}
	for _, m := range gkeContainer(t, job).VolumeMounts {
		v, ok := vols[m.Name]
		require.True(t, ok, "mount %s names volume %s, which the pod has", m.MountPath, m.Name)
		switch {
		case v.PersistentVolumeClaim != nil:
			require.Equal(t, m.ReadOnly, v.PersistentVolumeClaim.ReadOnly, "%s: mount and claim agree on read-only", m.MountPath)
			out[m.MountPath] = fmt.Sprintf("pvc %s read-only=%t", v.PersistentVolumeClaim.ClaimName, m.ReadOnly)
		case v.EmptyDir != nil:
			out[m.MountPath] = "emptyDir " + string(v.EmptyDir.Medium)
		default:
			t.Fatalf("volume %s: unexpected source %+v", v.Name, v.VolumeSource)
		}
	}
	assert.Len(t, pod.Volumes, len(out), "every volume is mounted")
	return out
}

// checkFlexStart checks what every manifest has: the flex-start and
// accelerator node selectors, and requests equal to limits of the
// accelerator resource, per node.
func checkFlexStart(t *testing.T, job *batchv1.Job, selector map[string]string, resource, perNode string) {
	t.Helper()
	pod := job.Spec.Template.Spec
	want := map[string]string{"cloud.google.com/gke-flex-start": "true"}
	for k, v := range selector {
		want[k] = v
	}
	assert.Equal(t, want, pod.NodeSelector)
	c := gkeContainer(t, job)
	assert.Equal(t, map[string]string{resource: perNode}, quantities(c.Resources.Requests))
	assert.Equal(t, quantities(c.Resources.Requests), quantities(c.Resources.Limits), "requests == limits")
}

// checkSingleHost checks the flex-start TPU guide's single-host Job: restartPolicy
// OnFailure, no backoffLimit, not Indexed, no Service.
func checkSingleHost(t *testing.T, objs gkeObjects) {
	t.Helper()
	assert.Nil(t, objs.svc)
	spec := objs.job.Spec
	assert.Equal(t, corev1.RestartPolicyOnFailure, spec.Template.Spec.RestartPolicy)
	assert.Nil(t, spec.BackoffLimit, "the flex-start TPU guide's single-host Job leaves backoffLimit to Kubernetes")
	assert.Nil(t, spec.CompletionMode)
	assert.Nil(t, spec.Completions)
	assert.Nil(t, spec.Parallelism)
	assert.Empty(t, spec.Template.Spec.Subdomain)
}

// checkMultiHost checks the flex-start TPU guide's multi-host manifests: a headless Service
// selecting the Job's pods, an Indexed Job of completions = parallelism =
// nodes, backoffLimit 0, restartPolicy Never, pods in the Service's subdomain.
func checkMultiHost(t *testing.T, objs gkeObjects, nodes int32) {
	t.Helper()
	require.NotNil(t, objs.svc)
	assert.Equal(t, "None", objs.svc.Spec.ClusterIP)
	assert.Equal(t, map[string]string{"job-name": objs.job.Name}, objs.svc.Spec.Selector)
	assert.Equal(t, objs.job.Namespace, objs.svc.Namespace)
	spec := objs.job.Spec
	require.NotNil(t, spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *spec.CompletionMode)
	require.NotNil(t, spec.Completions)
	require.NotNil(t, spec.Parallelism)
	assert.Equal(t, nodes, *spec.Completions)
	assert.Equal(t, nodes, *spec.Parallelism)
	require.NotNil(t, spec.BackoffLimit)
	assert.EqualValues(t, 0, *spec.BackoffLimit)
	assert.Equal(t, corev1.RestartPolicyNever, spec.Template.Spec.RestartPolicy)
	assert.Equal(t, objs.svc.Name, spec.Template.Spec.Subdomain)
}

// Each workload, as beamgpu-gke writes it, is the flex-start TPU guide's single-host Job on
// a flex-start GPU node, running the worker image's binary on its volumes.
func TestGKEWorkloadManifests(t *testing.T) {
	work := "pvc beamgpu-work read-only=false"
	data := "pvc beamgpu-data read-only=true"
	for _, tc := range []struct {
		workload, accelerator, perNode string
		name, bin                      string
		args                           []string
		volumes                        map[string]string
	}{
		{workload.Train, "nvidia-l4", "1", "fashion-train", "/opt/beamgpu/bin/fashion-train",
			[]string{"--data_dir=/data/fashion-mnist", "--checkpoint_dir=/work/fashion-train/checkpoints", "--out=/work/fashion-train/mlp-784-256-128-10.bgmlp", "--epochs=5"},
			map[string]string{"/work": work, "/data": data}},
		{workload.Landsat, "nvidia-tesla-t4", "2", "landsat", "/opt/beamgpu/bin/landsat",
			[]string{"--backend=gpu", "--output=/work/landsat", "--epochs=5"},
			map[string]string{"/work": work, "/data": data, "/dev/shm": "emptyDir Memory"}},
		{workload.Fashion, "nvidia-tesla-a100", "1", "fashion", "/opt/beamgpu/bin/fashion",
			[]string{"--backend=gpu", "--data_dir=/data/fashion-mnist", "--output=/work/fashion", "--epochs=5"},
			map[string]string{"/work": work, "/data": data, "/dev/shm": "emptyDir Memory"}},
	} {
		t.Run(tc.workload, func(t *testing.T) {
			out, err := workload.Generate([]string{"--workload=" + tc.workload, "--image=registry.example/beamgpu/worker:1",
				"--accelerator=" + tc.accelerator, "--per_node=" + tc.perNode, "--", "--epochs=5"})
			require.NoError(t, err)
			assert.Contains(t, string(out), "\n#       --max-nodes=1\n")
			assert.Contains(t, string(out), "\n#       --flex-start \\\n")
			objs := parseGKE(t, out)
			job := objs.job
			assert.Equal(t, tc.name, job.Name)
			checkSingleHost(t, objs)
			checkFlexStart(t, job, map[string]string{"cloud.google.com/gke-accelerator": tc.accelerator}, "nvidia.com/gpu", tc.perNode)
			c := gkeContainer(t, job)
			assert.Equal(t, "registry.example/beamgpu/worker:1", c.Image)
			assert.Equal(t, []string{tc.bin}, c.Command, "the command replaces the image's ENTRYPOINT (Beam's boot loader)")
			assert.Equal(t, tc.args, c.Args)
			assert.Equal(t, tc.volumes, gkeVolumes(t, job))
			assert.Empty(t, c.Ports, "TPU ports are for TPUs")
			assert.Nil(t, c.SecurityContext, "privileged is for TPUs")
		})
	}
}

// --command gives the flex-start TPU guide's multi-host manifests: on a TPU slice, with the
// node count from the topology and the chips per VM; on GPU nodes, with
// --nodes.
func TestGKEMultiHostManifests(t *testing.T) {
	t.Run("tpu", func(t *testing.T) {
		out, err := workload.Generate([]string{"--command=bash", "--name=job-1", "--image=jax:latest",
			"--accelerator=tpu-v6e-slice", "--topology=4x4", "--per_node=4", "--work_pvc=", "--data_pvc=", "--", "-c", "python -c 'import jax'"})
		require.NoError(t, err)
		// 4x4 = 16 chips at 4 per ct6e-standard-4t VM: 4 nodes.
		assert.Contains(t, string(out), "\n#       --machine-type=ct6e-standard-4t \\\n#       --tpu-topology=4x4 \\\n")
		assert.Contains(t, string(out), "\n#       --max-nodes=4 \\\n#       --no-enable-autorepair\n")
		objs := parseGKE(t, out)
		checkMultiHost(t, objs, 4)
		assert.Equal(t, "job-1-headless", objs.svc.Name)
		checkFlexStart(t, objs.job, map[string]string{
			"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
			"cloud.google.com/gke-tpu-topology":    "4x4",
		}, "google.com/tpu", "4")
		c := gkeContainer(t, objs.job)
		assert.Equal(t, []string{"bash"}, c.Command)
		assert.Equal(t, []string{"-c", "python -c 'import jax'"}, c.Args)
		assert.Equal(t, []corev1.ContainerPort{{ContainerPort: 8471}, {ContainerPort: 8431}}, c.Ports)
		require.NotNil(t, c.SecurityContext)
		assert.True(t, *c.SecurityContext.Privileged)
		assert.Empty(t, gkeVolumes(t, objs.job))
	})
	t.Run("gpu", func(t *testing.T) {
		out, err := workload.Generate([]string{"--command=/opt/app/run", "--name=sweep", "--namespace=ml", "--image=app:1",
			"--accelerator=nvidia-h100-80gb", "--per_node=8", "--nodes=3", "--data_pvc="})
		require.NoError(t, err)
		assert.Contains(t, string(out), "\n#       --machine-type=a3-highgpu-8g \\\n")
		assert.Contains(t, string(out), "\n#       --max-nodes=3 \\\n#       --no-enable-autorepair\n")
		objs := parseGKE(t, out)
		checkMultiHost(t, objs, 3)
		assert.Equal(t, "ml", objs.job.Namespace)
		checkFlexStart(t, objs.job, map[string]string{"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}, "nvidia.com/gpu", "8")
		assert.Equal(t, map[string]string{"/work": "pvc beamgpu-work read-only=false"}, gkeVolumes(t, objs.job))
	})
}

// The manifests checked in under containers/k8s are what beamgpu-gke
// generates now (make k8s writes them), and they parse back strictly.
func TestGKECheckedInExamples(t *testing.T) {
	dir := "../containers/k8s"
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, len(workload.Examples()), "one file per example, no more")
	for _, ex := range workload.Examples() {
		t.Run(ex.File, func(t *testing.T) {
			onDisk, err := os.ReadFile(filepath.Join(dir, ex.File))
			require.NoError(t, err)
			want, err := workload.Generate(ex.Args)
			require.NoError(t, err)
			require.Equal(t, string(want), string(onDisk), "containers/k8s/%s is stale: run make k8s", ex.File)
			objs := parseGKE(t, onDisk)
			assert.Equal(t, "true", objs.job.Spec.Template.Spec.NodeSelector["cloud.google.com/gke-flex-start"])
			c := gkeContainer(t, objs.job)
			if strings.HasPrefix(c.Command[0], "/opt/beamgpu/bin/") {
				checkSingleHost(t, objs)
				assert.Contains(t, []string{"/opt/beamgpu/bin/fashion-train", "/opt/beamgpu/bin/landsat", "/opt/beamgpu/bin/fashion"}, c.Command[0])
				assert.Equal(t, workload.ExampleImage, c.Image)
				assert.Equal(t, "pvc beamgpu-work read-only=false", gkeVolumes(t, objs.job)["/work"])
			} else {
				checkMultiHost(t, objs, 4)
			}
		})
	}
}

// Impossible combinations are errors that say why, before anything is written.
func TestGKEImpossibleCombinations(t *testing.T) {
	base := []string{"--image=img:1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload=predict"}, `unknown workload "predict"; the workloads are train, landsat, fashion`},
		{[]string{"--workload=train", "--image="}, "image is empty"},
		{[]string{"--command=bash", "--name=j", "--accelerator=tpu-v6e-slice", "--topology=2x3"}, "topology 2x3 has 6 chips, which is not a multiple of 4 chips per node"},
		{[]string{"--command=bash", "--name=j", "--accelerator=tpu-v6e-slice", "--topology=4x4", "--per_node=3"}, "a TPU VM has 1, 4 or 8 chips (https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training-tpu)"},
		{[]string{"--command=bash", "--name=j", "--accelerator=tpu-v6e-slice", "--topology=4x4", "--per_node=8"}, "8-chip VMs make single-host slices only"},
		{[]string{"--command=bash", "--name=j", "--accelerator=tpu-v4-podslice", "--topology=4x4"}, "topology 4x4 has 2 dimensions; tpu-v4-podslice slices have 3 (AxBxC)"},
		{[]string{"--command=bash", "--name=j", "--accelerator=tpu-v6e-slice", "--topology=4x4", "--machine_type=ct6e-standard-8t"}, "machine type ct6e-standard-8t has 8 chips per VM, but the accelerator asks for 4 per node"},
		{[]string{"--command=bash", "--name=j", "--accelerator=tpu-v6e-slice", "--topology=4x4", "--nodes=2"}, "nodes 2 disagrees with topology 4x4 at 4 chips per node, which makes 4 nodes"},
		{[]string{"--workload=landsat", "--accelerator=nvidia-l4", "--per_node=3"}, "accelerator nvidia-l4: 3 GPUs per node is not a count its machine types have; a node has 1, 2, 4 or 8"},
		{[]string{"--workload=landsat", "--accelerator=nvidia-tesla-t4", "--machine_type=g2-standard-8"}, "machine type g2-standard-8 does not carry nvidia-tesla-t4"},
		{[]string{"--workload=landsat", "--accelerator=tpu-v6e-slice", "--topology=2x2"}, "the GPU executor is CUDA only"},
		{[]string{"--workload=train", "--nodes=2"}, "workload train runs as one process on one node"},
		{[]string{"--workload=train", "--work_pvc="}, "workload train needs a work volume (--work_pvc)"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := workload.Generate(append(base, tc.args...))
			assert.Nil(t, out)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
