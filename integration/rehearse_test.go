package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamgpu/beamgpu/runtime/launch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The rehearsal of the Dataflow workers (--rehearse, make rehearse): the
// worker image's layout under a directory (containers/build-rehearsal.sh:
// Beam's boot loader built from go.mod's Beam module, the image's entrypoint
// cmd/beamgpu-boot, the reference executor, containers/worker.env), and the
// landsat pipeline's own binary run with --rehearse on it, as a user runs
// it: prism starts a worker process per environment through the boot
// loader, which retrieves the pipeline binary through prism's artifact
// service.

var (
	layoutOnce sync.Once
	layoutDir  string
	layoutErr  error
	layoutOut  []byte
)

// rehearsalLayout builds the layout once per test run and returns a fresh
// copy of it (tests change their copy).
func rehearsalLayout(t *testing.T) string {
	t.Helper()
	layoutOnce.Do(func() {
		layoutDir, layoutErr = os.MkdirTemp("", "beamgpu-rehearsal-layout-")
		if layoutErr != nil {
			return
		}
		cmd := exec.Command(filepath.Join("..", "containers", "build-rehearsal.sh"), "--out", layoutDir)
		layoutOut, layoutErr = cmd.CombinedOutput()
	})
	require.NoError(t, layoutErr, "%s", layoutOut)
	dir := filepath.Join(t.TempDir(), "root")
	out, err := exec.Command("cp", "-a", layoutDir, dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return dir
}

// removeRehearsalLayout removes the layout rehearsalLayout built (TestMain
// calls it).
func removeRehearsalLayout() {
	if layoutDir != "" {
		os.RemoveAll(layoutDir)
	}
}

// markExecutor puts a script in the executor's place that appends the
// environment of the worker that started it ($BEAMGPU_ENVIRONMENT, which the
// launcher gives each environment's worker; empty in the launching process,
// which probes the executor for the explain report) and its arguments to
// the returned file, then runs the real executor.
func markExecutor(t *testing.T, root string) string {
	t.Helper()
	exe := filepath.Join(root, launch.RehearsalExecutor)
	require.NoError(t, os.Rename(exe, exe+".real"))
	marker := filepath.Join(t.TempDir(), "executor-starts")
	script := "#!/bin/sh\necho \"environment=${BEAMGPU_ENVIRONMENT} $1\" >> " + marker + "\nexec " + exe + ".real \"$@\"\n"
	require.NoError(t, os.WriteFile(exe, []byte(script), 0o755))
	return marker
}

// runWithin runs a pipeline binary with a bound on its time: a run past it
// is a hang, and fails the test (the process is killed).
func runWithin(t *testing.T, limit time.Duration, name string, args ...string) (code int, stdout, stderr string, took time.Duration) {
	t.Helper()
	return runWithinDir(t, limit, "", name, args...)
}

// runWithinDir is runWithin in the working directory dir ("": this one).
func runWithinDir(t *testing.T, limit time.Duration, dir, name string, args ...string) (code int, stdout, stderr string, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, workerBin(t, name), append([]string{"--progress=0"}, args...)...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	require.NoError(t, ctx.Err(), "%s did not end within %v (a hang):\n%s\n%s", name, limit, out.String(), errb.String())
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, out.String(), errb.String(), took
}

// processesOf lists the processes whose environment names root as
// BEAMGPU_ROOT: the rehearsal's wrappers, boot loaders, workers and
// executors.
func processesOf(root string) []string {
	var out []string
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, e := range envs {
		data, err := os.ReadFile(e)
		if err != nil || !bytes.Contains(data, []byte("\x00BEAMGPU_ROOT="+root+"\x00")) && !bytes.HasPrefix(data, []byte("BEAMGPU_ROOT="+root+"\x00")) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(e), "cmdline"))
		out = append(out, filepath.Dir(e)+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return out
}

// noProcessesLeft waits a while for the rehearsal's processes to end.
func noProcessesLeft(t *testing.T, root string) {
	t.Helper()
	var left []string
	for range 100 {
		if left = processesOf(root); len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("processes of the rehearsal still run 10 s after it ended:\n%s", strings.Join(left, "\n"))
}

// The rehearsal runs the right-fitted pipeline in two worker processes,
// each started by Beam's boot loader: the GPU environment's worker starts
// the executor and runs the GPU steps' stages (their batches counted on the
// GPU, none on the CPU), the CPU environment's worker never starts one; the
// outputs are byte for byte the in-process CPU run's; the step metrics
// arrive from the workers; nothing of the rehearsal runs or stays behind.
func TestRehearsal(t *testing.T) {
	slowCheck(t)
	root := rehearsalLayout(t)
	marker := markExecutor(t, root)
	cpuOut := t.TempDir()
	code, stdout, stderr := runBin(t, "landsat", "--backend=cpu", "--output="+cpuOut)
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)

	// A relative --output, as make rehearse passes: the workers run in
	// directories of their own, and write where an in-process run would.
	cwd := t.TempDir()
	gpuOut := filepath.Join(cwd, "out", "landsat")
	code, stdout, stderr, took := runWithinDir(t, 3*time.Minute, cwd, "landsat", "--rehearse="+root, "--backend=gpu", "--output=out/landsat")
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	t.Logf("rehearsal: %.1f s", took.Seconds())
	assert.Contains(t, stdout, "1 done, 0 failed")
	assert.Contains(t, stderr, `msg="right fitting" pipeline=landsat environments="2 environments: go (`)
	// The lines every worker prints that are harmless in a rehearsal are
	// left out (beamgpu-boot) or lowered to Debug (prism's workers stopped
	// after the job), so a successful rehearsal shows no error.
	for _, noise := range []string{"Error Setting Rlimit", "Provision info", "pipeline_options:", `error="signal: killed"`, "level=ERROR"} {
		assert.NotContains(t, stdout+stderr, noise)
	}
	assert.Contains(t, stderr, "go-gpu [accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx, min_ram=16000000000] (composite,")
	// The metrics of the GPU environment's worker: a batch each of the two
	// GPU steps, on the GPU, no CPU fallback (the columns: step, impl,
	// batches, pixels, MB in, kernel s, pixels/s, failures, cpu fallbacks).
	for _, st := range []string{"toa_ndvi", "composite"} {
		assert.Regexp(t, regexp.MustCompile(`(?m)^\s*`+st+`\s+gpu\s+1\s+1681\s+.*\s0\s+0$`), stdout)
	}
	assert.Regexp(t, regexp.MustCompile(`(?m)^\s*read\s+cpu\s+1\s+1681\s`), stdout)

	starts, err := os.ReadFile(marker)
	require.NoError(t, err, "the executor never started")
	var gpuServes int
	for _, line := range strings.Split(strings.TrimSpace(string(starts)), "\n") {
		switch {
		case line == "environment=go-gpu serve":
			gpuServes++
		case strings.HasPrefix(line, "environment= "):
			// The launching process's probe (the explain report).
		default:
			t.Errorf("the executor was started by another environment's worker: %q", line)
		}
	}
	assert.Equal(t, 1, gpuServes, "the GPU environment's worker starts one executor:\n%s", starts)

	var files int
	require.NoError(t, filepath.WalkDir(cpuOut, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(path) == "summary.json" {
			return err
		}
		rel, _ := filepath.Rel(cpuOut, path)
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(filepath.Join(gpuOut, rel))
		require.NoError(t, err)
		assert.Equal(t, want, got, rel)
		files++
		return nil
	}))
	assert.Greater(t, files, 8)

	noProcessesLeft(t, root)
	left, _ := filepath.Glob(filepath.Join(root, "tmp", "*"))
	work, _ := filepath.Glob(filepath.Join(root, "work", "*"))
	assert.Empty(t, append(left, work...), "the workers' semi-persistent and working directories are removed")
	// The boot loader writes the job's options into its working directory:
	// the worker's own, not the launcher's.
	assert.NoFileExists(t, filepath.Join(cwd, "pipeline_options.json"))
	assert.NoFileExists(t, "pipeline_options.json")
}

// A job whose workers cannot start fails, within a bounded time, with the
// worker's error; prism alone would wait forever.
func TestRehearsalWorkerCannotStart(t *testing.T) {
	slowCheck(t)
	t.Run("boot loader exits", func(t *testing.T) {
		root := rehearsalLayout(t)
		boot := filepath.Join(root, launch.RehearsalBoot)
		require.NoError(t, os.WriteFile(boot, []byte("#!/bin/sh\necho 'boot: no provision service at '\"$2\" >&2\nexit 3\n"), 0o755))
		code, stdout, stderr, took := runWithin(t, time.Minute, "landsat", "--rehearse="+root, "--backend=gpu", "--output="+t.TempDir())
		assert.Equal(t, 1, code, "%s\n%s", stdout, stderr)
		assert.Less(t, took, 30*time.Second)
		assert.Contains(t, stderr, "landsat: pipeline failed: rehearsal: a worker could not start, so the job was cancelled: the worker of environment go")
		assert.Contains(t, stderr, "Beam's boot loader "+boot+": exit status 3")
		assert.Contains(t, stderr, "  boot: no provision service at --provision_endpoint=localhost:")
		assert.NotContains(t, stdout, "1 done")
		noProcessesLeft(t, root)
	})
	t.Run("artifact cannot be retrieved", func(t *testing.T) {
		// The workers retrieve the staged binary into ROOT/tmp/<worker>/staged:
		// with a file at ROOT/tmp, the retrieval fails in the boot loader
		// (three attempts, then Beam's boot loader waits 15 s before it exits).
		root := rehearsalLayout(t)
		require.NoError(t, os.WriteFile(filepath.Join(root, "tmp"), []byte("not a directory\n"), 0o644))
		code, stdout, stderr, took := runWithin(t, 2*time.Minute, "landsat", "--rehearse="+root, "--backend=gpu", "--output="+t.TempDir())
		assert.Equal(t, 1, code, "%s\n%s", stdout, stderr)
		assert.Less(t, took, 90*time.Second)
		assert.Contains(t, stderr, "rehearsal: a worker could not start, so the job was cancelled")
		assert.Contains(t, stderr, ": exit status 1 after ")
		assert.Contains(t, stderr, "the workers logged, last:\n  Failed to retrieve staged files: ")
		assert.Contains(t, stderr, "not a directory")
		noProcessesLeft(t, root)
	})
	t.Run("no layout", func(t *testing.T) {
		dir := t.TempDir()
		code, _, stderr, _ := runWithin(t, time.Minute, "landsat", "--rehearse="+dir, "--output="+t.TempDir())
		assert.Equal(t, 2, code, stderr)
		assert.Contains(t, stderr, "--rehearse="+dir+": the directory does not hold the worker image's layout (opt/beamgpu/bin/beamgpu-boot, opt/apache/beam/boot, opt/beamgpu/worker.env missing): make it with containers/build-rehearsal.sh --out "+dir)
	})
}

// A Dataflow launch checks the GPU steps against the ops the worker image's
// executor serves (--executor_ops: the list the image's build wrote): under
// gpu a step the image does not serve is refused before anything is built;
// under auto it is planned on the CPU, the plan warns, and the steps the
// image serves keep the GPU.
func TestPlanChecksTheImageOps(t *testing.T) {
	ops := filepath.Join(t.TempDir(), "executor-ops.txt")
	// An image whose executor lacks toa_ndvi (an older or another module's).
	require.NoError(t, os.WriteFile(ops, []byte("discard\necho\nraster.composite\nraster.toa\n"), 0o644))
	code, _, stderr := runBin(t, "landsat", "--runner=dataflow", "--region=us-central1", "--sdk_container_image="+image,
		"--backend=gpu", "--executor_ops="+ops, "--plan_out="+filepath.Join(t.TempDir(), "p"), "--output=gs://b/o")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, `backend gpu requested for step "toa_ndvi" but the worker image's executor does not serve raster.toa_ndvi (--executor_ops=`+ops+` lists discard, echo, raster.composite, raster.toa)`)

	p := plan(t, "landsat", "--sdk_container_image="+image, "--backend=auto", "--executor_ops="+ops)
	assert.Contains(t, p.plan.Warnings, "executor-ops: the worker image's executor does not serve raster.toa_ndvi (--executor_ops="+ops+"): its steps run on the CPU of their workers; build an image whose executor serves it (make image EXECUTOR=..., docs/writing-a-step.md)")
	var gpuSteps []string
	for _, e := range p.plan.Environments {
		if e.Hints["accelerator"] != "" {
			for _, st := range e.Steps {
				if !strings.HasPrefix(st, "fusion_break_") {
					gpuSteps = append(gpuSteps, st)
				}
			}
		}
	}
	assert.Equal(t, []string{"composite"}, gpuSteps, "only the step the image serves is planned on the GPU")

	// The image's full list (containers/executor-ops.sh: a build of the
	// executor with tags of its own, a slow check): both GPU steps on the
	// GPU, no warning.
	t.Run("the image's full list", func(t *testing.T) {
		slowCheck(t)
		full := filepath.Join(t.TempDir(), "full.txt")
		out, err := exec.Command(filepath.Join("..", "containers", "executor-ops.sh")).Output()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(full, out, 0o644))
		p = plan(t, "landsat", "--sdk_container_image="+image, "--backend=gpu", "--executor_ops="+full)
		for _, w := range p.plan.Warnings {
			assert.NotContains(t, w, "executor-ops")
		}
		gpuSteps = nil
		for _, e := range p.plan.Environments {
			if e.Hints["accelerator"] != "" {
				for _, st := range e.Steps {
					if !strings.HasPrefix(st, "fusion_break_") {
						gpuSteps = append(gpuSteps, st)
					}
				}
			}
		}
		assert.ElementsMatch(t, []string{"composite", "toa_ndvi"}, gpuSteps)
	})
}

// A pipeline binary that cannot be a worker itself (built with cgo, as `go
// run` builds it) is cross-compiled from its source for the workers, as
// Beam does for Dataflow: the rehearsal builds it from the program's main
// package (Beam, called on the rehearsal's goroutine, would find only the
// launcher's package and stage its archive: "exec format error" on every
// worker), and the job completes.
func TestRehearsalBuildsTheWorkerFromSource(t *testing.T) {
	slowCheck(t)
	root := rehearsalLayout(t)
	bin := filepath.Join(t.TempDir(), "landsat-cgo")
	build := exec.Command("go", "build", "-o", bin, "github.com/beamgpu/beamgpu/pipelines/landsat")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	// The run builds the worker first: a link of minutes on a busy machine
	// (5 on 2 cores at a load of 25), hence the room.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--progress=0", "--rehearse="+root, "--backend=gpu", "--output="+t.TempDir())
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	require.NoError(t, ctx.Err(), "a hang:\n%s", stderr.String())
	require.NoError(t, err, "%s\n%s", stdout.String(), stderr.String())
	assert.Regexp(t, `msg="building the worker binary from the pipeline's source .*a cold build .* takes minutes.*" for=rehearsal`, stderr.String(), "said before the build")
	assert.Regexp(t, `msg="built the worker binary" for=rehearsal took=\S+`, stderr.String(), "and after, with the time it took")
	assert.Contains(t, stdout.String(), "1 done, 0 failed")
	noProcessesLeft(t, root)
}
