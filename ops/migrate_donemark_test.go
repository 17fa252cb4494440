package ops_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/recover"
)

// TestMigrateDoneMarkLostIsNotAFailure is the fault matrix's case
// "migrate × EIO (ENOSPC, EACCES, EROFS) at failpoint:journal.flush": the
// data change is complete and only the journal's done mark could not be
// committed. The run used to fail with the bare journal error — a
// migration reported as failed that had fully happened, saying neither
// what was on disk nor what to run. It succeeds with a warning now; the
// intent stays open and recovery closes it.
func TestMigrateDoneMarkLostIsNotAFailure(t *testing.T) {
	for _, sc := range []struct {
		name string
		fix  migFixture
		opts migrate.MigrateOptions
	}{
		{"forward", migFixture{catalogStamp: "", manifest: true}, migrate.MigrateOptions{Confirm: true}},
		{"reverse", migFixture{nsLayout: true, catalogStamp: migNS, manifest: true}, migrate.MigrateOptions{Reverse: true, Confirm: true}},
		{"unset", migFixture{nsLayout: true, catalogStamp: migNS, manifest: true}, migrate.MigrateOptions{Unset: true, Confirm: true}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			dir := sc.fix.build(t)
			o := sc.opts
			oFS := fsx.NewFault(fsx.Real()).FailKind("failpoint:journal.flush", syscall.EIO)
			res, err := runMigrate(t, dir, oFS, o)
			if err != nil {
				t.Fatalf("the migration is complete on disk, but the run failed: %v", err)
			}
			warned := false
			for _, w := range res.Completed.Warnings {
				warned = warned || (strings.Contains(w.Message, "complete on disk") && w.Remedy == report.RemedyRecover)
			}
			if !warned {
				t.Fatalf("no warning says the done mark was lost: %+v", res.Completed.Warnings)
			}
			if open := dmOpenIntents(t, dir); len(open) != 1 {
				t.Fatalf("%d open intents, want the one whose done mark was lost", len(open))
			}
			rep, err := recover.Run(migCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}})
			if err != nil || rep.Finished != 1 {
				t.Fatalf("recover: %+v %v", rep, err)
			}
			if sc.opts.Unset {
				if migLoad(t, dir).Namespace != "" {
					t.Fatal("the namespace is still set")
				}
				return
			}
			preview := sc.opts
			preview.Confirm = false
			if pv := mustRunMigrate(t, dir, nil, preview).Preview; !pv.NothingToDo {
				t.Fatalf("the migration is not complete: %+v", pv.Directories)
			}
		})
	}
}

func dmOpenIntents(t *testing.T, dir string) []*journal.Intent {
	t.Helper()
	j, err := journal.OpenReadOnly(fsx.Real(), repo.JournalPathOf(dir), journal.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	open, err := j.OpenIntents()
	if err != nil {
		t.Fatal(err)
	}
	return open
}
