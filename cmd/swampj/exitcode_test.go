package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	swampjerr "github.com/swampj/swampj"
	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/doctor/cache"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
	"github.com/swampj/swampj/recover"
)

// TestClassifyWhereAChainHoldsSeveral: the exit code and --json code of
// error chains that hold more than one coded error or a failure of the
// system under a coded error, as the commands return them. The outermost
// coded error decides, and an error that only says where something failed
// (a write, a repair, a migration) gives way to what failed.
func TestClassifyWhereAChainHoldsSeveral(t *testing.T) {
	wrapped := func(err error) error { return fmt.Errorf("doing it: %w", err) }
	for _, c := range []struct {
		name string
		err  error
		exit int
		code string
	}{
		{"a bare error", errors.New("x"), exitFailure, "failed"},
		{"a full disk under a write", &write.WriteFailedError{Err: wrapped(syscall.ENOSPC)}, exitFailure, "no_space"},
		{"an I/O error under a repair", &doctor.RepairError{Err: syscall.EIO}, exitFailure, "io_error"},
		{"a conflict under a repair", &doctor.RepairError{Err: wrapped(swampjerr.ErrConflict)}, exitFailure, "conflict"},
		{"a repair that failed", &doctor.RepairError{Err: errors.New("x")}, exitFailure, "repair_failed"},
		{"a catalog error under a repair", &doctor.RepairError{Err: &catalog.DBError{Err: errors.New("x"), Path: "/nonexistent/c.db"}},
			exitFailure, "repair_failed"},
		{"an interruption under a migration", &migrate.MigrateFailedError{Err: context.Canceled}, exitInterrupted, "interrupted"},
		{"a rename across file systems", wrapped(syscall.EXDEV), exitFailure, "cross_device"},
		{"an I/O error under a damaged catalog", &catalog.CorruptError{Err: syscall.EIO}, exitFailure, "io_error"},
		{"a damaged catalog", &catalog.CorruptError{Err: errors.New("not a database")}, exitFailure, catalog.CodeCorrupt},
		{"the journal lock under a write", &write.WriteFailedError{Err: &journal.LockTimeoutError{}}, exitLockTimeout, "lock_timeout"},
		{"a swamp lock held", wrapped(&lock.TimeoutError{}), exitLockTimeout, "lock_timeout"},
		{"a recovery that timed out on the lock, the config lost",
			&repo.ConfigLostError{Cause: &journal.LockTimeoutError{}}, exitFailure, "config_lost"},
		{"a format the marker refuses", wrapped(&repo.FormatUnsupportedError{}), exitFormat, repo.CodeFormatUnsupported},
		{"read-only media under recovery", &recover.PendingError{Media: &journal.MediaError{Err: syscall.EROFS}}, exitFailure, "read_only_media"},
		{"an unreadable input", &fsx.SourceError{Err: syscall.EIO}, exitFailure, "input_unreadable"},
		{"an interrupted input", &fsx.SourceError{Err: context.Canceled}, exitInterrupted, "interrupted"},
		{"an invalid address in a write", &write.InvalidWriteError{Err: &repo.AddressError{}}, exitFailure, "invalid_address"},
		{"an invalid write", &write.InvalidWriteError{Err: errors.New("x")}, exitFailure, "invalid_input"},
		{"a command's own code over a conflict", withCode("partial_migration", exitFailure, wrapped(swampjerr.ErrConflict)), exitFailure, "partial_migration"},
		{"a command that cannot be started", withCode("command_not_started", 127, errors.New("x")), 127, "command_not_started"},
		{"a refused permission", wrapped(syscall.EACCES), exitFailure, codePermission},
		{"a bucket lock held", &cache.LockError{Err: wrapped(remote.ErrLockBusy)}, exitLockTimeout, "lock_timeout"},
		{"a bucket that cannot be used", &cache.LockError{Err: &remote.AccessError{Kind: "bucket_missing", Err: errors.New("x")}},
			exitFailure, "bucket_missing"},
		{"no program to reach the bucket with", fmt.Errorf("%w; %q was not run", &remote.BucketClientMissingError{Err: errors.New("x")}, "swamp"),
			exitFailure, "bucket_client_missing"},
	} {
		if exit, code := classify(c.err); exit != c.exit || code != c.code {
			t.Errorf("%s: classify = %d %s, want %d %s", c.name, exit, code, c.exit, c.code)
		}
	}
}
