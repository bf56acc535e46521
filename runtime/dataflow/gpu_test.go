package dataflow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHint(t *testing.T) {
	for _, tc := range []struct {
		gpu  GPU
		want string
	}{
		{GPU{Type: "nvidia-tesla-t4", Count: 1, InstallDriver: true}, "type:nvidia-tesla-t4;count:1;install-nvidia-driver"},
		{GPU{Type: "nvidia-tesla-t4", Count: 1, InstallDriver: true, Driver: "5xx"}, "type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx"},
		{GPU{Type: "nvidia-l4", Count: 2}, "type:nvidia-l4;count:2"},
		// The MPS page's form.
		{GPU{Type: "nvidia-l4", Count: 1, InstallDriver: true, MPS: true}, "type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps"},
		// The right-fitting page's order: type, count, machine_type, options.
		{GPU{Type: "nvidia-l4", Count: 1, MachineType: "g2-standard-8", InstallDriver: true, Driver: "latest"},
			"type:nvidia-l4;count:1;machine_type:g2-standard-8;install-nvidia-driver:latest"},
	} {
		assert.Equal(t, tc.want, tc.gpu.Hint())
		assert.Equal(t, "worker_accelerator="+tc.want, tc.gpu.ServiceOption())
		back, err := ParseAccelerator(tc.gpu.Hint())
		require.NoError(t, err)
		assert.Equal(t, tc.gpu, back)
		back, err = ParseAccelerator(tc.gpu.ServiceOption())
		require.NoError(t, err)
		assert.Equal(t, tc.gpu, back)
	}
}

func TestParseAccelerator(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want GPU
	}{
		{"type:nvidia-tesla-v100;count:4;install-nvidia-driver", GPU{Type: "nvidia-tesla-v100", Count: 4, InstallDriver: true}},
		{`"worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps"`, GPU{Type: "nvidia-l4", Count: 1, InstallDriver: true, MPS: true}},
		{"accelerator=count:2; type:nvidia-tesla-t4", GPU{Type: "nvidia-tesla-t4", Count: 2}},
		{"type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx", GPU{Type: "nvidia-tesla-t4", Count: 1, InstallDriver: true, Driver: "5xx"}},
		{"type:nvidia-l4;count:1;install-nvidia-driver:latest", GPU{Type: "nvidia-l4", Count: 1, InstallDriver: true, Driver: "latest"}},
		{"type:nvidia-l4;count:1;install-nvidia-driver:default", GPU{Type: "nvidia-l4", Count: 1, InstallDriver: true, Driver: "default"}},
		{"type:nvidia-l4;count:1;install-nvidia-driver:535.104.05", GPU{Type: "nvidia-l4", Count: 1, InstallDriver: true, Driver: "535.104.05"}},
		{"type:nvidia-l4;count:1;install-nvidia-driver:R550", GPU{Type: "nvidia-l4", Count: 1, InstallDriver: true, Driver: "R550"}},
		{`accelerator="type:nvidia-l4;count:1;machine_type:g2-standard-4;install-nvidia-driver"`,
			GPU{Type: "nvidia-l4", Count: 1, MachineType: "g2-standard-4", InstallDriver: true}},
	} {
		got, err := ParseAccelerator(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestParseAcceleratorErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `accelerator "" is empty; want type:T;count:N[;machine_type:M][;install-nvidia-driver[:VERSION]][;use_nvidia_mps]`},
		{"type:nvidia-l4", `accelerator "type:nvidia-l4" has no count:N part`},
		{"count:1", `accelerator "count:1" has no type:T part`},
		{"type:;count:1", `accelerator "type:;count:1" has an empty type`},
		{"type:nvidia-l4;count:1;machine_type:", `has an empty machine_type`},
		{"type:nvidia-l4;count:one", `accelerator "type:nvidia-l4;count:one": count "one" is not an integer`},
		{"type:nvidia-l4;count:1;count:2", `accelerator "type:nvidia-l4;count:1;count:2" gives "count" twice`},
		{"type:nvidia-l4;count:1;install_nvidia_driver", `accelerator "type:nvidia-l4;count:1;install_nvidia_driver": unknown part "install_nvidia_driver"; want type:T, count:N, machine_type:M, install-nvidia-driver[:VERSION] or use_nvidia_mps`},
		{"type:nvidia-l4;count:1;install-nvidia-driver:newest", `driver version "newest" is not one Dataflow installs; want install-nvidia-driver, install-nvidia-driver:latest, install-nvidia-driver:5xx (a branch) or install-nvidia-driver:535.104.05 (an exact version)`},
		{"type:nvidia-l4;count:1;install-nvidia-driver:", `driver version "" is not one Dataflow installs`},
		{"type:nvidia-l4;;count:1", `unknown part ""`},
	} {
		_, err := ParseAccelerator(tc.in)
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestDriverBranch(t *testing.T) {
	for _, tc := range []struct {
		driver string
		branch int
		known  bool
	}{
		{"", 0, false}, {"default", 0, false}, {"latest", 0, false},
		{"5xx", 500, true}, {"4xx", 400, true}, {"R535", 535, true}, {"r470", 470, true},
		{"535.104.05", 535, true}, {"470", 470, true},
	} {
		b, ok := GPU{Driver: tc.driver}.DriverBranch()
		assert.Equal(t, tc.known, ok, tc.driver)
		if ok {
			assert.Equal(t, tc.branch, b, tc.driver)
		}
	}
}

// FuzzParseAccelerator: whatever parses, Hint writes back to the same GPU.
func FuzzParseAccelerator(f *testing.F) {
	f.Add("type:nvidia-tesla-t4;count:1;install-nvidia-driver")
	f.Add("worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:5xx;use_nvidia_mps")
	f.Add("type:nvidia-l4;count:1;machine_type:g2-standard-8;install-nvidia-driver:latest")
	f.Add("count:2;type:x")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseAccelerator(s)
		if err != nil {
			return
		}
		back, err := ParseAccelerator(g.Hint())
		if err != nil {
			t.Fatalf("ParseAccelerator(%q) = %+v, but its Hint %q does not parse: %v", s, g, g.Hint(), err)
		}
		if back != g {
			t.Fatalf("ParseAccelerator(%q) = %+v; Hint %q parses back to %+v", s, g, g.Hint(), back)
		}
	})
}
