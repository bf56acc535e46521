package launch

import (
	"context"
	"log"
	"log/slog"
	"os"
	"sync/atomic"
)

// The launcher's diagnostics, and prism's, go through log/slog's default
// logger, so that a program routes or silences them with its own
// (slog.SetDefault; job.Pipeline.Logger).

// slogInitial is log/slog's own default handler, the one in place before
// any slog.SetDefault (Beam's initialisation installs another). It writes
// through package log, which slog.SetDefault points at the handler it
// installs: a handler that wraps it would then call itself, so the
// launcher wraps a text handler on stderr instead.
var slogInitial = slog.Default().Handler()

// defaultHandler is the default logger's handler, or a text handler on
// stderr where that is slogInitial (see there).
func defaultHandler() slog.Handler {
	h := slog.Default().Handler()
	if h == slogInitial {
		return slog.NewTextHandler(os.Stderr, nil)
	}
	return h
}

// setDefault makes l the default logger and returns what puts back the
// one before. slog.SetDefault points package log at the handler it
// installs, and does not point it back when it is given slog's own handler
// again: the function puts package log back as it was too.
func setDefault(l *slog.Logger) (restore func()) {
	prev := slog.Default()
	out, flags := log.Writer(), log.Flags()
	slog.SetDefault(l)
	return func() {
		slog.SetDefault(prev)
		log.SetOutput(out)
		log.SetFlags(flags)
	}
}

// withPrismLogger runs start, which starts prism's job server, with
// prismHandler as the default logger's handler. Prism's job server keeps
// the default logger it finds when it starts (jobservices.NewServer:
// "logger: slog.Default()"), for every job of the process: without this,
// its lines (a worker process that ended, a job that is done) would go
// where the default logger went then, past a later slog.SetDefault.
func withPrismLogger(start func() error) error {
	restore := setDefault(slog.New(&prismHandler{fallback: defaultHandler()}))
	defer restore()
	return start()
}

// prismJobDone is set when prism says that a job's pipeline is done, and
// cleared when a rehearsal starts one: prism then stops the job's worker
// processes.
var prismJobDone atomic.Bool

// prismHandler is the handler of prism's logger. It hands each record to
// the default logger's handler when the record is made (with the
// attributes and groups given to it applied there), so that prism's lines
// go where the program's diagnostics go; while it is itself the default
// (prism starting), it hands them to fallback. It lowers to Debug one line
// that is harmless: see workerKilledAtEnd.
type prismHandler struct {
	fallback slog.Handler
	ops      []func(slog.Handler) slog.Handler
}

func (h *prismHandler) target() slog.Handler {
	t := slog.Default().Handler()
	if _, self := t.(*prismHandler); self {
		t = h.fallback
	}
	for _, op := range h.ops {
		t = op(t)
	}
	return t
}

// Enabled is true for every level: a record lowered to Debug is decided
// in Handle.
func (h *prismHandler) Enabled(ctx context.Context, l slog.Level) bool { return true }

func (h *prismHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == prismPipelineDone {
		prismJobDone.Store(true)
	}
	if prismJobDone.Load() && workerKilledAtEnd(r) {
		r = lowered(r, "after the job, prism stops its worker processes with SIGKILL")
	}
	t := h.target()
	if !t.Enabled(ctx, r.Level) {
		return nil
	}
	return t.Handle(ctx, r)
}

func (h *prismHandler) with(op func(slog.Handler) slog.Handler) *prismHandler {
	ops := append(append([]func(slog.Handler) slog.Handler{}, h.ops...), op)
	return &prismHandler{fallback: h.fallback, ops: ops}
}

func (h *prismHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.with(func(t slog.Handler) slog.Handler { return t.WithAttrs(as) })
}

func (h *prismHandler) WithGroup(name string) slog.Handler {
	return h.with(func(t slog.Handler) slog.Handler { return t.WithGroup(name) })
}

// What prism (Beam v2.77.0, runners/prism/internal) logs when a job's
// bundles are all done (execute.go, executePipeline), and when a PROCESS
// environment's command ends with an error (environments.go,
// processEnvironment).
const (
	prismPipelineDone  = "pipeline done!"
	prismProcessFailed = "process failed while running"
)

// workerKilledAtEnd reports whether r is prism's "process failed while
// running" of a worker process killed by a signal. Once a job is done,
// prism cancels its context, which kills each PROCESS environment's
// command (exec.CommandContext: SIGKILL), and logs that at level ERROR for
// every worker of a job that succeeded: harmless then, so lowered to
// Debug. Before the job is done, the same line is a worker that died (the
// OOM killer, say), and stays an error.
func workerKilledAtEnd(r slog.Record) bool {
	if r.Message != prismProcessFailed {
		return false
	}
	killed := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "error" && a.Value.String() == "signal: killed" {
			killed = true
		}
		return !killed
	})
	return killed
}

// lowered is r at level Debug, with why it is harmless.
func lowered(r slog.Record, why string) slog.Record {
	out := slog.NewRecord(r.Time, slog.LevelDebug, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	out.AddAttrs(slog.String("harmless", why))
	return out
}
