// Package swampj holds what every other swampj package shares and nothing
// else: the error interface every package's errors implement (Coded: a
// stable code and a Class), the error classes a host program branches
// on, and the next step an error of a package below the host API names
// (Next, advice.go). It imports nothing of swampj, so every package can implement and
// match against it without an import cycle. Hosts match the classes with
// errors.Is(err, swampj.ErrBusy), and read any error's code and class with
// swampj.CodedOf(err).
//
// The packages themselves, in reading order: fsx (the only door to the
// disk) → journal (intent records, bbolt) → ops/internal/engine (the
// executor) → the protocols, each in its package: ops/write, ops/migrate,
// ops/read, ops/doctor (check and repair), ops/catalogsync (rebuild and
// verify), with ops/report for what they share (progress, remedies,
// problems) → ops (recovery, the entry point every host needs first) →
// recover (the startup hook). catalog is swamp's SQLite catalog; ops/repo,
// ops/meta, ops/store and ops/lock reproduce swamp's on-disk format.
// cmd/swampj is the CLI, a host that imports only the host API
// (docs/design.md, "The host API").
package swampj

import (
	"context"
	"errors"
	"syscall"
)

// Class is what a caller can do about an error: the CLI maps each to its
// exit code, a host branches on it. The set is closed; a new class is a new
// kind of answer, not a new error.
type Class uint8

const (
	// ClassFailed: the operation failed; the error says what is now true
	// on disk and what to do next.
	ClassFailed Class = iota
	// ClassBusy: someone else holds a lock past the timeout; nothing was
	// changed, and the same call later is the fix.
	ClassBusy
	// ClassFormatRefused: the datastore's format marker refuses this
	// swampj; nothing was changed, and running again changes nothing.
	ClassFormatRefused
	// ClassNeedsPerson: what is left can only be fixed by a person.
	ClassNeedsPerson
	// ClassInterrupted: the context was cancelled; whatever had begun is
	// recorded in the journal.
	ClassInterrupted
	// ClassUsage: the call itself was malformed.
	ClassUsage
)

var classNames = [...]string{"failed", "busy", "format_refused", "needs_person", "interrupted", "usage"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown"
}

// Coded is implemented by every error swampj returns on purpose: Code is
// the stable code a script reads (the CLI's --json "code"), Class what can
// be done about it. errors.As(err, &coded) finds the outermost one in a
// chain, and that one decides: an error that only says where a failure
// happened (a step, a repair) reports the code and class of what failed
// below it when that has one (see CauseOf).
type Coded interface {
	error
	Code() string
	Class() Class
}

// Error is a sentinel error with its code and class: every package's
// sentinel errors are of this type, so each code is declared once, beside
// its sentinel. Typed errors implement Coded with methods of their own.
type Error struct {
	msg, code string
	class     Class
}

// NewError is a sentinel error of class ClassFailed with message msg and
// code code.
func NewError(code, msg string) *Error { return &Error{msg: msg, code: code} }

// NewClassError is a sentinel error of class class.
func NewClassError(class Class, code, msg string) *Error {
	return &Error{msg: msg, code: code, class: class}
}

func (e *Error) Error() string { return e.msg }

// Code is the stable code of the sentinel.
func (e *Error) Code() string { return e.code }

// Class is what can be done about it.
func (e *Error) Class() Class { return e.class }

// CodedOf is the Coded error that decides what err is: the outermost
// Coded error in its chain or, where none says more, a failure of the
// system below swampj that has a code of its own (a cancelled context,
// read-only media, a full disk, a rename across file systems, an I/O
// error); nil for anything else. An error that only says where a failure
// happened (a step, a repair) answers with its cause's first (CauseOf).
func CodedOf(err error) Coded {
	var c Coded
	if errors.As(err, &c) {
		return c
	}
	return SystemFailure(err)
}

// CauseOf is what an error that only says where a failure happened (a
// step, a repair) answers with: the Coded error that decides for its cause
// (CodedOf), except that an error of derived state — one whose
// DerivedState method says so: the catalog, which a rebuild makes again —
// does not speak for it; then only a failure of the system under it does,
// and nil leaves the wrapper's own code.
func CauseOf(cause error) Coded {
	var c Coded
	if errors.As(cause, &c) {
		if d, ok := c.(interface{ DerivedState() bool }); !ok || !d.DerivedState() {
			return c
		}
	}
	return SystemFailure(cause)
}

// CodeOr is c's code, or code when c is nil: the Code method of an error
// that answers with what failed under it where that says more (CauseOf,
// SystemFailure, Interruption) and with its own code otherwise.
func CodeOr(c Coded, code string) string {
	if c != nil {
		return c.Code()
	}
	return code
}

// ClassOr is c's class, or class when c is nil (the Class twin of CodeOr).
func ClassOr(c Coded, class Class) Class {
	if c != nil {
		return c.Class()
	}
	return class
}

// SystemFailure is the Coded of the failure below swampj in err's chain
// (see CodedOf), nil when there is none.
func SystemFailure(err error) Coded {
	for _, f := range systemFailures {
		if errors.Is(err, f.cause) {
			return f.coded
		}
	}
	return nil
}

// Interruption is the Coded of a cancelled context when err is one, nil
// otherwise: what an error of the media or of the input answers with when
// the failure under it was only an interruption.
func Interruption(err error) Coded {
	if errors.Is(err, context.Canceled) {
		return systemFailures[0].coded
	}
	return nil
}

// systemFailures are the failures below swampj CodedOf names, in the order
// they win when a chain holds several.
var systemFailures = []struct {
	cause error
	coded *Error
}{
	{context.Canceled, NewClassError(ClassInterrupted, "interrupted", "interrupted")},
	{syscall.EROFS, NewError("read_only_media", "the file system is read-only (EROFS)")},
	{syscall.ENOSPC, NewError("no_space", "no space left on device")},
	{syscall.EXDEV, NewError("cross_device", "a rename across file systems (EXDEV)")},
	{syscall.EIO, NewError("io_error", "an input/output error (EIO)")},
}

// ErrBusy is matched (errors.Is) by every error that means "someone else
// holds it, retry later": the journal lock held by another swampj process
// past the lock timeout (*journal.LockTimeoutError), a swamp lock held past
// swamp's lock timeout (*lock.TimeoutError), the catalog locked by another
// connection past SQLite's busy timeout (catalog code catalog_busy).
// Nothing was changed by the call that returned it; the same call later,
// once the holder is done, is the fix. The CLI exits 75 (EX_TEMPFAIL).
var ErrBusy error = NewClassError(ClassBusy, "lock_timeout", "busy: held by another process, retry later")

// ErrConflict is matched by the error of an operation whose step found the
// disk in neither the state before it nor the state after it (something
// else changed those paths): swampj stopped rather than guess, nothing more
// was changed, and the operation's intent stays open for recovery.
var ErrConflict error = NewError("conflict", "the disk matches neither the state before nor after a step")

// ErrStepFailed is matched by the error of an operation whose step failed
// (the error wraps the cause: ENOSPC, EIO, ...); its intent stays open for
// recovery, which finishes or rolls it back.
var ErrStepFailed error = NewError("step_failed", "a step failed")
