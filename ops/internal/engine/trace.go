package engine

import (
	"context"
	"log/slog"

	"github.com/swampj/swampj/journal"
)

// trace writes the executor's debug records: one when an intent starts
// being driven, one per step (what the observation said and what was done
// about it), one when the intent is settled. Every record carries the
// intent id, so the records of one run can be told apart from those of
// interrupted intents finished on the way. When the logger does not
// record debug, nothing is built.
type trace struct {
	ctx context.Context
	log *slog.Logger
	in  *journal.Intent
	// held: records made while the intent's commit is in flight (its id
	// is not known yet, DriveRecording); emitted by release.
	hold bool
	held []func()
}

// emit writes a record now, or once the intent's id is known.
func (t *trace) emit(f func()) {
	if t.hold {
		t.held = append(t.held, f)
		return
	}
	f()
}

// release writes the held records (the intent is recorded, or will not be).
func (t *trace) release() {
	if t == nil || !t.hold {
		return
	}
	t.hold = false
	for _, f := range t.held {
		f()
	}
	t.held = nil
}

// newTrace is the trace of one Drive of in; nil when env.Log is nil or
// does not record debug.
func newTrace(ctx context.Context, env *Env, in *journal.Intent) *trace {
	if env.Log == nil || !env.Log.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	return &trace{ctx: ctx, log: env.Log, in: in}
}

func (t *trace) start(dir journal.Direction) {
	if t == nil {
		return
	}
	t.emit(func() {
		t.log.LogAttrs(t.ctx, slog.LevelDebug, "intent",
			slog.Uint64("intent", t.in.ID), slog.String("kind", t.in.Kind), slog.String("summary", t.in.Summary),
			slog.String("direction", string(dir)), slog.Int("steps", len(t.in.Steps)))
	})
}

// step records step i: its kind and paths, the observation and its
// detail, and the outcome ("applied", "undone", "in place", "nothing to
// undo", "skipped: catalog stale", "conflict", "failed").
func (t *trace) step(i int, s *journal.Step, obs Observation, detail, outcome string) {
	if t == nil {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.Int("step", i+1), slog.String("kind", s.Kind))
	if s.Path != "" {
		attrs = append(attrs, slog.String("path", s.Path))
	}
	if s.To != "" {
		attrs = append(attrs, slog.String("to", s.To))
	}
	attrs = append(attrs, slog.String("observed", obs.String()))
	if detail != "" {
		attrs = append(attrs, slog.String("detail", detail))
	}
	attrs = append(attrs, slog.String("outcome", outcome))
	t.emit(func() {
		t.log.LogAttrs(t.ctx, slog.LevelDebug, "step", append([]slog.Attr{slog.Uint64("intent", t.in.ID)}, attrs...)...)
	})
}

func (t *trace) end(res *Result, err error) {
	if t == nil {
		return
	}
	t.release()
	attrs := []slog.Attr{slog.Uint64("intent", t.in.ID), slog.String("status", string(res.Status)),
		slog.String("direction", string(res.Direction)), slog.Int("applied", res.Applied),
		slog.Int("inPlace", res.Skipped), slog.Int("undone", res.Undone), slog.Int("dirFsyncs", res.DirSyncs)}
	if res.CatalogStale != "" {
		attrs = append(attrs, slog.String("catalogStale", res.CatalogStale))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	t.log.LogAttrs(t.ctx, slog.LevelDebug, "intent settled", attrs...)
}
