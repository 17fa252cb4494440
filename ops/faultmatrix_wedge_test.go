package ops_test

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/recover"
)

// TestReverseRestampFailureWedge pins the fault matrix's known wedge
// (fmKnownWedge): a reverse migration whose catalog restamp commit fails
// moves the data and marks the catalog stale — truthfully — but then the
// ordinary commands cannot clear the mark: 'catalog rebuild --confirm'
// refuses while the namespace stays configured over data at the solo path,
// and re-running the reverse has nothing to move, so it plans no restamp.
// The only way out with swampj's commands is forward again, rebuild, and
// reverse again. When this test starts failing at "wedged", the wedge is
// fixed: drop it from fmKnownWedge.
func TestReverseRestampFailureWedge(t *testing.T) {
	dir := filepath.Join(ops.ScratchDir(t), "repo")
	fmMigrated(t, dir)
	res, err := runMigrate(t, dir, ops.MigrateOptions{Reverse: true, Confirm: true,
		FS: fsx.NewFault(fsx.Real()).FailKind("failpoint:catalog.restamp.commit", syscall.EIO)})
	if err != nil || res.Completed == nil || len(res.Completed.MigratedDirectories) == 0 {
		t.Fatalf("the reverse must move the data and go on without the catalog: %+v %v", res, err)
	}
	if catalogStaleOf(t, dir) == nil {
		t.Fatal("the skipped restamp left no stale mark")
	}

	// wedged: every ordinary command leaves the stale mark.
	if _, err := recover.Run(migCtx, dir, recover.Options{LockTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	if again := mustRunMigrate(t, dir, ops.MigrateOptions{Reverse: true, Confirm: true}).Completed; !again.NothingToDo {
		t.Fatalf("wedged: the re-run did something: %+v", again)
	}
	r := migLoad(t, dir)
	if _, err := ops.Doctor(migCtx, fsx.Real(), r, ops.DoctorOptions{Repair: true, Confirm: true, LockTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	var um *ops.UnmigratedError
	if _, err := ops.RebuildCatalog(migCtx, fsx.Real(), r, ops.CatalogOptions{Confirm: true, LockTimeout: time.Second}); !errors.As(err, &um) {
		t.Fatalf("wedged: the rebuild did not refuse as unmigrated: %v", err)
	}
	rep, err := ops.Doctor(migCtx, fsx.Real(), r, ops.DoctorOptions{LockTimeout: time.Second})
	if err != nil || rep.Clean() || !strings.Contains(strings.Join(drCodes(rep), " "), "catalog_stale") {
		t.Fatalf("wedged: doctor should still report the stale catalog: %v %v", drCodes(rep), err)
	}

	// The way out: forward, rebuild, reverse.
	mustRunMigrate(t, dir, ops.MigrateOptions{Confirm: true})
	if _, err := ops.RebuildCatalog(migCtx, fsx.Real(), migLoad(t, dir), ops.CatalogOptions{Confirm: true, LockTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	mustRunMigrate(t, dir, ops.MigrateOptions{Reverse: true, Confirm: true})
	r = migLoad(t, dir)
	if rep, err := ops.Doctor(migCtx, fsx.Real(), r, ops.DoctorOptions{LockTimeout: time.Second}); err != nil || !rep.Clean() {
		t.Fatalf("after forward, rebuild, reverse: doctor %v %v", drCodes(rep), err)
	}
	rows := migCatalogRows(t, dir)
	if len(rows) == 0 {
		t.Fatal("no catalog rows after forward, rebuild, reverse")
	}
	for _, row := range rows {
		if !strings.Contains(row, "Namespace: ") {
			t.Fatalf("after forward, rebuild, reverse a row is not stamped solo: %s", row)
		}
	}
}
