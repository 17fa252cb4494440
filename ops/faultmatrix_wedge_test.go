package ops_test

import (
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/recover"
)

// TestReverseRestampFailureIsRepairedByARebuild was the fault matrix's
// last known wedge: a reverse migration whose catalog restamp commit fails
// moves the data and marks the catalog stale — truthfully — but then no
// ordinary command could clear the mark: 'catalog rebuild --confirm'
// refused while the namespace stays configured over data at the solo path,
// and re-running the reverse has nothing to move, so it plans no restamp.
// The only way out was forward again, rebuild, and reverse again.
//
// With the namespace's own data root empty, the rebuild now describes the
// data where it is, stamped solo: the doctor's remedy (rebuild) works, and
// the catalog ends as the restamp would have left it.
func TestReverseRestampFailureIsRepairedByARebuild(t *testing.T) {
	dir := filepath.Join(fsxtest.ScratchDir(t), "repo")
	fmMigrated(t, dir)
	clean := fmCopy(t, dir)
	mustRunMigrate(t, clean, nil, migrate.MigrateOptions{Reverse: true, Confirm: true})

	res, err := runMigrate(t, dir, fsx.NewFault(fsx.Real()).FailKind("failpoint:catalog.restamp.commit", syscall.EIO), migrate.MigrateOptions{Reverse: true, Confirm: true})
	if err != nil || res.Completed == nil || len(res.Completed.MigratedDirectories) == 0 {
		t.Fatalf("the reverse must move the data and go on without the catalog: %+v %v", res, err)
	}
	if catalogStaleOf(t, dir) == nil {
		t.Fatal("the skipped restamp left no stale mark")
	}
	r := migLoad(t, dir)
	rep, err := doctor.Run(migCtx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}})
	if err != nil || !strings.Contains(strings.Join(drCodes(rep), " "), "catalog_stale") {
		t.Fatalf("doctor should report the stale catalog: %v %v", drCodes(rep), err)
	}

	// The preview says what it would do; the confirmed rebuild does it.
	if pre, err := catalogsync.Rebuild(migCtx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}}); err != nil || pre.InSync || pre.Namespace != "" {
		t.Fatalf("rebuild preview: %+v %v; want the solo rows out of sync", pre, err)
	}
	built, err := catalogsync.Rebuild(migCtx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Confirm: true})
	if err != nil {
		t.Fatalf("the rebuild refused: %v", err)
	}
	if !built.Applied || built.UnmigratedData == "" || built.Namespace != "" {
		t.Fatalf("rebuild report: applied %v, unmigratedData %q, namespace %q", built.Applied, built.UnmigratedData, built.Namespace)
	}
	if catalogStaleOf(t, dir) != nil {
		t.Fatal("the rebuild left the stale mark")
	}
	if rep, err := doctor.Run(migCtx, migLoad(t, dir), doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}}); err != nil || !cleanBesideOtherRoot(rep) {
		t.Fatalf("after the rebuild: doctor %v %v", drCodes(rep), err)
	}
	got, want := migCatalogRows(t, dir), migCatalogRows(t, clean)
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after the rebuild the catalog is not what the reverse leaves:\ngot  %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	if d := fmState(t, dir).diff(fmState(t, clean)); len(d) > 0 {
		t.Fatalf("the repo is not the clean reverse's:\n%s", strings.Join(d, "\n"))
	}
}

// With data in the namespace as well as at the solo path, the rebuild
// still refuses: which rows describe what is a migration's to decide.
func TestRebuildRefusesDataOnBothSides(t *testing.T) {
	dir := filepath.Join(fsxtest.ScratchDir(t), "repo")
	fmMigrated(t, dir)
	fsxtest.WriteFiles(t, dir, map[string]string{".swamp/data/command/shell/stray/out/1/raw": "left at the root"})
	var um *catalogsync.UnmigratedError
	if _, err := catalogsync.Rebuild(migCtx, migLoad(t, dir), catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Confirm: true}); !errors.As(err, &um) {
		t.Fatalf("got %v, want UnmigratedError", err)
	}
	if _, err := recover.Run(migCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}}); err != nil {
		t.Fatal(err)
	}
}
