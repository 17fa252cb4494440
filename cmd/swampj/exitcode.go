package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	swampjerr "github.com/swampj/swampj" // named apart from the tests' swampj helper
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/read"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/ops/wrapped"
	"github.com/swampj/swampj/ops/write"
	"github.com/swampj/swampj/recover"
)

// Exit codes. Scripts should treat any other non-zero code as failure.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitManual      = 3  // the doctor left findings only a person can fix
	exitLockTimeout = 75 // EX_TEMPFAIL, as swamp uses for its lock timeout
	// exitFormat: the datastore's format marker refuses it (EX_DATAERR);
	// nothing was changed, and running again changes nothing.
	exitFormat      = 65
	exitInterrupted = 130
)

// exitOf is the exit code of each class of error.
var exitOf = map[swampjerr.Class]int{
	swampjerr.ClassFailed:        exitFailure,
	swampjerr.ClassUsage:         exitUsage,
	swampjerr.ClassNeedsPerson:   exitManual,
	swampjerr.ClassBusy:          exitLockTimeout,
	swampjerr.ClassFormatRefused: exitFormat,
	swampjerr.ClassInterrupted:   exitInterrupted,
}

// codedError lets a command attach a stable code to an error it builds
// itself (collision, conflict, drift). exit is one of exitOf's, or an exit
// code no class has (a command that could not be started: 126, 127).
type codedError struct {
	code string
	exit int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }
func (e *codedError) Code() string  { return e.code }

// Class is the class whose exit code is e's (ClassFailed for one no class
// has; classify uses e.exit itself).
func (e *codedError) Class() swampjerr.Class {
	for c, exit := range exitOf {
		if exit == e.exit {
			return c
		}
	}
	return swampjerr.ClassFailed
}

// bucketLossError is a wrapped command's exit on a bucket that lost
// objects it did not write: --json lists them ("lost").
type bucketLossError struct {
	codedError
	lost any
}

func withCode(code string, exit int, err error) error {
	return &codedError{code: code, exit: exit, err: err}
}

func usageErr(err error) error { return withCode("usage", exitUsage, err) }

// classify maps an error to an exit code and the stable error code for
// --json. The outermost swampj.Coded error of the chain decides, code and
// class (a library error, or the command's own codedError); failures of
// the system below swampj (ENOSPC, EIO, ...) have theirs (swampj.CodedOf).
// The CLI's own: a refused permission nothing says more about, and
// "failed" for everything else.
func classify(err error) (exit int, code string) {
	c := swampjerr.CodedOf(err)
	switch ce := c.(type) {
	case *codedError:
		return ce.exit, ce.code
	case *bucketLossError:
		return ce.exit, ce.code
	}
	switch {
	case c != nil:
		return exitOf[c.Class()], c.Code()
	case errors.Is(err, fs.ErrPermission):
		return exitFailure, codePermission
	}
	return exitFailure, codeFailed
}

// The CLI's own codes: outcomes no package names, and the codes of the
// system's failures (swampj.CodedOf) reportError adds to.
const (
	codeInterrupted = "interrupted"
	codeFailed      = "failed"
	// codeDoctorManual: the doctor left findings only a person can fix.
	codeDoctorManual = "doctor_manual"
)

// codeReadOnly is the error code of a write refused by read-only media.
const codeReadOnly = "read_only_media"

// codePermission is the error code of an operation this user may not do
// (EACCES, EPERM); journal.MediaError and lock.AccessError carry it too.
const codePermission = "permission_denied"

// reportError prints err on stderr and returns its exit code.
func reportError(stderr io.Writer, asJSON bool, err error) int {
	exit, code := classify(err)
	msg := err.Error()
	if code == codeReadOnly && !strings.Contains(msg, "read-only (EROFS)") {
		// A write refused below the journal (a lock file, a data file).
		msg += " (the file system is read-only (EROFS): this command changes the repo and must run where it can be written; " +
			"'swampj recover --dry-run', 'swampj journal list', 'swampj doctor' and 'swampj catalog verify' work on read-only media)"
	}
	if code == codePermission {
		// Who refused whom, unless the error said it already.
		if a := fsx.DescribeAccess(err); a != nil && !strings.Contains(msg, a.Path+" is ") {
			msg += " (" + a.String() + ")"
		}
	}
	if code == codeInterrupted && !strings.Contains(msg, "interrupted") {
		// A bare context.Canceled from below: say what it is, and where
		// whatever had begun now stands.
		msg = "interrupted (" + msg + "); whatever the command had begun is recorded in the journal: " +
			"'swampj journal list' shows an open intent, 'swampj recover' finishes it and 'swampj recover --rollback' undoes it; " +
			"with none open, nothing was changed"
	}
	msg += cliHint(err, code, msg)
	if asJSON {
		// swamp's shape (presentation/output/error_output.ts buildErrorJson):
		// the message under "error", the code beside it; plus the exit code.
		doc := map[string]any{"error": msg, "code": code, "exitCode": exit}
		var lost *bucketLossError
		if errors.As(err, &lost) {
			doc["lost"] = lost.lost // what the bucket lost, one object each
		}
		b, _ := json.Marshal(doc)
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
// flag; the advice on how to act on it through this CLI lives here: for the
// host packages' errors by their type, for the errors of the packages below
// them by the swampj.Next they name (nextHints). msg is the message so far
// (a hint already there, from a wrapping command, is not repeated).
func cliHint(err error, code, msg string) string {
	add := func(h string) string {
		if strings.Contains(msg, h) {
			return ""
		}
		return h
	}
	var (
		runLockBusy  *wrapped.RunLockBusyError
		writeFailed  *write.WriteFailedError
		repairFailed *doctor.RepairError
		unfinished   *migrate.UnfinishedIntentError
		migFailed    *migrate.MigrateFailedError
	)
	var lost *repo.ConfigLostError
	var named *namedRepoError
	switch {
	case errors.As(err, &lost) && lost.Cause == nil && !lost.Recovered:
		return add("; run 'swampj recover' in " + lost.Dir + ", then the command again")
	case errors.As(err, &lost) && lost.Cause != nil:
		return add("; 'swampj recover --dry-run' shows every step of the intent")
	case errors.Is(err, repo.ErrUnsupportedDatastore):
		return add("; write with swamp ('swampj run -- swamp ...' keeps its cache safe around it); 'swampj doctor' checks and repairs the cache")
	case errors.As(err, &runLockBusy):
		return add(" (raise --run-lock-timeout to wait longer)")
	case remoteLockErr(err):
		return add("; run 'swampj doctor --repair --confirm' again when the lock is free (a longer --lock-timeout waits out a dead holder's lock)")
	case remoteRollbackFailed(err):
		return add("; run 'swampj recover'")
	case errors.As(err, &named) && errors.Is(err, repo.ErrNotARepo):
		return add("; " + named.from + " names the repo's root, the directory holding .swamp.yaml (its parents are not searched)")
	case errors.Is(err, repo.ErrNotARepo):
		return add("; run inside a swamp repo or pass --repo DIR")
	case swampjerr.NextIn(err, swampjerr.NextWaitLonger):
		return add(nextHints[swampjerr.NextWaitLonger])
	case swampjerr.NextIn(err, swampjerr.NextInspectSwampLock):
		return add(nextHints[swampjerr.NextInspectSwampLock])
	case swampjerr.NextIn(err, swampjerr.NextWaitLongerForSwampLock):
		return add(nextHints[swampjerr.NextWaitLongerForSwampLock])
	case errors.As(err, &migFailed):
		return add(fmt.Sprintf(": run '%s' again, or 'swampj recover --rollback'", rerunCommand(migFailed.Rerun)))
	case errors.As(err, &writeFailed):
		if writeFailed.RollbackErr != nil {
			return add(". Run 'swampj recover'")
		}
	case errors.As(err, &repairFailed):
		if repairFailed.RollbackErr != nil {
			return add(": run 'swampj recover'")
		}
	case errors.As(err, &unfinished):
		return add(" ('swampj recover --rollback')")
	default:
		return journalOrDataHint(err, add)
	}
	return ""
}

// roCommands are the commands that only read (they work on read-only
// media).
const roCommands = "'swampj recover --dry-run', 'swampj journal list', 'swampj doctor' and 'swampj catalog verify'"

// nextHints are this CLI's commands for the swampj.Next of the errors of
// the packages below the host API (the journal, swamp's catalog, swamp's
// locks).
var nextHints = map[swampjerr.Next]string{
	swampjerr.NextWaitLonger:                ", or raise --lock-timeout",
	swampjerr.NextInspectSwampLock:          "; `swamp datastore lock status` inspects it (`swamp datastore lock release --force` only if that process is gone)",
	swampjerr.NextWaitLongerForSwampLock:    " (SWAMP_LOCK_TIMEOUT_MS sets how long to wait)",
	swampjerr.NextInspectOnReadOnlyMedia:    "; " + roCommands + " work on read-only media",
	swampjerr.NextInspectReadOnly:           " (" + roCommands + ")", // the message already says inspection only needs to read
	swampjerr.NextRecoverWhereWritable:      ". Run 'swampj recover' where the repo can be written",
	swampjerr.NextVerifyCatalog:             ". Verify the catalog with 'swampj catalog verify'",
	swampjerr.NextListAllIntents:            " (run 'swampj journal list --all')",
	swampjerr.NextNothingToRecover:          " ('swampj recover' then has nothing to do)",
	swampjerr.NextCheck:                     " ('swampj doctor')",
	swampjerr.NextRebuildCatalog:            ": run `swampj catalog rebuild --confirm`",
	swampjerr.NextRebuildCatalogAgain:       ": run `swampj catalog rebuild --confirm` again",
	swampjerr.NextInspectCatalogThenRebuild: " (`swampj catalog rebuild --confirm`). Inspect it first with `swampj catalog verify --json` (read-only)",
}

// journalOrDataHint is cliHint for the errors of recovery, the journal,
// reads and the catalog (the second half of its cases, in its order).
func journalOrDataHint(err error, add func(string) string) string {
	const migrateCommand = "'swampj datastore namespace migrate --confirm'"
	var (
		pending      *recover.PendingError
		noModel      *read.ModelNotFoundError
		openIntents  *report.OpenIntentsError
		dataNotFound *read.DataNotFoundError
		unreadable   *read.UnreadableDataError
		unmigrated   *catalogsync.UnmigratedError
		unmigratedW  *write.UnmigratedWriteError
		noNamespace  *migrate.NoNamespaceError
	)
	nextIn := func(n swampjerr.Next) bool { return swampjerr.NextIn(err, n) }
	switch {
	case errors.As(err, &pending):
		return add(". Run 'swampj recover' there; 'swampj recover --dry-run' shows what it would do")
	case nextIn(swampjerr.NextInspectOnReadOnlyMedia):
		return add(nextHints[swampjerr.NextInspectOnReadOnlyMedia])
	case nextIn(swampjerr.NextInspectReadOnly):
		return add(nextHints[swampjerr.NextInspectReadOnly])
	case nextIn(swampjerr.NextRecoverWhereWritable):
		return add(nextHints[swampjerr.NextRecoverWhereWritable])
	case nextIn(swampjerr.NextVerifyCatalog):
		return add(nextHints[swampjerr.NextVerifyCatalog])
	case nextIn(swampjerr.NextListAllIntents):
		return add(nextHints[swampjerr.NextListAllIntents])
	case nextIn(swampjerr.NextNothingToRecover):
		return add(nextHints[swampjerr.NextNothingToRecover])
	case errors.Is(err, swampjerr.ErrConflict):
		return add(": run 'swampj recover' (or 'swampj recover --rollback')")
	case errors.As(err, &openIntents):
		return add(". Run 'swampj recover' first")
	case nextIn(swampjerr.NextCheck):
		return add(nextHints[swampjerr.NextCheck])
	case errors.As(err, &dataNotFound):
		if dataNotFound.Version == 0 {
			return add(" (run 'swampj data list' to see the items on disk)")
		}
	case errors.As(err, &unreadable):
		if unreadable.LastReadable > 0 {
			return add(fmt.Sprintf(" (swampj data get %s --version %d)", unreadable.Address, unreadable.LastReadable))
		}
	case errors.As(err, &unmigrated):
		return add(": run " + migrateCommand + ", then 'swampj catalog rebuild --confirm'")
	case errors.As(err, &unmigratedW):
		return add(": run " + migrateCommand + " first")
	case errors.As(err, &noNamespace):
		if noNamespace.NeedSet {
			return add(" Run 'swampj datastore namespace set <slug>'.")
		}
	case nextIn(swampjerr.NextRebuildCatalog):
		return add(nextHints[swampjerr.NextRebuildCatalog])
	case nextIn(swampjerr.NextRebuildCatalogAgain):
		return add(nextHints[swampjerr.NextRebuildCatalogAgain])
	case nextIn(swampjerr.NextInspectCatalogThenRebuild):
		return add(nextHints[swampjerr.NextInspectCatalogThenRebuild])
	case errors.As(err, &noModel):
		return add("; 'swampj data list' lists the models with data")
	}
	return ""
}
