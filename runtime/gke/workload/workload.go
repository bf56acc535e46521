package workload

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/beamgpu/beamgpu/runtime/gke"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The workloads: the project's binaries in the worker image.
const (
	Train   = "train"
	Landsat = "landsat"
	Fashion = "fashion"
)

// Paths in the worker image and in the pod.
const (
	// BinDir holds the worker image's binaries: landsat, fashion and
	// fashion-train (pipelines/landsat, pipelines/fashion and
	// pipelines/fashion/train), beside the GPU executor.
	BinDir = "/opt/beamgpu/bin"
	// WorkMount is where the work volume (Options.WorkPVC) is mounted, read
	// and write; each Job writes under WorkMount/<job name>.
	WorkMount = "/work"
	// DataMount is where the data volume (Options.DataPVC) is mounted, read
	// only.
	DataMount = "/data"
	// FashionData is the Fashion-MNIST directory on the data volume: the
	// four *-ubyte.gz files of the data set.
	FashionData = DataMount + "/fashion-mnist"
	// ShmMount is the pipelines' shared memory: the GPU executor moves
	// batches through files in /dev/shm, which a container gets as 64 MiB of
	// tmpfs unless the pod mounts a memory-backed emptyDir there.
	ShmMount = "/dev/shm"
	// ModelFile is the trainer's model file, under its work directory.
	ModelFile = "mlp-784-256-128-10.bgmlp"
)

// Volume names in the pod.
const (
	volWork = "work"
	volData = "data"
	volShm  = "dshm"
)

// Defaults of the command's flags.
const (
	DefaultWorkPVC     = "beamgpu-work"
	DefaultDataPVC     = "beamgpu-data"
	DefaultAccelerator = "nvidia-l4"
	// DefaultCluster and DefaultLocation are the flex-start TPU guide's placeholders, for
	// node pool commands written before the cluster is known.
	DefaultCluster  = "CLUSTER_NAME"
	DefaultLocation = "LOCATION_NAME"
	// defaultTPUChips is the chips per VM of the flex-start TPU guide's ct6e-standard-4t.
	defaultTPUChips = 4
)

// def is one workload.
type def struct {
	name, bin, job, about string
	// args returns the flags the Job passes, before the user's.
	args func(o Options, dir string) []string
	// pipeline: a Beam pipeline (on prism in the pod) whose GPU steps go
	// through the GPU executor: it gets --backend=gpu and a /dev/shm volume.
	pipeline bool
	// needsData: the workload cannot run without the data volume.
	needsData bool
}

var workloads = []def{
	{
		name: Train, bin: BinDir + "/fashion-train", job: "fashion-train",
		about:     "the Fashion-MNIST trainer (pipelines/fashion/train): checkpoints and model on the work volume, data set from the data volume",
		needsData: true,
		args: func(o Options, dir string) []string {
			return []string{"--data_dir=" + FashionData, "--checkpoint_dir=" + dir + "/checkpoints", "--out=" + dir + "/" + ModelFile}
		},
	},
	{
		name: Landsat, bin: BinDir + "/landsat", job: "landsat",
		about:    "the Landsat pipeline (pipelines/landsat) on prism in the pod: outputs on the work volume; scenes from the data volume with -- --input=/data/...",
		pipeline: true,
		args: func(o Options, dir string) []string {
			return []string{"--backend=gpu", "--output=" + dir}
		},
	},
	{
		name: Fashion, bin: BinDir + "/fashion", job: "fashion",
		about:    "the Fashion-MNIST pipeline (pipelines/fashion) on prism in the pod: outputs on the work volume; the training set (--model=knn) from the data volume",
		pipeline: true,
		args: func(o Options, dir string) []string {
			a := []string{"--backend=gpu"}
			if o.DataPVC != "" {
				a = append(a, "--data_dir="+FashionData)
			}
			return append(a, "--output="+dir)
		},
	},
}

func lookup(name string) (def, bool) {
	i := slices.IndexFunc(workloads, func(d def) bool { return d.name == name })
	if i < 0 {
		return def{}, false
	}
	return workloads[i], true
}

// Names returns the workloads' names.
func Names() []string {
	out := make([]string, len(workloads))
	for i, d := range workloads {
		out[i] = d.name
	}
	return out
}

// Options describe a batch Job and its node pool.
type Options struct {
	// Workload is one of Train, Landsat and Fashion; or empty, with Command.
	Workload string
	// Command is the container's command for a program that is not one of
	// the workloads (its image's path or a name on its PATH).
	Command string
	// Args come after the workload's own flags (so they win where they
	// repeat one: Go's flag package keeps the last value), or are Command's
	// arguments.
	Args []string
	// Name is the Job's name (a DNS label); empty for the workload's
	// (fashion-train, landsat, fashion). Needed with Command.
	Name      string
	Namespace string
	// Image is the container image: the beamgpu worker image for the
	// workloads. Its ENTRYPOINT (Beam's boot loader) is replaced by the
	// workload's binary.
	Image string
	// Accelerator is what each node carries. PerNode 0 means 1 GPU, or 4
	// TPU chips (the flex-start TPU guide's ct6e-standard-4t). The workloads need a GPU on
	// one node: the GPU executor is CUDA only, and each workload is one
	// process.
	Accelerator gke.Accelerator
	// WorkPVC is the PersistentVolumeClaim mounted read-write at WorkMount:
	// checkpoints, models and outputs. The workloads need it.
	WorkPVC string
	// DataPVC is the PersistentVolumeClaim mounted read-only at DataMount:
	// the training data. Empty mounts none (the trainer needs it).
	DataPVC string
	// Pool, Cluster, Location, NodeZones, MachineType and GPUDriverVersion
	// are the node pool's (gke.NodePoolSpec). Empty Pool is
	// "flex-<accelerator>[-<topology>]", empty Cluster and Location are
	// the flex-start TPU guide's placeholders CLUSTER_NAME and LOCATION_NAME, empty
	// MachineType is gke.DefaultMachineType's.
	Pool, Cluster, Location string
	NodeZones               []string
	MachineType             string
	GPUDriverVersion        string
}

// Manifests are a Job, its headless Service where it is multi-host, and the
// gcloud command that creates the flex-start node pool it runs on.
type Manifests struct {
	Job      *batchv1.Job
	Service  *corev1.Service
	NodePool []string
}

// Build validates o and returns its manifests. Every error is reported, not
// only the first.
func Build(o Options) (*Manifests, error) {
	var errs []error
	d, known := lookup(o.Workload)
	switch {
	case o.Workload != "" && o.Command != "":
		errs = append(errs, errors.New("--workload and --command exclude each other"))
	case o.Workload == "" && strings.TrimSpace(o.Command) == "":
		errs = append(errs, fmt.Errorf("no workload: give --workload (%s) or --command", strings.Join(Names(), ", ")))
	case o.Workload != "" && !known:
		errs = append(errs, fmt.Errorf("unknown workload %q; the workloads are %s", o.Workload, strings.Join(Names(), ", ")))
	}
	a := o.Accelerator
	kind, kindOK := a.Kind()
	if a.PerNode == 0 {
		a.PerNode = 1
		if kind == gke.TPU {
			a.PerNode = defaultTPUChips
		}
	}
	name := o.Name
	if name == "" {
		if o.Command != "" {
			errs = append(errs, errors.New("--name is needed with --command"))
		}
		name = d.job
	}
	if name == "" && len(errs) > 0 {
		// No name to check because of an error above: check the rest.
		name = "unnamed"
	}
	if known {
		if kindOK && kind == gke.TPU {
			errs = append(errs, fmt.Errorf("workload %s on TPU %s: the GPU executor is CUDA only, so on a TPU node the workload would run its CPU code and leave the TPU idle; use a GPU accelerator, or --command for a TPU program", d.name, a.Type))
		}
		if a.Nodes > 1 {
			errs = append(errs, fmt.Errorf("workload %s runs as one process on one node (pipelines on prism inside the pod); --nodes=%d would run %d independent copies", d.name, a.Nodes, a.Nodes))
		}
		if o.WorkPVC == "" {
			errs = append(errs, fmt.Errorf("workload %s needs a work volume (--work_pvc): without one its outputs, and the trainer's checkpoints, go with the pod", d.name))
		}
		if d.needsData && o.DataPVC == "" {
			errs = append(errs, fmt.Errorf("workload %s reads Fashion-MNIST from the data volume (--data_pvc), at %s", d.name, FashionData))
		}
	}
	for _, pvc := range []struct{ flag, name string }{{"work_pvc", o.WorkPVC}, {"data_pvc", o.DataPVC}} {
		if pvc.name == "" {
			continue
		}
		for _, e := range validation.IsDNS1123Subdomain(pvc.name) {
			errs = append(errs, fmt.Errorf("--%s %q: %s", pvc.flag, pvc.name, e))
		}
	}
	if o.WorkPVC != "" && o.WorkPVC == o.DataPVC {
		errs = append(errs, fmt.Errorf("--work_pvc and --data_pvc are both %q: the data volume is mounted read-only, the work volume read-write", o.WorkPVC))
	}

	spec := gke.JobSpec{Name: name, Namespace: o.Namespace, Image: o.Image, Accelerator: a}
	if known {
		dir := WorkMount + "/" + name
		spec.Command = []string{d.bin}
		spec.Args = append(d.args(o, dir), o.Args...)
	} else {
		spec.Command = []string{o.Command}
		spec.Args = o.Args
	}
	multi := a.Nodes > 1
	if kindOK && kind == gke.TPU {
		if n, err := gke.NodeCount(a.Topology, a.PerNode); err == nil && n > 1 {
			multi = true
		}
	}
	m := &Manifests{}
	var err error
	if multi {
		m.Job, m.Service, err = gke.MultiHostJob(spec)
	} else {
		m.Job, err = gke.SingleHostJob(spec)
	}
	if err != nil {
		errs = append(errs, err)
	}

	pool := gke.NodePoolSpec{
		Name: o.Pool, Cluster: o.Cluster, Location: o.Location, NodeZones: o.NodeZones,
		MachineType: o.MachineType, Accelerator: a, GPUDriverVersion: o.GPUDriverVersion,
	}
	if pool.Name == "" {
		pool.Name = "flex-" + a.Type
		if a.Topology != "" {
			pool.Name += "-" + a.Topology
		}
	}
	if pool.Cluster == "" {
		pool.Cluster = DefaultCluster
	}
	if pool.Location == "" {
		pool.Location = DefaultLocation
	}
	// An invalid accelerator is the Job's error already: no pool then.
	if machine, accErr := gke.DefaultMachineType(a); accErr != nil {
		if err == nil {
			errs = append(errs, accErr)
		}
	} else {
		if pool.MachineType == "" {
			pool.MachineType = machine
		}
		if m.NodePool, err = gke.NodePoolCommand(pool); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	pod := &m.Job.Spec.Template.Spec
	c := &pod.Containers[0]
	if o.WorkPVC != "" {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: volWork, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: o.WorkPVC},
		}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volWork, MountPath: WorkMount})
	}
	if o.DataPVC != "" {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: volData, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: o.DataPVC, ReadOnly: true},
		}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volData, MountPath: DataMount, ReadOnly: true})
	}
	if known && d.pipeline {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: volShm, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory},
		}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volShm, MountPath: ShmMount})
	}
	return m, nil
}

// Objects returns the manifests' objects in the flex-start TPU guide's order: the Service
// (multi-host only), then the Job.
func (m *Manifests) Objects() []runtime.Object {
	if m.Service != nil {
		return []runtime.Object{m.Service, m.Job}
	}
	return []runtime.Object{m.Job}
}

// YAML returns the manifests as one YAML stream for kubectl apply -f,
// preceded by comment lines: the command line that made them (invocation,
// the command's arguments; none where nil) and the gcloud command that
// creates the node pool.
func (m *Manifests) YAML(invocation []string) ([]byte, error) {
	body, err := gke.Marshal(m.Objects()...)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if invocation != nil {
		b.WriteString("# Generated by beamgpu-gke (runtime/gke/cmd/beamgpu-gke):\n")
		b.WriteString("#   " + ShellJoin(append([]string{"beamgpu-gke"}, invocation...)) + "\n#\n")
	}
	nodes := "1 node"
	if n := m.Job.Spec.Parallelism; n != nil && *n > 1 {
		nodes = fmt.Sprintf("%d nodes", *n)
	}
	fmt.Fprintf(&b, "# The flex-start node pool it runs on (create it once; it scales from 0 to %s for the Job, and back):\n", nodes)
	for _, l := range strings.Split(FormatCommand(m.NodePool), "\n") {
		b.WriteString("#   " + l + "\n")
	}
	b.WriteString("# Then: kubectl apply -f FILE\n")
	b.Write(body)
	return b.Bytes(), nil
}

// FormatCommand writes a command as the flex-start TPU guide does: the command and its
// positional arguments on the first line, then one flag a line, each line
// but the last ending in a backslash; arguments shell-quoted where needed.
func FormatCommand(argv []string) string {
	i := slices.IndexFunc(argv, func(a string) bool { return strings.HasPrefix(a, "-") })
	if i < 0 {
		return ShellJoin(argv)
	}
	lines := []string{ShellJoin(argv[:i])}
	for _, a := range argv[i:] {
		lines = append(lines, "    "+ShellQuote(a))
	}
	return strings.Join(lines, " \\\n")
}

// ShellJoin joins args, quoted for a POSIX shell where needed.
func ShellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes s for a POSIX shell: as it is where it holds only
// characters no shell treats specially, else in single quotes.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=+:,./@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
