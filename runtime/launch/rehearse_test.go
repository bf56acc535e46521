package launch

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beamgpu/beamgpu/runtime/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// The op list of an image: lines (containers/executor-ops.sh) or the label's
// comma-separated value; comments and blanks skipped; an empty or missing
// list is an error naming the file.
func TestReadExecutorOps(t *testing.T) {
	ops, err := ReadExecutorOps(writeFile(t, "ops.txt", "# from the image\ndiscard\necho\nraster.toa\n\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"discard": true, "echo": true, "raster.toa": true}, ops)
	ops, err = ReadExecutorOps(writeFile(t, "label", "clipstep.clip,raster.toa, echo\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"clipstep.clip": true, "raster.toa": true, "echo": true}, ops)

	empty := writeFile(t, "empty.txt", "# nothing\n")
	_, err = ReadExecutorOps(empty)
	assert.ErrorContains(t, err, "--executor_ops="+empty+" lists no op")
	_, err = ReadExecutorOps(writeFile(t, "bad.txt", "a b\n"))
	assert.ErrorContains(t, err, `"a b" is not an op name`)
	_, err = ReadExecutorOps(filepath.Join(t.TempDir(), "none.txt"))
	assert.ErrorContains(t, err, "none.txt: no such file")
}

// A Dataflow launch with --executor_ops checks every step planned on the
// GPU against the image's list: under gpu a step whose op the image lacks is
// refused, naming the op, the list and how to build an image that serves
// it; under auto it runs on the CPU with that reason; the image's own ops
// stay on the GPU.
func TestExecutorOpsCheck(t *testing.T) {
	ops := writeFile(t, "executor-ops.txt", "discard\necho\nraster.toa\n")
	setFlags(t, map[string]string{"runner": "dataflow", "sdk_container_image": "gcr.io/p/worker:v1"})
	f := Flags{ExecutorOps: ops}
	require.NoError(t, f.Validate())
	ex, err := f.Executor(backend.NoExecutor{})
	require.NoError(t, err)
	steps := []backend.Step{{Name: "toa", GPUOp: "raster.toa"}, {Name: "clip", GPUOp: "clipstep.clip"}}

	_, err = backend.New(backend.Config{Default: backend.GPU, Steps: steps, Executor: ex})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `backend gpu requested for step "clip" but the worker image's executor does not serve clipstep.clip (--executor_ops=`+ops+` lists discard, echo, raster.toa): build an image whose executor serves it (make image EXECUTOR=`)

	s, err := backend.New(backend.Config{Default: backend.Auto, Steps: steps, Executor: ex})
	require.NoError(t, err)
	d, err := s.Resolve(steps[1])
	require.NoError(t, err)
	assert.Equal(t, backend.CPU, d.Impl)
	assert.Contains(t, d.Reason, "auto: the worker image's executor does not serve clipstep.clip")
	d, err = s.Resolve(steps[0])
	require.NoError(t, err)
	assert.Equal(t, backend.GPU, d.Impl)
	// The launch warns of it (the plan's warnings; a submission prints them).
	assert.Equal(t, []string{"executor-ops: the worker image's executor does not serve clipstep.clip (--executor_ops=" + ops + "): its steps run on the CPU of their workers; build an image whose executor serves it (make image EXECUTOR=..., docs/writing-a-step.md)"},
		f.imageOpsWarnings())

	// Without a list there is nothing to check against: every op is taken
	// to be served (as before).
	f = Flags{}
	ex, err = f.Executor(backend.NoExecutor{})
	require.NoError(t, err)
	_, err = backend.New(backend.Config{Default: backend.GPU, Steps: steps, Executor: ex})
	assert.NoError(t, err)

	// A list that cannot be read fails the launch before anything runs.
	f = Flags{ExecutorOps: filepath.Join(t.TempDir(), "missing.txt")}
	assert.ErrorContains(t, f.Validate(), "--executor_ops: open ")
}

// --rehearse is checked before anything runs: prism started here only, the
// environments its own, a directory with the image's layout (what is
// missing and the command that makes it); --executor_ops only for workers
// started from an image.
func TestRehearseValidate(t *testing.T) {
	dir := t.TempDir()
	f := Flags{Rehearse: dir}
	err := f.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--rehearse="+dir+": the directory does not hold the worker image's layout (opt/beamgpu/bin/beamgpu-boot, opt/apache/beam/boot, opt/beamgpu/worker.env missing): make it with containers/build-rehearsal.sh --out "+dir)
	for _, p := range []string{RehearsalBootWrapper, RehearsalBoot, RehearsalWorkerEnv} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), nil, 0o755))
	}
	require.NoError(t, f.Validate())
	assert.True(t, f.rightFitting(Prism), "a rehearsal right-fits: each environment a worker of its own")

	t.Run("dataflow", func(t *testing.T) {
		setFlags(t, map[string]string{"runner": "dataflow"})
		assert.ErrorContains(t, f.Validate(), "--rehearse runs the pipeline on a prism started here: it takes neither --runner=dataflow nor --endpoint")
	})
	t.Run("environment type", func(t *testing.T) {
		setFlags(t, map[string]string{"environment_type": "loopback"})
		assert.ErrorContains(t, f.Validate(), "--rehearse sets the environments itself (PROCESS, or DOCKER for image:IMAGE): drop --environment_type=loopback")
	})
	t.Run("executor ops", func(t *testing.T) {
		ops := writeFile(t, "ops", "echo\n")
		g := Flags{Rehearse: dir, ExecutorOps: ops}
		assert.ErrorContains(t, g.Validate(), "--executor_ops checks the executor of workers started from an image")
		g.Rehearse = "image:gcr.io/p/worker:v1"
		require.NoError(t, g.Validate())
		ex, err := g.Executor(backend.NoExecutor{})
		require.NoError(t, err)
		ok, why := ex.(backend.OpServer).Serves("raster.toa")
		assert.False(t, ok)
		assert.Contains(t, why, "does not serve raster.toa")
	})
	g := Flags{Rehearse: "image:"}
	assert.ErrorContains(t, g.Validate(), "--rehearse=image: names no image")
}

// The rehearsal's environment is a PROCESS one whose command is the
// image's entrypoint under ROOT, with ROOT and the report directory; each
// environment (right fitting cloned it) is told its id.
func TestRehearsalEnvironments(t *testing.T) {
	r := &rehearsal{root: "/r"}
	env, err := r.environment(context.Background(), "/reports")
	require.NoError(t, err)
	assert.Equal(t, graphx.URNEnvProcess, env.GetUrn())
	pp := &pipepb.ProcessPayload{}
	require.NoError(t, proto.Unmarshal(env.GetPayload(), pp))
	assert.Equal(t, "/r/"+RehearsalBootWrapper, pp.GetCommand())
	assert.Equal(t, map[string]string{"BEAMGPU_ROOT": "/r", "BEAMGPU_WORKER_REPORT": "/reports"}, pp.GetEnv())

	gpu := proto.Clone(env).(*pipepb.Environment)
	docker, err := (&rehearsal{image: "gcr.io/p/w:1"}).environment(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, graphx.URNEnvDocker, docker.GetUrn())
	model := &pipepb.Pipeline{Components: &pipepb.Components{Environments: map[string]*pipepb.Environment{"go": env, "go-gpu": gpu, "d": docker}}}
	require.NoError(t, nameEnvironments(model))
	for _, id := range []string{"go", "go-gpu"} {
		pp := &pipepb.ProcessPayload{}
		require.NoError(t, proto.Unmarshal(model.GetComponents().GetEnvironments()[id].GetPayload(), pp))
		assert.Equal(t, id, pp.GetEnv()["BEAMGPU_ENVIRONMENT"])
		assert.Equal(t, "/r", pp.GetEnv()["BEAMGPU_ROOT"])
	}
	assert.Equal(t, docker.GetPayload(), model.GetComponents().GetEnvironments()["d"].GetPayload())
}

// The workaround of prism's one short-id table per job: the harness's cache
// is reached (Beam's layout as go.mod pins it), and environments number
// their metrics 2^24 ids apart at least.
func TestShortIDOffsets(t *testing.T) {
	require.NotNil(t, beamShortIDs, "the harness's short-id cache is not linked")
	assert.Less(t, beamShortIDs.lastShortID, int64(1<<20), "a test process numbers few metrics, if any: the layout is Beam's")
	a, b := shortIDOffset("go"), shortIDOffset("go-gpu")
	assert.NotEqual(t, a, b)
	assert.Zero(t, a%(1<<24))
	assert.GreaterOrEqual(t, max(a-b, b-a), int64(1<<24))
}

// A worker's report reads as the job's error: environment, worker, boot
// loader, status, time and the end of its stderr, lines cut.
func TestWorkerReportString(t *testing.T) {
	r := workerReport{Environment: "go-gpu", WorkerID: "job-001[j]_go-gpu", Boot: "/r/opt/apache/beam/boot", Status: "exit status 1", Seconds: 15.2,
		Stderr: strings.Repeat("x", 400) + "\nFailed to retrieve staged files\n"}
	s := r.String()
	assert.Contains(t, s, "the worker of environment go-gpu (worker id job-001[j]_go-gpu) failed: Beam's boot loader /r/opt/apache/beam/boot: exit status 1 after 15.2 s; its stderr ends:\n  "+strings.Repeat("x", 300)+" ...\n  Failed to retrieve staged files")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "worker-2.json"), []byte(`{"environment":"go","status":"not started"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".report-1"), []byte(`{`), 0o644))
	rs := readReports(dir)
	require.Len(t, rs, 1)
	assert.Equal(t, "go", rs[0].Environment)
}

// In a rehearsal a relative worker path becomes absolute (the workers run
// in directories of their own) and the flag is set to it; an absolute one
// or a URL stays; with the image's containers (image:IMAGE), which see none
// of this machine's files, a local path is refused, naming the flag.
func TestWorkerPathInARehearsal(t *testing.T) {
	out := flag.String("test_rehearsal_out", "", "")
	require.NoError(t, flag.Set("test_rehearsal_out", "out/x"))
	f := Flags{Rehearse: t.TempDir()}
	require.NoError(t, f.WorkerPath("test_rehearsal_out", *out))
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(wd, "out/x"), *out)
	for _, p := range []string{"/data/x", "gs://b/x", ""} {
		require.NoError(t, flag.Set("test_rehearsal_out", p))
		require.NoError(t, f.WorkerPath("test_rehearsal_out", p))
		assert.Equal(t, p, *out)
	}

	f = Flags{Rehearse: "image:beamgpu-worker:dev"}
	assert.EqualError(t, f.WorkerPath("test_rehearsal_out", "/data/x"),
		"--test_rehearsal_out=/data/x: the workers of --rehearse=image:beamgpu-worker:dev are containers that cannot read a path on this machine; pass a gs:// path")
	assert.ErrorContains(t, f.WorkerPath("test_rehearsal_out", ""), "(the embedded default data included)")
	assert.NoError(t, f.WorkerPath("test_rehearsal_out", "gs://b/x"))
}
