// Package swampj holds what every other swampj package shares and nothing
// else: the error classes a host program branches on. It imports nothing of
// swampj, so journal, ops/lock and catalog can all match against it without
// an import cycle. Hosts match them with errors.Is(err, swampj.ErrBusy).
//
// The packages themselves, in reading order: fsx (the only door to the
// disk) → journal (intent records, bbolt) → ops/internal/engine (the
// executor) → the protocols, each in its package: ops/write, ops/migrate,
// ops/read, ops/doctor (check and repair), ops/catalogsync (rebuild and
// verify), with ops/report for what they share (progress, remedies,
// problems) → ops (recovery, the entry point every host needs first) →
// recover (the startup hook). catalog is swamp's SQLite catalog; ops/repo,
// ops/meta, ops/store and ops/lock reproduce swamp's on-disk format.
// cmd/swampj is the CLI.
package swampj

// Error is an error class with the stable code a script reads (the CLI's
// --json "code"): every package's sentinel errors are of this type, so
// each code is declared once, beside its sentinel. Typed errors carry
// theirs as a Code method of their own.
type Error struct{ msg, code string }

// NewError is a sentinel error with message msg and code code.
func NewError(code, msg string) *Error { return &Error{msg: msg, code: code} }

func (e *Error) Error() string { return e.msg }

// Code is the stable code of the class.
func (e *Error) Code() string { return e.code }

// ErrBusy is matched (errors.Is) by every error that means "someone else
// holds it, retry later": the journal lock held by another swampj process
// past the lock timeout (*journal.LockTimeoutError), a swamp lock held past
// swamp's lock timeout (*lock.TimeoutError), the catalog locked by another
// connection past SQLite's busy timeout (catalog code catalog_busy).
// Nothing was changed by the call that returned it; the same call later,
// once the holder is done, is the fix. The CLI exits 75 (EX_TEMPFAIL).
var ErrBusy error = NewError("lock_timeout", "busy: held by another process, retry later")

// ErrConflict is matched by the error of an operation whose step found the
// disk in neither the state before it nor the state after it (something
// else changed those paths): swampj stopped rather than guess, nothing more
// was changed, and the operation's intent stays open for recovery.
var ErrConflict error = NewError("conflict", "the disk matches neither the state before nor after a step")

// ErrStepFailed is matched by the error of an operation whose step failed
// (the error wraps the cause: ENOSPC, EIO, ...); its intent stays open for
// recovery, which finishes or rolls it back.
var ErrStepFailed error = NewError("step_failed", "a step failed")
