//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary is beamgpu-boot itself where BEAMGPU_BOOT_TEST_MAIN is set,
// so that the exec path (which replaces the process) runs in a child.
func TestMain(m *testing.M) {
	if os.Getenv("BEAMGPU_BOOT_TEST_MAIN") != "" {
		main()
	}
	os.Exit(m.Run())
}

// Prism's quoted id loses its quotes; every other argument is left alone.
func TestFixID(t *testing.T) {
	in := []string{"--id='job-001[go-job-1]_go-gpu'", "--provision_endpoint=localhost:1", "--logging_endpoint='x'"}
	assert.Equal(t, []string{"--id=job-001[go-job-1]_go-gpu", "--provision_endpoint=localhost:1", "--logging_endpoint='x'"}, fixID(in))
	assert.Equal(t, []string{"-id=a"}, fixID([]string{"-id='a'"}))
	assert.Equal(t, []string{"--id=a"}, fixID([]string{"--id=a"}), "an id without quotes (Dataflow, prism's DOCKER environments)")
	assert.Equal(t, []string{"--id='"}, fixID([]string{"--id='"}), "a lone quote is not a quoted id")
	assert.Equal(t, "job-001[go-job-1]_go-gpu", workerID(fixID(in)))
}

// worker.env: comments, ${VAR} from earlier lines then the environment,
// unset variables empty; a line that is not KEY=VALUE is an error naming it.
func TestReadEnv(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "worker.env")
	require.NoError(t, os.WriteFile(p, []byte("# c\n\nA=${BEAMGPU_ROOT}/opt/a\nB=${A}/b:${PATH}\nC=${NOPE}x\n"), 0o644))
	env := map[string]string{"BEAMGPU_ROOT": "/r", "PATH": "/bin"}
	got, err := readEnv(p, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	require.NoError(t, err)
	assert.Equal(t, [][2]string{{"A", "/r/opt/a"}, {"B", "/r/opt/a/b:/bin"}, {"C", "x"}}, got)

	require.NoError(t, os.WriteFile(p, []byte("A=1\nnot a pair\n"), 0o644))
	_, err = readEnv(p, os.LookupEnv)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "worker.env:2: \"not a pair\" is not KEY=VALUE")
	_, err = readEnv(filepath.Join(dir, "missing.env"), os.LookupEnv)
	assert.ErrorContains(t, err, "missing.env")
}

// The repository's worker.env, read as a rehearsal reads it, puts every
// path of the image under ROOT; read as the image reads it, the image's.
func TestRepositoryWorkerEnv(t *testing.T) {
	p := filepath.Join("..", "..", "containers", "worker.env")
	for root, want := range map[string]string{"": "/opt/beamgpu/bin/beamgpu-executor", "/r": "/r/opt/beamgpu/bin/beamgpu-executor"} {
		got, err := readEnv(p, func(k string) (string, bool) {
			if k == "BEAMGPU_ROOT" {
				return root, true
			}
			return "/usr/bin", k == "PATH"
		})
		require.NoError(t, err)
		vars := map[string]string{}
		for _, kv := range got {
			vars[kv[0]] = kv[1]
		}
		assert.Equal(t, want, vars["BEAMGPU_EXECUTOR"], "root %q", root)
		assert.Equal(t, root+"/opt/apache/beam/boot", vars["BEAM_BOOT"], "root %q", root)
		assert.Equal(t, root+"/opt/beamgpu/bin:/usr/bin", vars["PATH"], "root %q", root)
	}
}

// fakeLayout makes ROOT/opt/beamgpu/{bin,worker.env} and a boot loader
// script that records its arguments and environment, then exits with status.
func fakeLayout(t *testing.T, status int) (root, record string) {
	root = t.TempDir()
	record = filepath.Join(root, "record")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "opt/apache/beam"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "opt/beamgpu/bin"), 0o755))
	src, err := os.ReadFile(filepath.Join("..", "..", "containers", "worker.env"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "opt/beamgpu/worker.env"), src, 0o644))
	script := "#!/bin/sh\n" +
		"printf '%s\\n' \"$@\" > " + record + "\n" +
		"echo \"EXECUTOR=$BEAMGPU_EXECUTOR\" >> " + record + "\n" +
		"echo \"PATH=$PATH\" >> " + record + "\n" +
		"echo \"PWD=$(pwd)\" >> " + record + "\n" +
		"echo boot says goodbye >&2\n" +
		"exit " + string(rune('0'+status)) + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "opt/apache/beam/boot"), []byte(script), 0o755))
	return root, record
}

func boot(t *testing.T, root string, env []string, args ...string) (*exec.Cmd, string, error) {
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), "BEAMGPU_BOOT_TEST_MAIN=1", "BEAMGPU_WORKER_ENV="+filepath.Join(root, "opt/beamgpu/worker.env"), "BEAMGPU_ROOT="+root, "PATH=/usr/bin:/bin")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return cmd, string(out), err
}

// As the image's entrypoint (no report directory) it becomes the boot loader
// with prism's arguments repaired, a semi-persistent directory of its own
// under ROOT/tmp, a working directory under ROOT/work, and worker.env's
// variables.
func TestBootExecsTheBootLoader(t *testing.T) {
	root, record := fakeLayout(t, 0)
	_, out, err := boot(t, root, nil, "--id='job-001[j]_go-gpu'", "--provision_endpoint=localhost:9")
	require.NoError(t, err, out)
	got, err := os.ReadFile(record)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	require.Len(t, lines, 6, "%s", got)
	assert.Equal(t, "--id=job-001[j]_go-gpu", lines[0])
	assert.Equal(t, "--provision_endpoint=localhost:9", lines[1])
	assert.Regexp(t, `^--semi_persist_dir=`+root+`/tmp/job-001_j__go-gpu-\d+-\d+$`, lines[2])
	assert.Equal(t, "EXECUTOR="+root+"/opt/beamgpu/bin/beamgpu-executor", lines[3])
	assert.Equal(t, "PATH="+root+"/opt/beamgpu/bin:/usr/bin:/bin", lines[4])
	// It runs in a working directory of its own (the boot loader writes
	// pipeline_options.json there), named as its semi-persistent one.
	assert.Equal(t, "PWD="+root+"/work/"+filepath.Base(strings.TrimPrefix(lines[2], "--semi_persist_dir=")), lines[5])
	// A --semi_persist_dir given (as Dataflow gives it) is kept.
	_, out, err = boot(t, root, nil, "--id=x", "--semi_persist_dir=/var/opt/x")
	require.NoError(t, err, out)
	got, _ = os.ReadFile(record)
	assert.Equal(t, "--id=x\n--semi_persist_dir=/var/opt/x\n", strings.Join(strings.SplitAfter(string(got), "\n")[:2], ""))
}

// In a rehearsal (a report directory) a boot loader that fails leaves a
// report: environment, worker id, status and the end of its stderr; and
// beamgpu-boot exits with the boot loader's status.
func TestBootReportsAFailedBootLoader(t *testing.T) {
	root, _ := fakeLayout(t, 3)
	reports := t.TempDir()
	cmd, out, err := boot(t, root, []string{"BEAMGPU_WORKER_REPORT=" + reports, "BEAMGPU_ENVIRONMENT=go-gpu"}, "--id='w1'")
	require.Error(t, err)
	assert.Equal(t, 3, cmd.ProcessState.ExitCode(), out)
	names, _ := filepath.Glob(filepath.Join(reports, "worker-*.json"))
	require.Len(t, names, 1)
	data, err := os.ReadFile(names[0])
	require.NoError(t, err)
	var r Report
	require.NoError(t, json.Unmarshal(data, &r))
	assert.Equal(t, "go-gpu", r.Environment)
	assert.Equal(t, "w1", r.WorkerID)
	assert.Equal(t, "exit status 3", r.Status)
	assert.Equal(t, filepath.Join(root, "opt/apache/beam/boot"), r.Boot)
	assert.Contains(t, r.Stderr, "boot says goodbye")

	// A boot loader that succeeds leaves none.
	root, _ = fakeLayout(t, 0)
	reports = t.TempDir()
	_, out, err = boot(t, root, []string{"BEAMGPU_WORKER_REPORT=" + reports}, "--id=w2")
	require.NoError(t, err, out)
	names, _ = filepath.Glob(filepath.Join(reports, "*"))
	assert.Empty(t, names)
}

// A layout without a boot loader, or a worker.env that names none, fails at
// once naming what is missing (and reports it in a rehearsal).
func TestBootWithoutABootLoader(t *testing.T) {
	root, _ := fakeLayout(t, 0)
	require.NoError(t, os.Remove(filepath.Join(root, "opt/apache/beam/boot")))
	reports := t.TempDir()
	start := time.Now()
	_, out, err := boot(t, root, []string{"BEAMGPU_WORKER_REPORT=" + reports}, "--id=w")
	require.Error(t, err)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Contains(t, out, "beamgpu-boot: the boot loader BEAM_BOOT="+root+"/opt/apache/beam/boot")
	assert.Contains(t, out, "no such file or directory")
	names, _ := filepath.Glob(filepath.Join(reports, "worker-*.json"))
	assert.Len(t, names, 1)

	require.NoError(t, os.WriteFile(filepath.Join(root, "opt/beamgpu/worker.env"), []byte("A=1\n"), 0o644))
	_, out, err = boot(t, root, []string{"BEAM_BOOT="}, "--id=w")
	require.Error(t, err)
	assert.Contains(t, out, "does not set BEAM_BOOT")
}

// The harmless lines of a rehearsal's worker are left out, whatever the
// writes they come in; real errors, and the lines around, pass unchanged.
func TestNoiseFilter(t *testing.T) {
	in := "2026/11/25 21:59:08 Initializing Go harness\n" +
		"Error Setting Rlimit  operation not permitted\n" +
		"2026/11/25 21:59:08 Provision info:\n" +
		"pipeline_options:{fields:{key:\"beam:option:app_name:v1\" value:{string_value:\"x\"}}} retrieval_token:\"job-001\"\n" +
		"Error Setting Rlimit  invalid argument\n" +
		"Worker failed: boom\n" +
		"last line without newline"
	want := "2026/11/25 21:59:08 Initializing Go harness\n" +
		"Error Setting Rlimit  invalid argument\n" +
		"Worker failed: boom\n" +
		"last line without newline"
	for _, size := range []int{1, 3, 17, len(in)} {
		var out strings.Builder
		f := &noiseFilter{w: &out}
		for rest := in; rest != ""; {
			n := min(size, len(rest))
			got, err := f.Write([]byte(rest[:n]))
			require.NoError(t, err)
			require.Equal(t, n, got)
			rest = rest[n:]
		}
		f.Flush()
		assert.Equal(t, want, out.String(), "writes of %d bytes", size)
	}

	// A provision dump longer than the filter holds is still left out whole.
	var out strings.Builder
	f := &noiseFilter{w: &out}
	f.Write([]byte("x Provision info:\n" + strings.Repeat("p", 3*maxNoiseLine) + "\nafter\n"))
	assert.Equal(t, "after\n", out.String())
}

// In a rehearsal the boot loader's output passes through the filter: its
// provision dump and the worker's Rlimit line do not reach the terminal.
func TestBootFiltersTheWorkersNoise(t *testing.T) {
	root, _ := fakeLayout(t, 0)
	script := "#!/bin/sh\n" +
		"echo 'Error Setting Rlimit  operation not permitted'\n" +
		"printf '2026/11/25 21:59:08 Provision info:\\npipeline_options:{secret}\\n' >&2\n" +
		"echo 'a real error' >&2\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "opt/apache/beam/boot"), []byte(script), 0o755))
	_, out, err := boot(t, root, []string{"BEAMGPU_WORKER_REPORT=" + t.TempDir()}, "--id=w")
	require.NoError(t, err, out)
	assert.Equal(t, "a real error\n", out)
}
