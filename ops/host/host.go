// Package host holds what every command a host calls shares: the file
// system, how long to wait for swampj's journal lock and for swamp's locks,
// the command recorded as the lock holder, and the logger. Each protocol's
// options embed one Common, and the journal session is handed it as is
// (it builds the journal's options from it, in one place).
//
// It lives in a package of its own, below ops and the protocols, because
// the journal session (ops/internal/session) that reads it is imported by
// ops itself.
package host

import (
	"log/slog"
	"time"

	"github.com/swampj/swampj/fsx"
)

// Common is what every journaled command shares. The zero value is the
// real disk, the default timeouts, no recorded command and no logging.
type Common struct {
	// FS is the file system every file operation goes through (nil: the
	// real disk; tests hand in a fault-injecting one).
	FS fsx.FS
	// JournalLockTimeout bounds the wait for another swampj process
	// holding the journal lock (0: the journal's default, 10 s).
	JournalLockTimeout time.Duration
	// SwampLockTimeout bounds the wait for swamp's locks (0: each command
	// says which default it uses).
	SwampLockTimeout time.Duration
	// Command is recorded as the journal lock holder and in the intent.
	Command []string
	// Logger receives warnings at level Warn and the executor's step
	// records at level Debug (nil: nothing is logged).
	Logger *slog.Logger
}

// Disk is FS, or the real disk when FS is nil.
func (c Common) Disk() fsx.FS { return fsx.OrReal(c.FS) }
