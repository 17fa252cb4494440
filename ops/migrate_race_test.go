package ops_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/recover"
)

// A write racing a migration: the writer's per-model lock creates
// its parent directories under a path the migration is filling (or has
// emptied) before the writer sees the migration's global lock and backs
// off. Those directories — and the dead lock file a writer that crashed
// there leaves — are debris, not data: recovery in both directions and a
// re-run absorb them.

// writerDebris does what a backing-off writer leaves: its per-model lock
// taken and released (the parents stay), or with dead a lock file whose
// holder is gone (past its TTL).
func writerDebris(t *testing.T, dir, model string, dead bool) string {
	t.Helper()
	base := filepath.Join(dir, ".swamp")
	lp := lock.ModelPath(base, migNS, "command/shell", model)
	l, err := lock.Acquire(migCtx, fsx.Real(), lp, lock.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if dead {
		info := lock.Info{Holder: "u@h", Hostname: "elsewhere", Pid: 1, AcquiredAt: time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond), TTLMs: 30000, Nonce: "n"}
		if err := os.WriteFile(lp, info.Encode(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Dir(lp)
}

func TestMigrationAbsorbsWriterDebris(t *testing.T) {
	cases := []struct {
		name  string
		sc    int    // migCrashScenarios index
		cutAt string // the cut: right after this op kind (its last occurrence with last=true)
		last  bool
		dead  bool
	}{
		{"forward, cut after the intent, empty dirs at the destination", 0, "failpoint:journal.begin", false, false},
		{"forward, cut after the intent, a dead lock at the destination", 0, "failpoint:journal.begin", false, true},
		{"unset --migrate, cut after the last rename, empty dirs at the emptied source", 2, "rename-noreplace", true, false},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			sc := migCrashScenarios()[tc.sc]
			initial := migSnapshot(t, sc.build(t))
			clean := fsx.NewFault(fsx.Real())
			finalDir := sc.build(t)
			migCrashRun(t, sc, finalDir, clean)
			final := migSnapshot(t, finalDir)
			cut := 0
			for _, op := range clean.Trace() {
				if op.Kind == tc.cutAt {
					cut = op.N
					if !tc.last {
						break
					}
				}
			}
			if cut == 0 {
				t.Fatalf("no %s in %s", tc.cutAt, migTraceKinds(clean))
			}
			for _, rollback := range []bool{false, true} {
				dir := sc.build(t)
				migCrashRun(t, sc, dir, fsx.NewFault(fsx.Real()).CrashAfter(cut))
				migRemoveDeadLocks(t, dir)
				writerDebris(t, dir, "m1", tc.dead)
				want := final
				if rollback {
					want = initial
				}
				if _, err := recover.Run(migCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil {
					t.Fatalf("rollback=%v: %v", rollback, err)
				}
				if d := migSnapshot(t, dir).diff(want); len(d) > 0 {
					t.Fatalf("rollback=%v:\n%s", rollback, strings.Join(d, "\n"))
				}
			}
			// A re-run of the command finishes it too.
			dir := sc.build(t)
			migCrashRun(t, sc, dir, fsx.NewFault(fsx.Real()).CrashAfter(cut))
			migRemoveDeadLocks(t, dir)
			writerDebris(t, dir, "m1", tc.dead)
			if _, err := runMigrate(t, dir, nil, sc.opts); err != nil {
				t.Fatal(err)
			}
			if d := migSnapshot(t, dir).diff(final); len(d) > 0 {
				t.Fatalf("re-run:\n%s", strings.Join(d, "\n"))
			}
		})
	}
}

// TestMigrationDebrisNeverHidesData: a file (or a live lock) in the way is
// not debris: recovery stops with a conflict and removes nothing.
func TestMigrationDebrisNeverHidesData(t *testing.T) {
	sc := migCrashScenarios()[0]
	probe := fsx.NewFault(fsx.Real())
	migCrashRun(t, sc, sc.build(t), probe)
	cut := migOpIndex(probe, "failpoint:journal.begin")
	for _, what := range []string{"file", "live lock"} {
		dir := sc.build(t)
		migCrashRun(t, sc, dir, fsx.NewFault(fsx.Real()).CrashAfter(cut))
		migRemoveDeadLocks(t, dir)
		modelDir := writerDebris(t, dir, "m1", false)
		keep := filepath.Join(modelDir, "note.txt")
		if what == "file" {
			if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			keep = filepath.Join(modelDir, ".lock")
			l, err := lock.Acquire(migCtx, fsx.Real(), keep, lock.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
		}
		for _, rollback := range []bool{false, true} {
			_, err := recover.Run(migCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second, SwampLockTimeout: 300 * time.Millisecond}, Rollback: rollback})
			if what == "file" && !ops.IsConflict(err) {
				t.Fatalf("%s, rollback=%v: want a conflict, got %v", what, rollback, err)
			}
			if what == "live lock" && err == nil {
				t.Fatalf("%s, rollback=%v: a live writer must stop recovery", what, rollback)
			}
			if _, err := os.Stat(keep); err != nil {
				t.Fatalf("%s, rollback=%v: %s must be kept: %v", what, rollback, keep, err)
			}
			if what == "live lock" && !errors.Is(err, lock.ErrTimeout) {
				t.Fatalf("live lock: want a lock timeout (recovery waits for live writers), got %v", err)
			}
		}
	}
}

// TestMigrationWaitsForALockTempAtItsDestination: a writer taking its
// per-model lock under the namespace while the migration runs is, until it
// links the lock, only the hidden temp file the lock is written through
// (the seam holds it in that window). The migration finishing its intent
// must take that temp for a lock being taken: wait for the writer to link
// it, see the migration's lock and let go, then move — not stop at once
// with "both exist, and both hold data" (TestWritesRaceMigrations under
// load).
func TestMigrationWaitsForALockTempAtItsDestination(t *testing.T) {
	sc := migCrashScenarios()[0]
	probe := fsx.NewFault(fsx.Real())
	finalDir := sc.build(t)
	migCrashRun(t, sc, finalDir, probe)
	final := migSnapshot(t, finalDir)
	cut := migOpIndex(probe, "failpoint:journal.begin")

	// The migration's intent is journaled, none of its steps has run: its
	// move of data/command into the namespace is still to come.
	dir := sc.build(t)
	migCrashRun(t, sc, dir, fsx.NewFault(fsx.Real()).CrashAfter(cut))
	migRemoveDeadLocks(t, dir)

	lp := lock.ModelPath(filepath.Join(dir, ".swamp"), migNS, "command/shell", "m1")
	inWindow, release := make(chan string, 1), make(chan struct{})
	defer ops.SetLockTempWritten(func(tmp, path string) {
		if path == lp {
			inWindow <- tmp
			<-release
		}
	})()
	writer := make(chan error, 1)
	go func() {
		// A writer that finds the datastore lock taken once it holds its
		// own lets go of it at once (lockWriteModels).
		l, err := lock.Acquire(migCtx, fsx.Real(), lp, lock.Options{Timeout: 5 * time.Second})
		if err == nil {
			err = l.Release()
		}
		writer <- err
	}()
	var tmp string
	select {
	case tmp = <-inWindow:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer never wrote its lock's temp file")
	}
	if _, err := os.Stat(lp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the lock is linked already (%v): the window is not held open", err)
	}

	o := sc.opts
	o.JournalLockTimeout, o.SwampLockTimeout, o.Getenv = 2*time.Second, 2*time.Second, func(string) string { return "" }
	r := migLoad(t, dir)
	migrated := make(chan error, 1)
	go func() {
		_, err := migrate.Migrate(migCtx, r, o)
		migrated <- err
	}()
	select {
	case err := <-migrated:
		close(release)
		<-writer
		t.Fatalf("the migration ended while the writer's lock was only its temp file %s (it should wait for the writer): %v", tmp, err)
	case <-time.After(time.Second):
	}
	close(release)
	if err := <-writer; err != nil {
		t.Fatalf("the writer: %v", err)
	}
	if err := <-migrated; err != nil {
		t.Fatalf("the migration, once the writer let go: %v", err)
	}
	if d := migSnapshot(t, dir).diff(final); len(d) > 0 {
		t.Fatalf("after the migration:\n%s", strings.Join(d, "\n"))
	}
}
