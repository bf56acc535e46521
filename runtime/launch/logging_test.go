package launch

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// useDefault makes a text logger on buf, at level, the default logger
// until the test ends.
func useDefault(t *testing.T, level slog.Level) *bytes.Buffer {
	var buf bytes.Buffer
	restore := setDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})))
	t.Cleanup(restore)
	return &buf
}

// Prism's logger follows the default logger of the moment, with the
// attributes prism gave it; a worker process that prism kills once the job
// is done is lowered to Debug, saying why, while a worker killed during
// the job, or one that failed otherwise, stays an error.
func TestPrismLogs(t *testing.T) {
	t.Cleanup(func() { prismJobDone.Store(false) })
	prismJobDone.Store(false)
	prism := slog.New(&prismHandler{fallback: slog.NewTextHandler(&bytes.Buffer{}, nil)}).With("envID", "go-gpu")

	buf := useDefault(t, slog.LevelInfo)
	prism.Error(prismProcessFailed, "error", "signal: killed")
	assert.Contains(t, buf.String(), `level=ERROR msg="process failed while running" envID=go-gpu error="signal: killed"`, "during the job: a worker died")
	buf.Reset()
	prism.Info(prismPipelineDone, "job", "job-001")
	prism.Error(prismProcessFailed, "error", "signal: killed")
	prism.Error(prismProcessFailed, "error", "exit status 2")
	assert.Contains(t, buf.String(), `msg="pipeline done!"`)
	assert.NotContains(t, buf.String(), "signal: killed", "lowered to Debug: not shown at Info")
	assert.Contains(t, buf.String(), `level=ERROR msg="process failed while running" envID=go-gpu error="exit status 2"`, "another failure stays an error")

	debug := useDefault(t, slog.LevelDebug)
	prism.Error(prismProcessFailed, "error", "signal: killed")
	assert.Contains(t, debug.String(), `level=DEBUG msg="process failed while running" envID=go-gpu error="signal: killed" harmless="after the job, prism stops its worker processes with SIGKILL"`)

	// A rehearsal that starts a job makes a kill an error again.
	w := captureWorkerErrors()
	w.restore()
	assert.False(t, prismJobDone.Load())
}

// The rehearsal's capture keeps the workers' errors and logs everything
// through the program's own handler (here a JSON one), not one of its own;
// it puts that handler back after.
func TestWorkerErrorsKeepTheProgramsHandler(t *testing.T) {
	var buf bytes.Buffer
	mine := slog.New(slog.NewJSONHandler(&buf, nil))
	t.Cleanup(setDefault(mine))
	w := captureWorkerErrors()
	slog.Error("[SDK] Failed to retrieve staged files: boom")
	slog.Info("something else")
	w.restore()
	assert.Same(t, mine, slog.Default())
	assert.Equal(t, []string{"Failed to retrieve staged files: boom"}, w.lines())
	assert.Contains(t, buf.String(), `"msg":"[SDK] Failed to retrieve staged files: boom"`)
	assert.Contains(t, buf.String(), `"msg":"something else"`)
}

// While prism starts, its logger is the default itself: it hands records
// to its fallback, never to itself.
func TestPrismLoggerWhileItIsTheDefault(t *testing.T) {
	buf := useDefault(t, slog.LevelInfo)
	err := withPrismLogger(func() error {
		slog.Info("Serving JobManagement", "endpoint", "localhost:1")
		return nil
	})
	require.NoError(t, err)
	assert.Contains(t, buf.String(), `msg="Serving JobManagement" endpoint=localhost:1`)
}

// A worker binary built from source says so when the build starts (what
// is built, and that a cold build takes minutes) and when it ends (how long
// it took); a failed build is the error.
func TestBuildWorkerSaysWhatItBuilds(t *testing.T) {
	buf := useDefault(t, slog.LevelInfo)
	prev := buildTempWorker
	t.Cleanup(func() { buildTempWorker = prev })
	var built runnerlib.CompileOpts
	buildTempWorker = func(_ context.Context, opts runnerlib.CompileOpts) (string, error) {
		built = opts
		time.Sleep(20 * time.Millisecond)
		return "/tmp/worker-1", nil
	}
	w, err := buildWorker(context.Background(), "Dataflow", runnerlib.CompileOpts{Arch: "arm64"})
	require.NoError(t, err)
	assert.Equal(t, "/tmp/worker-1", w)
	assert.Equal(t, "arm64", built.Arch)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], "building the worker binary from the pipeline's source")
	assert.Contains(t, lines[0], "a cold build compiles Beam and every dependency and takes minutes")
	assert.Contains(t, lines[0], "for=Dataflow goarch=arm64")
	assert.Regexp(t, `msg="built the worker binary" for=Dataflow took=\d+(\.\d)?m?s path=/tmp/worker-1`, lines[1])

	buildTempWorker = func(context.Context, runnerlib.CompileOpts) (string, error) {
		return "", errors.New("failed to cross-compile")
	}
	_, err = buildWorker(context.Background(), "rehearsal", runnerlib.CompileOpts{})
	assert.ErrorContains(t, err, "failed to cross-compile")
}
