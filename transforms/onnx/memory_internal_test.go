package onnx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The memory available under a cgroup is its limit less its usage, less
// the inactive file cache the kernel reclaims; the tightest of the
// process's cgroup and its ancestors counts; a cgroup without a limit
// ("max", v1's huge number) does not.
func TestCgroupFree(t *testing.T) {
	sys := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(sys, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	// v2: the job's cgroup has 4 GiB, 3 GiB used of which 1 GiB inactive
	// files; its parent 16 GiB, 15 GiB used; the root no limit.
	write("memory.max", "max\n")
	write("memory.current", "100\n")
	write("pod/memory.max", "17179869184\n")
	write("pod/memory.current", "16106127360\n")
	write("pod/job/memory.max", "4294967296\n")
	write("pod/job/memory.current", "3221225472\n")
	write("pod/job/memory.stat", "anon 2147483648\ninactive_file 1073741824\nactive_file 0\n")
	// v1, beside it: a limit of 2 GiB, 1.5 GiB used; the root unlimited.
	write("memory/memory.limit_in_bytes", "9223372036854771712\n")
	write("memory/memory.usage_in_bytes", "100\n")
	write("memory/app/memory.limit_in_bytes", "2147483648\n")
	write("memory/app/memory.usage_in_bytes", "1610612736\n")
	write("memory/app/memory.stat", "total_inactive_file 0\n")
	proc := filepath.Join(sys, "cgroup")
	require.NoError(t, os.WriteFile(proc, []byte("12:memory:/app\n3:cpu:/app\n0::/pod/job\n"), 0o644))

	free := map[string]int64{}
	for _, c := range cgroupDirs(proc, sys) {
		if n, ok := cgroupFree(c); ok {
			free[c.dir] = n
		}
	}
	assert.Equal(t, map[string]int64{
		filepath.Join(sys, "pod/job"):    2 << 30,   // 4 GiB - (3 GiB - 1 GiB)
		filepath.Join(sys, "pod"):        1 << 30,   // 16 GiB - 15 GiB
		filepath.Join(sys, "memory/app"): 512 << 20, // 2 GiB - 1.5 GiB
	}, free)

	_, ok := meminfo(filepath.Join(sys, "nofile"), "MemAvailable")
	assert.False(t, ok)
	write("meminfo", "MemTotal:       24000000 kB\nMemAvailable:   12345678 kB\n")
	kb, ok := meminfo(filepath.Join(sys, "meminfo"), "MemAvailable")
	assert.True(t, ok)
	assert.Equal(t, int64(12345678), kb)
}
