package gke

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TPU ports of the flex-start TPU guide's multi-host manifest.
const (
	// PortTPU is the port TPU VMs talk to each other on.
	PortTPU = 8471
	// PortTPUMetrics exports the TPU runtime's metrics, where supported.
	PortTPUMetrics = 8431
)

// nodeSelector returns the flex-start and accelerator node selector (the flex-start TPU guide
// for TPUs; the GKE GPU label for GPUs).
func nodeSelector(kind Kind, a Accelerator) map[string]string {
	sel := map[string]string{LabelFlexStart: "true"}
	if kind == TPU {
		sel[LabelTPUAccelerator] = a.Type
		sel[LabelTPUTopology] = a.Topology
	} else {
		sel[LabelGPUAccelerator] = a.Type
	}
	return sel
}

// container returns the job's container, requesting PerNode accelerators
// with requests equal to limits, as the flex-start TPU guide does.
func container(kind Kind, s JobSpec) corev1.Container {
	name := corev1.ResourceName(ResourceGPU)
	if kind == TPU {
		name = ResourceTPU
	}
	qty := resource.NewQuantity(int64(s.Accelerator.PerNode), resource.DecimalSI)
	return corev1.Container{
		Name:    s.Name,
		Image:   s.Image,
		Command: s.Command,
		Args:    s.Args,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{name: *qty},
			Limits:   corev1.ResourceList{name: qty.DeepCopy()},
		},
	}
}

// SingleHostJob returns the flex-start TPU guide's single-host Job: one pod on one flex-start
// node with the accelerator, restartPolicy OnFailure and, like the guide, no
// backoffLimit (Kubernetes' default applies). The result is plain data:
// add volumes, env or a service account to it before marshalling.
func SingleHostJob(spec JobSpec) (*batchv1.Job, error) {
	kind, _, err := spec.validate(false)
	if err != nil {
		return nil, err
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: spec.Namespace},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					NodeSelector:  nodeSelector(kind, spec.Accelerator),
					Containers:    []corev1.Container{container(kind, spec)},
					RestartPolicy: corev1.RestartPolicyOnFailure,
				},
			},
		},
	}, nil
}

// MultiHostJob returns the flex-start TPU guide's multi-host manifests: an Indexed Job with
// one pod per node (completions = parallelism = node count, computed from the
// TPU topology or given as Accelerator.Nodes for GPUs), backoffLimit 0 and
// restartPolicy Never, whose pods join a headless Service (clusterIP None,
// selecting job-name=<Name>) through their subdomain, so each pod has a
// stable DNS name <Name>-<index>.<service>.
//
// For TPUs the container also opens the flex-start TPU guide's ports 8471 (TPU VMs talk to
// each other) and 8431 (TPU runtime metrics) and runs privileged, as the guide
// shows.
func MultiHostJob(spec JobSpec) (*batchv1.Job, *corev1.Service, error) {
	kind, n, err := spec.validate(true)
	if err != nil {
		return nil, nil, err
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: spec.serviceName(), Namespace: spec.Namespace},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			// The Job controller labels its pods job-name=<job name>.
			Selector: map[string]string{"job-name": spec.Name},
		},
	}
	c := container(kind, spec)
	if kind == TPU {
		c.Ports = []corev1.ContainerPort{{ContainerPort: PortTPU}, {ContainerPort: PortTPUMetrics}}
		c.SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true)}
	}
	mode := batchv1.IndexedCompletion
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: spec.Namespace},
		Spec: batchv1.JobSpec{
			BackoffLimit:   ptrTo[int32](0),
			Completions:    ptrTo(int32(n)),
			Parallelism:    ptrTo(int32(n)),
			CompletionMode: &mode,
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					Subdomain:     svc.Name,
					RestartPolicy: corev1.RestartPolicyNever,
					NodeSelector:  nodeSelector(kind, spec.Accelerator),
					Containers:    []corev1.Container{c},
				},
			},
		},
	}
	return job, svc, nil
}

func ptrTo[T any](v T) *T { return &v }
