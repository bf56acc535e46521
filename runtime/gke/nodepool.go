package gke

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/beamgpu/beamgpu/runtime/dataflow"
)

// NodePoolSpec describes a flex-start node pool for a Job's accelerators.
type NodePoolSpec struct {
	// Name, Cluster and Location (the cluster's region) are the flex-start TPU guide's
	// NODE_POOL_NAME, CLUSTER_NAME and LOCATION_NAME.
	Name     string
	Cluster  string
	Location string
	// NodeZones are the zones GKE creates the nodes in (NODE_ZONES); empty
	// leaves the flag out.
	NodeZones []string
	// MachineType is the nodes' machine type: for TPUs one like
	// ct6e-standard-4t, whose "-4t" is its chip count (GKE's flex-start TPU guide); for GPUs
	// one of the GPU's machine family (g2-standard-8 for nvidia-l4, ...).
	MachineType string
	// Accelerator is what the nodes carry; it decides --max-nodes.
	Accelerator Accelerator
	// GPUDriverVersion is gcloud's gpu-driver-version for GPU pools:
	// "default", "latest" or "disabled"; empty for "default".
	GPUDriverVersion string
}

// tpuMachine matches TPU machine types and captures their chips per VM, as in
// ct6e-standard-4t (4 chips, the flex-start TPU guide), ct5lp-hightpu-8t.
var tpuMachine = regexp.MustCompile(`^ct[0-9a-z]+-[a-z]+-([0-9]+)t$`)

var gpuDriverVersions = []string{"default", "latest", "disabled"}

// poolName is GKE's rule for node pool names (srcGKE).
var poolName = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$`)

// gpuMachineFits checks that machine type name carries a.PerNode GPUs of
// a.Type, by runtime/dataflow's machine type table. N1 shapes the table does
// not list (n1-standard-1, custom shapes) are accepted for the GPUs that
// attach to N1, as the Dataflow rules accept them.
func gpuMachineFits(name string, a Accelerator) error {
	g, _ := gpuType(a.Type)
	fits := gpuMachines(a.Type, a.PerNode)
	if slices.Contains(fits, name) {
		return nil
	}
	for _, m := range dataflow.MachineTypes() {
		if m.Name != name {
			continue
		}
		if counts := m.GPUs[a.Type]; len(counts) > 0 {
			return fmt.Errorf("machine type %s takes %s %s, not %d; machine types with %d: %s", name, fmtInts(counts), a.Type, a.PerNode, a.PerNode, strings.Join(fits, ", "))
		}
		return fmt.Errorf("machine type %s does not carry %s; machine types with %d: %s", name, a.Type, a.PerNode, strings.Join(fits, ", "))
	}
	if g.Family == dataflow.FamilyN1 && (strings.HasPrefix(name, "n1-") || strings.HasPrefix(name, "custom-")) {
		return nil
	}
	return fmt.Errorf("machine type %s does not carry %s (it goes with %s machine types); machine types with %d: %s", name, a.Type, strings.ToUpper(g.Family), a.PerNode, strings.Join(fits, ", "))
}

// NodePoolCommand returns the flex-start TPU guide's gcloud command that creates a flex-start
// node pool for spec, one argument per element:
//
//	gcloud container node-pools create NAME --cluster=... --location=...
//	  [--node-locations=Z1,Z2] --machine-type=M [--accelerator=type=T,count=N,gpu-driver-version=V]
//	  [--tpu-topology=T] --reservation-affinity=none --enable-autoscaling --flex-start
//	  --num-nodes=0 --min-nodes=0 --max-nodes=N [--no-enable-autorepair]
//
// the flex-start TPU guide's required flags: --enable-autoscaling with --num-nodes=0,
// --min-nodes=0 and --max-nodes set to the number of VMs the slice needs (the
// topology's chips over the chips per VM: 4x4 at 4 chips per VM is 4), so the
// pool scales up for the job and back to zero after it; and
// --reservation-affinity=none, since flex-start neither uses nor needs
// reservations. Like the guide's multi-host command, a pool of more than one
// node also gets --tpu-topology (TPUs) and --no-enable-autorepair; a
// single-host pool does not. The guide's multi-host example leaves out
// --min-nodes=0 though its text lists it as required: we always write it.
//
// GPU pools (not in the guide, which covers TPUs) get gcloud's
// --accelerator=type=T,count=N,gpu-driver-version=V and --max-nodes set to
// Accelerator.Nodes (1 where 0).
//
// Beyond the guide, the machine type must fit the accelerator: a TPU's must
// be its version's machine type with PerNode chips (ct6e-standard-4t for
// tpu-v6e-slice at 4; DefaultMachineType gives it), a GPU's must carry
// PerNode GPUs of the type by runtime/dataflow's machine type table (L4s
// come with G2 shapes, g2-standard-24 has 2; T4s attach to N1 shapes). The
// pool name follows GKE's rule: 1 to 40 lowercase letters, digits and
// hyphens, starting with a letter.
func NodePoolCommand(spec NodePoolSpec) ([]string, error) {
	var errs []error
	for _, f := range []struct{ name, value string }{
		{"node pool name", spec.Name}, {"cluster", spec.Cluster}, {"location", spec.Location}, {"machine type", spec.MachineType},
	} {
		if strings.TrimSpace(f.value) == "" {
			errs = append(errs, fmt.Errorf("%s is empty", f.name))
		}
	}
	if spec.Name != "" && !poolName.MatchString(spec.Name) {
		errs = append(errs, fmt.Errorf("node pool name %q: GKE wants 1 to 40 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen", spec.Name))
	}
	for _, z := range spec.NodeZones {
		if strings.TrimSpace(z) == "" || strings.Contains(z, ",") {
			errs = append(errs, fmt.Errorf("node zone %q is not a zone name", z))
		}
	}
	kind, nodes, err := spec.Accelerator.nodes()
	if err != nil {
		errs = append(errs, err)
	}
	driver := spec.GPUDriverVersion
	if driver == "" {
		driver = "default"
	}
	switch {
	case err != nil:
	case kind == TPU:
		m := tpuMachine.FindStringSubmatch(spec.MachineType)
		t, _ := lookupAccelerator(spec.Accelerator.Type)
		if m == nil {
			errs = append(errs, fmt.Errorf("machine type %q is not a TPU machine type (like ct6e-standard-4t) for accelerator %s", spec.MachineType, spec.Accelerator.Type))
		} else if chips, _ := strconv.Atoi(m[1]); chips != spec.Accelerator.PerNode {
			errs = append(errs, fmt.Errorf("machine type %s has %d chips per VM, but the accelerator asks for %d per node", spec.MachineType, chips, spec.Accelerator.PerNode))
		} else if want := fmt.Sprintf(t.machine, chips); spec.MachineType != want {
			errs = append(errs, fmt.Errorf("machine type %s is not a machine type of %s, whose %d-chip VMs are %s", spec.MachineType, t.name, chips, want))
		}
		if spec.GPUDriverVersion != "" {
			errs = append(errs, fmt.Errorf("gpu driver version %q applies to GPU node pools, not to TPU %s", spec.GPUDriverVersion, spec.Accelerator.Type))
		}
	case kind == GPU:
		if tpuMachine.MatchString(spec.MachineType) {
			errs = append(errs, fmt.Errorf("machine type %s is a TPU machine type, but accelerator %s is a GPU", spec.MachineType, spec.Accelerator.Type))
		} else if err := gpuMachineFits(spec.MachineType, spec.Accelerator); err != nil {
			errs = append(errs, err)
		}
		if !slices.Contains(gpuDriverVersions, driver) {
			errs = append(errs, fmt.Errorf("gpu driver version %q is not one of %s", driver, strings.Join(gpuDriverVersions, ", ")))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	cmd := []string{
		"gcloud", "container", "node-pools", "create", spec.Name,
		"--cluster=" + spec.Cluster,
		"--location=" + spec.Location,
	}
	if len(spec.NodeZones) > 0 {
		cmd = append(cmd, "--node-locations="+strings.Join(spec.NodeZones, ","))
	}
	cmd = append(cmd, "--machine-type="+spec.MachineType)
	if kind == GPU {
		cmd = append(cmd, fmt.Sprintf("--accelerator=type=%s,count=%d,gpu-driver-version=%s", spec.Accelerator.Type, spec.Accelerator.PerNode, driver))
	}
	if kind == TPU && nodes > 1 {
		cmd = append(cmd, "--tpu-topology="+spec.Accelerator.Topology)
	}
	cmd = append(cmd,
		"--reservation-affinity=none",
		"--enable-autoscaling",
		"--flex-start",
		"--num-nodes=0",
		"--min-nodes=0",
		"--max-nodes="+strconv.Itoa(nodes),
	)
	if nodes > 1 {
		cmd = append(cmd, "--no-enable-autorepair")
	}
	return cmd, nil
}
