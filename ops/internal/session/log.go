package session

import "log/slog"

// discard is the logger of a nil Logger option.
var discard = slog.New(slog.DiscardHandler)

// LoggerOr is l, or a logger that drops everything when l is nil.
func LoggerOr(l *slog.Logger) *slog.Logger {
	if l == nil {
		return discard
	}
	return l
}

// WarnTo adapts l to the func(string) warnings of journal.Options and
// lock.ReleaseAll: each becomes a record at level Warn.
func WarnTo(l *slog.Logger) func(string) {
	l = LoggerOr(l)
	return func(msg string) { l.Warn(msg) }
}
