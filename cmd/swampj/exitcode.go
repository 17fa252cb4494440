package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// Exit codes. Scripts should treat any other non-zero code as failure.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitLockTimeout = 75 // EX_TEMPFAIL, as swamp uses for its lock timeout
	exitInterrupted = 130
)

// codedError lets a command attach a stable code to an error it builds
// itself (collision, conflict, drift).
type codedError struct {
	code string
	exit int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

func withCode(code string, exit int, err error) error {
	return &codedError{code: code, exit: exit, err: err}
}

func usageErr(err error) error { return withCode("usage", exitUsage, err) }

// classify is the one place that maps an error to an exit code and a stable
// error code for --json.
func classify(err error) (exit int, code string) {
	var ce *codedError
	var conflict *ops.ConflictError
	var step *ops.StepError
	var src *fsx.SourceError
	var notFound *journal.NotFoundError
	var openIntents *ops.OpenIntentsError
	var unreadable *store.UnreadableError
	var dataNotFound *ops.DataNotFoundError
	var invalidWrite *ops.InvalidWriteError
	var inputChanged *ops.InputChangedError
	var media *journal.MediaError
	switch {
	case errors.As(err, &ce):
		return ce.exit, ce.code
	case errors.Is(err, journal.ErrLockTimeout), errors.Is(err, lock.ErrTimeout):
		return exitLockTimeout, "lock_timeout"
	case errors.Is(err, context.Canceled):
		return exitInterrupted, "interrupted"
	case errors.Is(err, journal.ErrCorrupt):
		return exitFailure, "journal_corrupt"
	case errors.As(err, &media):
		return exitFailure, media.Code()
	case errors.Is(err, syscall.EROFS):
		return exitFailure, codeReadOnly
	case errors.As(err, &notFound), errors.As(err, &dataNotFound):
		return exitFailure, "not_found"
	case errors.As(err, &unreadable):
		return exitFailure, "unreadable_version"
	case errors.As(err, &inputChanged):
		return exitFailure, "input_changed"
	case errors.As(err, &conflict):
		return exitFailure, "conflict"
	case errors.Is(err, repo.ErrNotARepo):
		return exitFailure, "not_a_repo"
	case errors.Is(err, repo.ErrInvalidNamespace):
		return exitFailure, "invalid_namespace"
	case errors.Is(err, repo.ErrInvalidAddress):
		return exitFailure, "invalid_address"
	case errors.Is(err, repo.ErrOutsideDataRoot):
		return exitFailure, "outside_data_root"
	case errors.Is(err, repo.ErrUnsupportedDatastore):
		return exitFailure, "unsupported_datastore"
	case errors.Is(err, repo.ErrConfig):
		return exitFailure, "config_invalid"
	case errors.As(err, &invalidWrite):
		return exitFailure, "invalid_input"
	case errors.As(err, &src):
		return exitFailure, "input_unreadable"
	case errors.Is(err, syscall.ENOSPC):
		return exitFailure, "no_space"
	case errors.Is(err, syscall.EXDEV):
		return exitFailure, "cross_device"
	case errors.Is(err, syscall.EIO):
		return exitFailure, "io_error"
	case errors.As(err, &step):
		return exitFailure, "step_failed"
	case errors.As(err, &openIntents):
		return exitFailure, openIntents.Code()
	case catalog.ErrorCode(err) == catalog.CodeBusy:
		// Another process held the catalog past busy_timeout: retry later.
		return exitLockTimeout, catalog.CodeBusy
	case catalog.ErrorCode(err) != "":
		return exitFailure, catalog.ErrorCode(err)
	case errors.Is(err, ops.ErrBusy):
		// Any other "someone else holds it": retry later.
		return exitLockTimeout, "busy"
	}
	if c, ok := err.(interface{ Code() string }); ok {
		return exitFailure, c.Code()
	}
	return exitFailure, "failed"
}

// codeReadOnly is the error code of a write refused by read-only media.
const codeReadOnly = "read_only_media"

// report prints err on stderr and returns its exit code.
func report(stderr io.Writer, asJSON bool, err error) int {
	exit, code := classify(err)
	msg := err.Error()
	if code == codeReadOnly && !strings.Contains(msg, "read-only (EROFS)") {
		// A write refused below the journal (a lock file, a data file).
		msg += " (the file system is read-only (EROFS): this command changes the repo and must run where it can be written; " +
			"'swampj recover --dry-run', 'swampj journal list', 'swampj doctor' and 'swampj catalog verify' work on read-only media)"
	}
	msg += cliHint(err, code, msg)
	if asJSON {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": msg, "exitCode": exit}})
		fmt.Fprintln(stderr, string(b))
		return exit
	}
	fmt.Fprintf(stderr, "swampj: error: %s\n", msg)
	if exit == exitUsage {
		fmt.Fprintln(stderr, "Run 'swampj --help' for usage.")
	}
	return exit
}

// cliHint is what the CLI adds to a library error: the command or flag to
// use. The library packages say what happened and never name a command or
// flag; the advice on how to act on it through this CLI lives here, keyed by
// error type or code. msg is the message so far (a hint already there, from
// a wrapping command, is not repeated).
func cliHint(err error, code, msg string) string {
	add := func(h string) string {
		if strings.Contains(msg, h) {
			return ""
		}
		return h
	}
	switch {
	case errors.Is(err, repo.ErrNotARepo):
		return add("; run inside a swamp repo or pass --repo DIR")
	}
	return ""
}
