package client

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShareGPU(t *testing.T) {
	assert.Equal(t, Sharing{Processes: 1, MaxConcurrent: 2, MemoryFraction: 0.8}, ShareGPU(1, 2))
	assert.Equal(t, Sharing{Processes: 4, MaxConcurrent: 1, MemoryFraction: 0.8}, ShareGPU(4, 2), "at least one batch each")
	assert.Equal(t, Sharing{Processes: 2, MaxConcurrent: 4, MemoryFraction: 0.8}, ShareGPU(2, 8))
	assert.Equal(t, 1, ShareGPU(0, 0).Processes)
}

func TestSharingRoundTrip(t *testing.T) {
	s := ShareGPU(3, 8)
	got, err := ParseSharing(s.String())
	require.NoError(t, err)
	assert.Equal(t, s, got)
	assert.Equal(t, []string{"BEAMGPU_GPU_PROCESSES=3", "BEAMGPU_GPU_MEMORY_FRACTION=0.8"}, s.Env())
	assert.Equal(t, []string{"--max_concurrent=3"}, s.Args())
}

func TestParseSharingErrors(t *testing.T) {
	for _, v := range []string{"", "processes", "processes=x,max_concurrent=1,memory_fraction=0.5",
		"processes=1,max_concurrent=1,memory_fraction=1.5", "processes=0,max_concurrent=1,memory_fraction=0.5", "colour=red"} {
		_, err := ParseSharing(v)
		assert.Error(t, err, v)
	}
}

func TestSharedConfigReadsTheSource(t *testing.T) {
	t.Cleanup(func() { SetSharingSource(nil) })
	assert.Empty(t, sharedConfig("/x").Env, "no source: the executor's defaults")
	SetSharingSource(func() string { return "processes=2,max_concurrent=1,memory_fraction=0.5" })
	cfg := sharedConfig("/x")
	assert.Equal(t, []string{"BEAMGPU_GPU_PROCESSES=2", "BEAMGPU_GPU_MEMORY_FRACTION=0.5"}, cfg.Env)
	assert.Equal(t, []string{"--max_concurrent=1"}, cfg.Args)
	SetSharingSource(func() string { return "nonsense" })
	assert.Empty(t, sharedConfig("/x").Env, "a malformed option is ignored")
}
