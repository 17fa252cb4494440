package ops_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
)

// catalogFinding is the report's catalog_unusable finding, or nil.
func catalogFinding(rep *doctor.Report) *doctor.Finding {
	for i := range rep.Findings {
		if rep.Findings[i].Code == doctor.CodeCatalogUnusable {
			return &rep.Findings[i]
		}
	}
	return nil
}

// A torn catalog (what a power cut during SQLite's in-place creation left:
// a zero-byte _catalog.db beside its -journal) is derived state the
// doctor's confirmed repair fixes itself: found by the check, announced by
// the preview, and the repair moves the pair aside (never deleting it) and
// rebuilds a catalog that agrees with the disk; the doctor is clean after.
func TestDoctorRepairRebuildsATornCatalog(t *testing.T) {
	dir := t.TempDir()
	fmBaseRepo(t, dir)
	r := migLoad(t, dir)
	for _, m := range mustGlob(t, r.CatalogPath+"*") {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{r.CatalogPath, r.CatalogPath + "-journal"} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}}
	for _, step := range []struct {
		repair, confirm bool
		want            doctor.Status
	}{{false, false, doctor.StatusFound}, {true, false, doctor.StatusWouldRepair}, {true, true, doctor.StatusRepaired}} {
		o := opts
		o.Repair, o.Confirm = step.repair, step.confirm
		rep, err := doctor.Run(fmCtx, r, o)
		if err != nil {
			t.Fatal(err)
		}
		f := catalogFinding(rep)
		if f == nil || f.Status != step.want {
			t.Fatalf("%s: catalog finding %+v, want status %s", rep.Mode, f, step.want)
		}
		if step.confirm && !rep.Clean() {
			t.Fatalf("repair left %d findings: %+v", rep.Remaining, rep.Findings)
		}
	}
	for _, suf := range []string{"", "-journal"} {
		if got := mustGlob(t, r.CatalogPath+".corrupt-*Z"+suf); len(got) != 1 {
			t.Fatalf("moved-aside %q: %v", suf, got)
		}
	}
	v, err := catalogsync.Verify(fmCtx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}})
	if err != nil || !v.InSync || v.NotBuilt || v.Counts.ExpectedRows == 0 {
		t.Fatalf("verify after the repair: %+v, %v", v, err)
	}
	rep, err := doctor.Run(fmCtx, r, opts)
	if err != nil || !rep.Clean() {
		t.Fatalf("doctor after the repair: %+v, %v", rep, err)
	}
}

// A catalog that cannot be opened for another reason than damage (here a
// directory at its name) is not the repair's to touch: it stays manual,
// the data's repair is not blocked, and the directory is left as it is.
func TestDoctorRepairLeavesAnUnopenableCatalogManual(t *testing.T) {
	dir := t.TempDir()
	fmBaseRepo(t, dir)
	r := migLoad(t, dir)
	for _, m := range mustGlob(t, r.CatalogPath+"*") {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(r.CatalogPath, 0o755); err != nil {
		t.Fatal(err)
	}
	rep, err := doctor.Run(fmCtx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Repair: true, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	if f := catalogFinding(rep); f == nil || f.Status != doctor.StatusManual || f.Remedy != report.RemedyFixAccess || f.Then != report.RemedyRebuildCatalog {
		t.Fatalf("catalog finding %+v, want manual: a person's fix, then the rebuild", f)
	}
	if fi, err := os.Stat(r.CatalogPath); err != nil || !fi.IsDir() {
		t.Fatalf("the directory at the catalog's name was touched: %v", err)
	}
	if got := mustGlob(t, filepath.Join(filepath.Dir(r.CatalogPath), repo.CatalogName+".corrupt-*")); len(got) != 0 {
		t.Fatalf("moved aside: %v", got)
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The temp names of a catalog being created count as catalog files for
// every layer that sorts the catalog's directory (a migration never moves
// one as data; the doctor never calls one un-migrated data).
func TestCatalogCreationTempsAreCatalogFiles(t *testing.T) {
	if repo.CatalogCreatingPrefix != catalog.CreationPrefix(repo.CatalogName) {
		t.Fatalf("repo.CatalogCreatingPrefix %q, catalog.CreationPrefix %q", repo.CatalogCreatingPrefix, catalog.CreationPrefix(repo.CatalogName))
	}
	for _, name := range []string{catalog.CreationPrefix(repo.CatalogName) + "123-0a1b", catalog.CreationPrefix(repo.CatalogName) + "123-0a1b-journal"} {
		if !repo.IsCatalogFile(name) {
			t.Errorf("%s is not a catalog file", name)
		}
	}
}
