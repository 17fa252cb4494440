package ops

import "log/slog"

// discard is the logger of a nil Logger option.
var discard = slog.New(slog.DiscardHandler)

// loggerOr is l, or a logger that drops everything when l is nil.
func loggerOr(l *slog.Logger) *slog.Logger {
	if l == nil {
		return discard
	}
	return l
}

// warnTo adapts l to the func(string) warnings of journal.Options and
// lock.ReleaseAll: each becomes a record at level Warn.
func warnTo(l *slog.Logger) func(string) {
	l = loggerOr(l)
	return func(msg string) { l.Warn(msg) }
}
