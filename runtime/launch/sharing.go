package launch

import (
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beamgpu/beamgpu/runtime/dataflow"
)

// sdkProcesses works out how many SDK processes share a GPU worker, and
// says why. Dataflow starts one SDK container per vCPU for an environment
// without Beam's multi-core capability (Python's; Dataflow's GPU best practices, https://cloud.google.com/dataflow/docs/gpu/develop-with-gpus), and one per
// worker for an environment with it, which Go's has
// (beam:protocol:multi_core_bundle_processing:v1; Beam's dataflowlib maps it
// to use_single_core_per_container=false). The experiment
// no_use_multiple_sdk_containers also makes it one.
func sdkProcesses(model *pipepb.Pipeline, machine string, plan *Plan) (int, string) {
	var gpuEnvs []*pipepb.Environment
	for _, e := range plan.Environments {
		if e.Hints["accelerator"] != "" || plan.Mode == ModeWholePipeline {
			gpuEnvs = append(gpuEnvs, model.GetComponents().GetEnvironments()[e.ID])
		}
	}
	multiCore := true
	for _, env := range gpuEnvs {
		if !slices.Contains(env.GetCapabilities(), graphx.URNMultiCore) {
			multiCore = false
		}
	}
	if multiCore {
		return 1, "one Go SDK process per worker: its environment is multi-core, so its bundles share one executor"
	}
	for _, e := range splitList(flagValue("experiments")) {
		if e == dataflow.ExperimentNoMultipleSDKContainers {
			return 1, "no_use_multiple_sdk_containers: one SDK process per worker"
		}
	}
	if m, ok := dataflow.LookupMachine(machine); ok && m.VCPUs > 0 {
		return m.VCPUs, fmt.Sprintf("one SDK process per vCPU of %s", machine)
	}
	return 1, "the number of SDK processes per worker is not known for this machine type; pass --gpu_processes"
}
