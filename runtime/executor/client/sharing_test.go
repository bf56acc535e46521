package client

import (
	"context"
	"log/slog"
	"sync"
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

// records captures the log/slog records made while it is the default
// logger (until the test ends).
func records(t *testing.T) *[]slog.Record {
	var mu sync.Mutex
	var got []slog.Record
	prev := slog.Default()
	slog.SetDefault(slog.New(handlerFunc(func(r slog.Record) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
	})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &got
}

type handlerFunc func(slog.Record)

func (h handlerFunc) Enabled(context.Context, slog.Level) bool      { return true }
func (h handlerFunc) Handle(_ context.Context, r slog.Record) error { h(r); return nil }
func (h handlerFunc) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h handlerFunc) WithGroup(string) slog.Handler                 { return h }

// attrs is a record's attributes as text.
func attrs(r slog.Record) map[string]string {
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	return m
}

// A setting that is ignored says so through log/slog, as a warning naming
// the setting and its value, so that a program routes or silences it with
// the rest of its diagnostics.
func TestIgnoredSettingsAreLogged(t *testing.T) {
	got := records(t)
	t.Setenv(EnvMaxArena, "lots")
	t.Setenv(EnvCallFloor, "-3s")
	t.Cleanup(func() { SetSharingSource(nil) })
	SetSharingSource(func() string { return "nonsense" })
	sharedConfig("/x")
	require.Len(t, *got, 3)
	for _, r := range *got {
		assert.Equal(t, slog.LevelWarn, r.Level)
		assert.Contains(t, r.Message, "ignoring")
	}
	byVar := map[string]string{}
	for _, r := range *got {
		a := attrs(r)
		byVar[a["variable"]+a["option"]] = a["value"] + a["error"]
	}
	assert.Equal(t, "lots", byVar[EnvMaxArena])
	assert.Equal(t, "-3s", byVar[EnvCallFloor])
	assert.Contains(t, byVar[OptionSharing], "nonsense")
}
