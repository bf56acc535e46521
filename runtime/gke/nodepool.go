package gke

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// NodePoolSpec describes a flex-start node pool for a Job's accelerators.
type NodePoolSpec struct {
	// Name, Cluster and Location (the cluster's region) are seed 003's
	// NODE_POOL_NAME, CLUSTER_NAME and LOCATION_NAME.
	Name     string
	Cluster  string
	Location string
	// NodeZones are the zones GKE creates the nodes in (NODE_ZONES); empty
	// leaves the flag out.
	NodeZones []string
	// MachineType is the nodes' machine type: for TPUs one like
	// ct6e-standard-4t, whose "-4t" is its chip count (seed 003); for GPUs
	// one of the GPU's machine family (g2-standard-8 for nvidia-l4, ...).
	MachineType string
	// Accelerator is what the nodes carry; it decides --max-nodes.
	Accelerator Accelerator
	// GPUDriverVersion is gcloud's gpu-driver-version for GPU pools:
	// "default", "latest" or "disabled"; empty for "default".
	GPUDriverVersion string
}

// tpuMachine matches TPU machine types and captures their chips per VM, as in
// ct6e-standard-4t (4 chips, seed 003), ct5lp-hightpu-8t.
var tpuMachine = regexp.MustCompile(`^ct[0-9a-z]+-[a-z]+-([0-9]+)t$`)

var gpuDriverVersions = []string{"default", "latest", "disabled"}

// NodePoolCommand returns seed 003's gcloud command that creates a flex-start
// node pool for spec, one argument per element:
//
//	gcloud container node-pools create NAME --cluster=... --location=...
//	  [--node-locations=Z1,Z2] --machine-type=M [--accelerator=type=T,count=N,gpu-driver-version=V]
//	  [--tpu-topology=T] --reservation-affinity=none --enable-autoscaling --flex-start
//	  --num-nodes=0 --min-nodes=0 --max-nodes=N [--no-enable-autorepair]
//
// Seed 003's required flags: --enable-autoscaling with --num-nodes=0,
// --min-nodes=0 and --max-nodes set to the number of VMs the slice needs (the
// topology's chips over the chips per VM: 4x4 at 4 chips per VM is 4), so the
// pool scales up for the job and back to zero after it; and
// --reservation-affinity=none, since flex-start neither uses nor needs
// reservations. Like the seed's multi-host command, a pool of more than one
// node also gets --tpu-topology (TPUs) and --no-enable-autorepair; a
// single-host pool does not. The seed's multi-host example leaves out
// --min-nodes=0 though its text lists it as required: we always write it.
//
// GPU pools (not in the seed, which covers TPUs) get gcloud's
// --accelerator=type=T,count=N,gpu-driver-version=V and --max-nodes set to
// Accelerator.Nodes (1 where 0).
func NodePoolCommand(spec NodePoolSpec) ([]string, error) {
	var errs []error
	for _, f := range []struct{ name, value string }{
		{"node pool name", spec.Name}, {"cluster", spec.Cluster}, {"location", spec.Location}, {"machine type", spec.MachineType},
	} {
		if strings.TrimSpace(f.value) == "" {
			errs = append(errs, fmt.Errorf("%s is empty", f.name))
		}
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
		if m == nil {
			errs = append(errs, fmt.Errorf("machine type %q is not a TPU machine type (like ct6e-standard-4t) for accelerator %s", spec.MachineType, spec.Accelerator.Type))
		} else if chips, _ := strconv.Atoi(m[1]); chips != spec.Accelerator.PerNode {
			errs = append(errs, fmt.Errorf("machine type %s has %d chips per VM, but the accelerator asks for %d per node", spec.MachineType, chips, spec.Accelerator.PerNode))
		}
		if spec.GPUDriverVersion != "" {
			errs = append(errs, fmt.Errorf("gpu driver version %q applies to GPU node pools, not to TPU %s", spec.GPUDriverVersion, spec.Accelerator.Type))
		}
	case kind == GPU:
		if tpuMachine.MatchString(spec.MachineType) {
			errs = append(errs, fmt.Errorf("machine type %s is a TPU machine type, but accelerator %s is a GPU", spec.MachineType, spec.Accelerator.Type))
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
