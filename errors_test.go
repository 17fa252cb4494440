package swampj_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/recover"
)

// TestErrBusyMatchesEveryRetryLater: the three "someone else holds it"
// errors, each produced for real, all match the one sentinel (and its
// re-export in recover), and keep their own classes.
func TestErrBusyMatchesEveryRetryLater(t *testing.T) {
	dir := t.TempDir()
	busy := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, swampj.ErrBusy) || !errors.Is(err, recover.ErrBusy) {
			t.Errorf("%s: want errors.Is ErrBusy, got %T %v", what, err, err)
		}
		// A library message says what happened; the CLI adds the flag.
		if m := err.Error(); strings.Contains(m, "--") || strings.Contains(m, "'swampj ") || strings.Contains(m, "`swamp") {
			t.Errorf("%s: the message names a CLI command or flag: %s", what, m)
		}
	}

	// The journal lock, held by another open journal.
	jp := filepath.Join(dir, "_journal.db")
	j, err := journal.Open(nil, jp, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = journal.Open(nil, jp, journal.Options{LockTimeout: 50 * time.Millisecond})
	_ = j.Close()
	if !errors.Is(err, journal.ErrLockTimeout) {
		t.Fatalf("want a journal lock timeout, got %v", err)
	}
	busy("journal lock", err)

	// A swamp lock file held by a live holder.
	lp := filepath.Join(dir, "lock.json")
	held, err := lock.Acquire(context.Background(), nil, lp, lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = lock.Acquire(context.Background(), nil, lp, lock.Options{Timeout: 50 * time.Millisecond, InitialBackoff: 10 * time.Millisecond})
	_ = held.Release()
	if !errors.Is(err, lock.ErrTimeout) {
		t.Fatalf("want a swamp lock timeout, got %v", err)
	}
	busy("swamp lock", err)

	// SQLite's own busy error, from a write against a held write lock.
	cp := filepath.Join(dir, "_catalog.db")
	holder, err := sql.Open("sqlite", cp)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	holder.SetMaxOpenConns(1)
	if _, err := holder.Exec(`CREATE TABLE t(x); BEGIN IMMEDIATE; INSERT INTO t VALUES(1)`); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", cp+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, serr := other.Exec(`INSERT INTO t VALUES(2)`)
	if serr == nil {
		t.Fatal("a second writer got through a held write lock")
	}
	dbErr := &catalog.DBError{Op: "upsert", Path: cp, Err: serr}
	if catalog.ErrorCode(dbErr) != catalog.CodeBusy {
		t.Fatalf("code %q for %v", catalog.ErrorCode(dbErr), serr)
	}
	busy("catalog", dbErr)
	if other := (&catalog.DBError{Op: "open", Path: cp, Err: errors.New("disk I/O error")}); errors.Is(other, swampj.ErrBusy) {
		t.Fatal("a catalog error that is not busy matched ErrBusy")
	}
}
