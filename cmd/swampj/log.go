package main

import (
	"context"
	"log/slog"
	"strings"
)

// logger is the *slog.Logger the library calls get (their Logger option).
// Records at level Warn and above are printed exactly as p.warn prints a
// warning, so stderr carries what it always carried; under --verbose the
// debug records (the executor's steps: intent, step, kind, path, what the
// observation said, what was done) follow on stderr through slog's text
// handler, or its JSON handler under --json.
func (p *printer) logger() *slog.Logger {
	h := &cliHandler{p: p}
	if p.verbose {
		opts := &slog.HandlerOptions{Level: slog.LevelDebug}
		if p.json {
			h.debug = slog.NewJSONHandler(p.stderr, opts)
		} else {
			h.debug = slog.NewTextHandler(p.stderr, opts)
		}
	}
	return slog.New(h)
}

// cliHandler routes records: warnings to printer.warn, the rest (under
// --verbose only) to debug.
type cliHandler struct {
	p     *printer
	debug slog.Handler // nil: records below Warn are dropped
	attrs []slog.Attr  // WithAttrs, for the warning line
}

func (h *cliHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || (h.debug != nil && h.debug.Enabled(ctx, l))
}

func (h *cliHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		if h.debug == nil {
			return nil
		}
		var err error
		h.p.aboveProgress(func() { err = h.debug.Handle(ctx, r) })
		return err
	}
	var b strings.Builder
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.p.warn(b.String())
	return nil
}

func (h *cliHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	if h.debug != nil {
		c.debug = h.debug.WithAttrs(attrs)
	}
	return &c
}

func (h *cliHandler) WithGroup(name string) slog.Handler {
	c := *h
	if h.debug != nil {
		c.debug = h.debug.WithGroup(name)
	}
	return &c
}
