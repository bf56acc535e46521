package job

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A pipeline's own flag given twice is an error (the flag package keeps
// the last value silently: --input=a --input=b ran on b alone).
func TestRepeatedOwnFlagsAreRefused(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("input", "", "")
	fs.String("output", "", "")
	fs.Bool("strict", false, "")
	fs.String("experiments", "", "")
	own := []string{"input", "output", "strict"}
	err := repeatedFlags([]string{"--input=a", "--strict", "-input", "b"}, fs, own)
	require.Error(t, err)
	assert.Equal(t, `--input given twice ("a" and "b"): give it once`, err.Error())
	assert.NoError(t, repeatedFlags([]string{"--input=a", "--output", "o", "--experiments=x", "--experiments=y"}, fs, own))
	assert.NoError(t, repeatedFlags([]string{"--input=a", "--", "--input=b"}, fs, own), "after --: arguments")
	assert.Error(t, repeatedFlags([]string{"--strict", "--strict=false"}, fs, own))
}

// A run interrupted while it is built runs the cleanups registered after
// the interruption at once: a lock taken then is not left behind.
func TestCleanupAfterInterruptionRunsAtOnce(t *testing.T) {
	r := &Run{}
	r.setActive(true)
	defer r.setActive(false)
	var order []string
	r.Cleanup(func() { order = append(order, "first") })
	interruptRuns()
	assert.True(t, r.Interrupted())
	r.Cleanup(func() { order = append(order, "late") })
	assert.Equal(t, []string{"first", "late"}, order)
	r.cleanup() // Execute's own, at the end: nothing runs twice
	assert.Equal(t, []string{"first", "late"}, order)
}

// A run that starts after the interruption (Main was still choosing the
// backends) is interrupted from the start.
func TestRunStartedAfterInterruptionIsInterrupted(t *testing.T) {
	interruptRuns()
	defer func() { active.Lock(); active.stopping = false; active.Unlock() }()
	r := &Run{}
	r.setActive(true)
	defer r.setActive(false)
	assert.True(t, r.Interrupted())
	ran := false
	r.Cleanup(func() { ran = true })
	assert.True(t, ran)
}

// A Pipeline's Logger becomes the default logger (Main calls useLogger
// after Beam has installed its own); without one, Beam's stays.
func TestLoggerReplacesBeams(t *testing.T) {
	prev := slog.Default()
	t.Cleanup(func() { slog.SetDefault(prev) })
	beams := slog.New(slog.NewTextHandler(io.Discard, nil))
	slog.SetDefault(beams)
	Pipeline{}.useLogger()
	assert.Same(t, beams, slog.Default())
	var buf bytes.Buffer
	mine := slog.New(slog.NewJSONHandler(&buf, nil))
	Pipeline{Logger: mine}.useLogger()
	assert.Same(t, mine, slog.Default())
	slog.Info("right fitting", "pipeline", "p")
	assert.Contains(t, buf.String(), `"msg":"right fitting","pipeline":"p"`)
}
