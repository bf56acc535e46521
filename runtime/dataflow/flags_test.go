package dataflow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{
			name: "zero config: Dataflow's defaults",
			cfg:  Config{},
			want: nil,
		},
		{
			name: "whole-pipeline T4",
			cfg: Config{
				Region: "us-central1", MachineType: "n1-standard-8",
				WorkerAccelerator: gpu("nvidia-tesla-t4", 1),
				ContainerImage:    "us-docker.pkg.dev/p/beamgpu/worker:1",
			},
			want: []string{
				"--region=us-central1",
				"--worker_machine_type=n1-standard-8",
				"--sdk_container_image=us-docker.pkg.dev/p/beamgpu/worker:1",
				"--dataflow_service_options=worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx",
			},
		},
		{
			name: "MPS on an L4, the MPS page's form with the L4's default driver",
			cfg: Config{
				Region: "europe-west4", MachineType: "g2-standard-16",
				WorkerAccelerator: driver(mps("nvidia-l4", 1), ""),
				ServiceOptions:    []string{"enable_google_cloud_profiler"},
				MinRAMBytes:       32 * gibBytes,
			},
			want: []string{
				"--region=europe-west4",
				"--worker_machine_type=g2-standard-16",
				"--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps,enable_google_cloud_profiler",
				"--resource_hints=min_ram=34359738368",
			},
		},
		{
			name: "one SDK process, thread cap, experiments deduplicated",
			cfg: Config{
				Region: "us-east1", MachineType: "n1-highmem-8",
				WorkerAccelerator:            driver(gpu("nvidia-tesla-v100", 1), "latest"),
				NumberOfWorkerHarnessThreads: 1,
				NoUseMultipleSDKContainers:   true,
				Experiments:                  []string{"use_runner_v2", "no_use_multiple_sdk_containers", "use_runner_v2"},
				ServiceOptions:               []string{"enable_google_cloud_profiler"},
			},
			want: []string{
				"--region=us-east1",
				"--worker_machine_type=n1-highmem-8",
				"--number_of_worker_harness_threads=1",
				"--experiments=use_runner_v2,no_use_multiple_sdk_containers",
				"--dataflow_service_options=worker_accelerator=type:nvidia-tesla-v100;count:1;install-nvidia-driver:latest,enable_google_cloud_profiler",
			},
		},
		{
			name: "Prime with right fitting and FlexRS left out: no machine type",
			cfg: Config{
				Region: "us-central1", Prime: true,
				RightFitting:   []GPU{hint("nvidia-l4", 1)},
				ServiceOptions: []string{"enable_prime"},
			},
			want: []string{
				"--region=us-central1",
				"--dataflow_service_options=enable_prime",
			},
		},
		{
			name: "right fitting: no worker_accelerator, hints and min_ram left to the launcher",
			cfg: Config{
				Region: "us-central1", MachineType: "n1-standard-2",
				RightFitting: []GPU{hint("nvidia-l4", 1)},
				MinRAMBytes:  16 * gibBytes,
				Experiments:  []string{"use_runner_v2"},
			},
			want: []string{
				"--region=us-central1",
				"--worker_machine_type=n1-standard-2",
				"--experiments=use_runner_v2",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.Flags()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFlagsRefusesInvalidConfig(t *testing.T) {
	cfg := whole("n1-standard-4", mps("nvidia-tesla-t4", 2))
	got, err := cfg.Flags()
	assert.Nil(t, got)
	require.Error(t, err)
	assert.EqualError(t, err, `mps-single-gpu: worker_accelerator "type:nvidia-tesla-t4;count:2;install-nvidia-driver:5xx;use_nvidia_mps" sets use_nvidia_mps with count 2; MPS is supported only on workers with a single GPU, so count must be 1 (https://cloud.google.com/dataflow/docs/gpu/use-nvidia-mps)`)
}
