package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"

	swampjerr "github.com/swampj/swampj" // named apart from the tests' swampj helper
	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/read"
	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/ops/store"
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
// error code for --json. The codes are the errors' own (each sentinel is a
// *swampj.Error, each typed error has a Code method): this switch decides
// only which class wins where an error matches several, and the exit code.
// The codes declared here are the CLI's own classes of OS errors.
func classify(err error) (exit int, code string) {
	var ce *codedError
	var src *fsx.SourceError
	var notFound *journal.NotFoundError
	var openIntents *report.OpenIntentsError
	var unreadable *store.UnreadableError
	var dataNotFound *read.DataNotFoundError
	var invalidWrite *write.InvalidWriteError
	var inputChanged *write.InputChangedError
	var media *journal.MediaError
	var lost *repo.ConfigLostError
	var (
		formatUnsupported *repo.FormatUnsupportedError
		markerInvalid     *repo.FormatMarkerInvalidError
		markerUnreadable  *repo.FormatMarkerUnreadableError
	)
	switch {
	case errors.As(err, &ce):
		return ce.exit, ce.code
	case errors.As(err, &formatUnsupported):
		return exitFormat, formatUnsupported.Code()
	case errors.As(err, &markerInvalid):
		return exitFormat, markerInvalid.Code()
	case errors.As(err, &markerUnreadable):
		return exitFormat, markerUnreadable.Code()
	case errors.As(err, &lost):
		return exitFailure, lost.Code()
	case errors.Is(err, journal.ErrLockTimeout):
		return exitLockTimeout, codeOf(journal.ErrLockTimeout)
	case errors.Is(err, lock.ErrTimeout):
		return exitLockTimeout, codeOf(lock.ErrTimeout)
	case errors.Is(err, context.Canceled):
		return exitInterrupted, codeInterrupted
	case errors.Is(err, journal.ErrCorrupt):
		return exitFailure, codeOf(journal.ErrCorrupt)
	case errors.As(err, &media):
		return exitFailure, media.Code()
	case errors.Is(err, syscall.EROFS):
		return exitFailure, codeReadOnly
	case errors.As(err, &notFound):
		return exitFailure, notFound.Code()
	case errors.As(err, &dataNotFound):
		return exitFailure, dataNotFound.Code()
	case errors.As(err, &unreadable):
		return exitFailure, unreadable.Code()
	case errors.As(err, &inputChanged):
		return exitFailure, inputChanged.Code()
	case errors.Is(err, swampjerr.ErrConflict):
		return exitFailure, codeOf(swampjerr.ErrConflict)
	}
	for _, sentinel := range []error{repo.ErrNotARepo, repo.ErrInvalidNamespace, repo.ErrInvalidAddress,
		repo.ErrOutsideDataRoot, repo.ErrUnsupportedDatastore, repo.ErrConfig} {
		if errors.Is(err, sentinel) {
			return exitFailure, codeOf(sentinel)
		}
	}
	switch {
	case errors.As(err, &invalidWrite):
		return exitFailure, invalidWrite.Code()
	case errors.As(err, &src):
		return exitFailure, src.Code()
	case errors.Is(err, syscall.ENOSPC):
		return exitFailure, codeNoSpace
	case errors.Is(err, syscall.EXDEV):
		return exitFailure, (*migrate.CrossDeviceError)(nil).Code()
	case errors.Is(err, syscall.EIO):
		return exitFailure, codeIOError
	case errors.Is(err, swampjerr.ErrStepFailed):
		return exitFailure, codeOf(swampjerr.ErrStepFailed)
	case errors.As(err, &openIntents):
		return exitFailure, openIntents.Code()
	case catalog.ErrorCode(err) == catalog.CodeBusy:
		// Another process held the catalog past busy_timeout: retry later.
		return exitLockTimeout, catalog.CodeBusy
	case catalog.ErrorCode(err) != "":
		return exitFailure, catalog.ErrorCode(err)
	case errors.Is(err, swampjerr.ErrBusy):
		// Any other "someone else holds it": retry later.
		return exitLockTimeout, codeOf(swampjerr.ErrBusy)
	}
	if c, ok := err.(interface{ Code() string }); ok {
		return exitFailure, c.Code()
	}
	if errors.Is(err, fs.ErrPermission) {
		return exitFailure, codePermission
	}
	return exitFailure, codeFailed
}

// codeOf is a sentinel's own code (every sentinel is a *swampj.Error).
func codeOf(sentinel error) string { return sentinel.(interface{ Code() string }).Code() }

// The CLI's own codes: OS errors and outcomes no package names.
const (
	codeInterrupted = "interrupted"
	codeNoSpace     = "no_space"
	codeIOError     = "io_error"
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
		var lost *remote.LossError
		if errors.As(err, &lost) {
			doc["lost"] = lost.Lost // what the bucket lost, one object each
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
	var (
		swampLock    *lock.TimeoutError
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
	case remoteLockErr(err):
		return add("; run 'swampj doctor --repair --confirm' again when the lock is free (a longer --lock-timeout waits out a dead holder's lock)")
	case remoteRollbackFailed(err):
		return add("; run 'swampj recover'")
	case errors.As(err, &named) && errors.Is(err, repo.ErrNotARepo):
		return add("; " + named.from + " names the repo's root, the directory holding .swamp.yaml (its parents are not searched)")
	case errors.Is(err, repo.ErrNotARepo):
		return add("; run inside a swamp repo or pass --repo DIR")
	case errors.Is(err, journal.ErrLockTimeout):
		return add(", or raise --lock-timeout")
	case errors.As(err, &swampLock):
		h := " (SWAMP_LOCK_TIMEOUT_MS sets how long to wait)"
		if swampLock.Holder != nil {
			h = "; `swamp datastore lock status` inspects it (`swamp datastore lock release --force` only if that process is gone)"
		}
		return add(h)
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

// journalOrDataHint is cliHint for the errors of recovery, the journal,
// reads and the catalog (the second half of its cases, in its order).
func journalOrDataHint(err error, add func(string) string) string {
	const roCommands = "'swampj recover --dry-run', 'swampj journal list', 'swampj doctor' and 'swampj catalog verify'"
	const migrateCommand = "'swampj datastore namespace migrate --confirm'"
	var (
		pending      *recover.PendingError
		media        *journal.MediaError
		jcorrupt     *journal.CorruptError
		jnotFound    *journal.NotFoundError
		notAFile     *journal.NotAFileError
		ccorrupt     *catalog.CorruptError
		cforeign     *catalog.ForeignSchemaError
		noModel      *read.ModelNotFoundError
		cmissing     *catalog.MissingError
		moveAside    *catalog.MoveAsideError
		openIntents  *report.OpenIntentsError
		dataNotFound *read.DataNotFoundError
		unreadable   *read.UnreadableDataError
		unmigrated   *catalogsync.UnmigratedError
		unmigratedW  *write.UnmigratedWriteError
		lockChanged  *lock.ChangedError
		noNamespace  *migrate.NoNamespaceError
	)
	switch {
	case errors.As(err, &pending):
		return add(". Run 'swampj recover' there; 'swampj recover --dry-run' shows what it would do")
	case errors.As(err, &media):
		switch {
		case media.ReadOnly():
			return add("; " + roCommands + " work on read-only media")
		case media.Reading():
			return "" // they would fail the same way
		}
		// The message already says inspection only needs to read: name
		// the commands.
		return add(" (" + roCommands + ")")
	case errors.As(err, &jcorrupt):
		if jcorrupt.ReadOnly {
			return add(". Run 'swampj recover' where the repo can be written")
		}
		if jcorrupt.MovedTo != "" {
			return add(". Verify the catalog with 'swampj catalog verify'")
		}
	case errors.As(err, &jnotFound):
		return add(" (run 'swampj journal list --all')")
	case errors.As(err, &notAFile):
		return add(" ('swampj recover' then has nothing to do)")
	case errors.Is(err, swampjerr.ErrConflict):
		return add(": run 'swampj recover' (or 'swampj recover --rollback')")
	case errors.As(err, &openIntents):
		return add(". Run 'swampj recover' first")
	case errors.As(err, &lockChanged):
		return add(" ('swampj doctor')")
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
	case errors.As(err, &ccorrupt), errors.As(err, &cmissing):
		return add(": run `swampj catalog rebuild --confirm`")
	case errors.As(err, &moveAside):
		return add(": run `swampj catalog rebuild --confirm` again")
	case errors.As(err, &cforeign):
		return add(" (`swampj catalog rebuild --confirm`). Inspect it first with `swampj catalog verify --json` (read-only)")
	case errors.As(err, &noModel):
		return add("; 'swampj data list' lists the models with data")
	}
	return ""
}
