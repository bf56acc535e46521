package workload

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

const usageHead = `beamgpu-gke writes the Kubernetes manifests that run a beamgpu workload as a
batch Job on GKE flex-start nodes (GKE's flex-start TPU guide), and the gcloud command that
creates the flex-start node pool for it.

Usage:
  beamgpu-gke --workload=train|landsat|fashion --image=IMAGE [flags] [-- workload flags]
  beamgpu-gke --command=CMD --name=NAME --image=IMAGE [flags] [-- arguments]
  beamgpu-gke --examples=DIR

The manifests (YAML for kubectl apply -f) go to stdout, or to --output. Their
first lines are comments: the command line that made them, and the gcloud
command of their node pool (--max-nodes from the TPU topology and the chips
per VM: 4x4 = 16 chips at 4 per VM makes 4 nodes). With --output, that
gcloud command is also printed. Invalid combinations (a GPU count no machine
type has, a topology that does not divide into VMs, a machine type that does
not fit the accelerator, a workload on a TPU) are errors, all reported.

Workloads: the worker image's binaries (its ENTRYPOINT, Beam's boot loader,
is replaced), on one node with the accelerator; pipelines run on Beam's
prism runner inside the pod. NAME is the Job's name (--name).
  train    ` + BinDir + `/fashion-train --data_dir=` + FashionData + `
             --checkpoint_dir=` + WorkMount + `/NAME/checkpoints --out=` + WorkMount + `/NAME/` + ModelFile + `
           (the trainer runs on the node's CPUs: it has no GPU path yet)
  landsat  ` + BinDir + `/landsat --backend=gpu --output=` + WorkMount + `/NAME
             (scenes: -- --input=` + DataMount + `/...; without it the embedded crop)
  fashion  ` + BinDir + `/fashion --backend=gpu --data_dir=` + FashionData + ` --output=` + WorkMount + `/NAME
Flags after -- follow these, so they win where they repeat one (the last
value of a flag counts): -- --epochs=10, -- --backend=auto.

Volumes:
  --work_pvc  a PersistentVolumeClaim, read-write at ` + WorkMount + `: checkpoints, model and
              outputs. The single-host Job restarts a failed pod (restartPolicy
              OnFailure), and flex-start may take a node back; the trainer then
              resumes from its newest valid checkpoint on this volume instead
              of starting over.
  --data_pvc  a PersistentVolumeClaim, read-only at ` + DataMount + `: the input data, such as
              fashion-mnist/ (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
              t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz) and Landsat scenes.
  The pipelines also get a memory-backed ` + ShmMount + ` (the GPU executor's batches
  move through it; a container's own is 64 MiB).
  Both claims must exist in the Job's namespace; see containers/k8s/README.md.

Flags:
`

// flags are the command line's values.
type flags struct {
	o        Options
	zones    string
	output   string
	examples string
}

func newFlagSet(f *flags) *flag.FlagSet {
	fs := flag.NewFlagSet("beamgpu-gke", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	o := &f.o
	fs.StringVar(&o.Workload, "workload", "", "the workload: "+strings.Join(Names(), ", "))
	fs.StringVar(&o.Command, "command", "", "instead of --workload: the container's command (arguments after --), for another program or image")
	fs.StringVar(&o.Image, "image", "", "container image (required): the beamgpu worker image for the workloads")
	fs.StringVar(&o.Name, "name", "", "the Job's name, a DNS label (empty: fashion-train, landsat or fashion; required with --command)")
	fs.StringVar(&o.Namespace, "namespace", "", "the Job's namespace (empty: kubectl's current one)")
	fs.StringVar(&o.Accelerator.Type, "accelerator", DefaultAccelerator, "GKE accelerator type: a GPU (nvidia-l4, nvidia-tesla-t4, nvidia-tesla-a100, ...) or a TPU (tpu-v6e-slice, tpu-v5-lite-podslice, ...; --command only)")
	fs.IntVar(&o.Accelerator.PerNode, "per_node", 0, "accelerators per node, which the pod requests (requests = limits): GPUs, or TPU chips per VM (1, 4 or 8); 0: 1 GPU or 4 TPU chips")
	fs.StringVar(&o.Accelerator.Topology, "topology", "", "TPU slice topology, AxB or AxBxC (4x4 at 4 chips per VM: 4 nodes, a multi-host Indexed Job)")
	fs.IntVar(&o.Accelerator.Nodes, "nodes", 0, "GPU nodes of a multi-host Indexed Job (--command only; 0: 1)")
	fs.StringVar(&o.WorkPVC, "work_pvc", DefaultWorkPVC, "PersistentVolumeClaim mounted read-write at "+WorkMount+" (empty: none; the workloads need it)")
	fs.StringVar(&o.DataPVC, "data_pvc", DefaultDataPVC, "PersistentVolumeClaim mounted read-only at "+DataMount+" (empty: none; train needs it)")
	fs.StringVar(&o.Pool, "pool", "", "node pool name (empty: flex-<accelerator>[-<topology>])")
	fs.StringVar(&o.Cluster, "cluster", DefaultCluster, "the node pool's cluster")
	fs.StringVar(&o.Location, "location", DefaultLocation, "the cluster's location (region)")
	fs.StringVar(&f.zones, "node_zones", "", "comma-separated zones of the node pool's nodes (empty: the cluster's)")
	fs.StringVar(&o.MachineType, "machine_type", "", "node machine type (empty: the TPU version's VM with --per_node chips, or the first machine type that carries --per_node of the GPU)")
	fs.StringVar(&o.GPUDriverVersion, "gpu_driver_version", "", "GPU driver GKE installs: default, latest or disabled (empty: default)")
	fs.StringVar(&f.output, "output", "", "write the manifests to this file instead of stdout, and print the node pool command")
	fs.StringVar(&f.examples, "examples", "", "write the checked-in examples (containers/k8s: make k8s) to this directory, and nothing else")
	return fs
}

// parse reads the command line: flags, then the workload's after "--".
func parse(args []string) (flags, error) {
	var f flags
	own, pass := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		own, pass = args[:i], args[i+1:]
	}
	fs := newFlagSet(&f)
	if err := fs.Parse(own); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected argument %q: the workload's flags go after --", fs.Arg(0))
	}
	f.o.Args = pass
	if f.zones != "" {
		f.o.NodeZones = strings.Split(f.zones, ",")
	}
	if f.examples != "" {
		var others []string
		fs.Visit(func(fl *flag.Flag) {
			if fl.Name != "examples" {
				others = append(others, "--"+fl.Name)
			}
		})
		if len(others) > 0 || pass != nil {
			return f, fmt.Errorf("--examples takes no other flags or arguments (got %s)", strings.Join(append(others, pass...), " "))
		}
	}
	return f, nil
}

// Generate returns what the command writes for args (its arguments, without
// the program name): the manifests as YAML, with the comment lines that give
// the command line and the node pool command.
func Generate(args []string) ([]byte, error) {
	f, err := parse(args)
	if err != nil {
		return nil, err
	}
	if f.examples != "" {
		return nil, errors.New("--examples writes files; Generate does not")
	}
	m, err := Build(f.o)
	if err != nil {
		return nil, err
	}
	return m.YAML(args)
}

// Main is the command beamgpu-gke: it runs with args (without the program
// name) and returns the exit status: 0, 1 for invalid options, 2 for a
// command line that does not parse.
func Main(args []string, stdout, stderr io.Writer) int {
	f, err := parse(args)
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "beamgpu-gke: %v\nRun beamgpu-gke --help for the flags.\n", err)
		return 2
	}
	if f.examples != "" {
		if err := writeExamples(f.examples, stdout); err != nil {
			fmt.Fprintf(stderr, "beamgpu-gke: %v\n", err)
			return 1
		}
		return 0
	}
	m, err := Build(f.o)
	var data []byte
	if err == nil {
		data, err = m.YAML(args)
	}
	if err != nil {
		fmt.Fprintf(stderr, "beamgpu-gke: %v\n", strings.ReplaceAll(err.Error(), "\n", "\nbeamgpu-gke: "))
		return 1
	}
	if f.output == "" {
		if _, err := stdout.Write(data); err != nil {
			fmt.Fprintf(stderr, "beamgpu-gke: %v\n", err)
			return 1
		}
		return 0
	}
	if err := os.WriteFile(f.output, data, 0o644); err != nil {
		fmt.Fprintf(stderr, "beamgpu-gke: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n\nCreate the flex-start node pool (once):\n%s\n\nThen run the Job:\nkubectl apply -f %s\n",
		f.output, FormatCommand(m.NodePool), ShellQuote(f.output))
	return 0
}

func usage(w io.Writer) {
	fmt.Fprint(w, usageHead)
	var f flags
	newFlagSet(&f).VisitAll(func(fl *flag.Flag) {
		def := ""
		if fl.DefValue != "" && fl.DefValue != "0" {
			def = fmt.Sprintf(" (default %s)", fl.DefValue)
		}
		fmt.Fprintf(w, "  --%s%s\n      %s\n", fl.Name, def, fl.Usage)
	})
}

// writeExamples writes every example into dir.
func writeExamples(dir string, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, ex := range Examples() {
		data, err := Generate(ex.Args)
		if err != nil {
			return fmt.Errorf("example %s: %w", ex.File, err)
		}
		p := filepath.Join(dir, ex.File)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	return nil
}
