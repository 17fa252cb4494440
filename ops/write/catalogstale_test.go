package write

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
)

// The catalog is derived state: when it cannot be written, a write still
// finishes its data part, says so, and the journal marks the catalog stale
// until a rebuild.

// TestWriteWithUnwritableCatalogFinishesData: _catalog.db is a directory
// (a catalog no process can open). The write publishes the version, moves
// `latest`, leaves no open intent, and records the catalog as stale; the
// next write and recovery work; doctor reports the stale catalog, and a
// rebuild by someone who fixed the path clears it.
func TestWriteWithUnwritableCatalogFinishesData(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	if err := os.Remove(r.CatalogPath); err != nil {
		t.Fatal(err)
	}
	for _, sidecar := range []string{"-wal", "-shm"} {
		_ = os.Remove(r.CatalogPath + sidecar)
	}
	if err := os.Mkdir(r.CatalogPath, 0o755); err != nil {
		t.Fatal(err)
	}

	for i, content := range []string{"version two", "version three"} {
		w := write1(t, r, VersionWrite{Address: a, Content: nonSeeker{strings.NewReader(content)}}, WriteOptions{})
		if w.Version != int64(i+2) || w.CatalogStale == "" {
			t.Fatalf("write %d: version %d, catalogStale %q; want version %d and a stale catalog", i+2, w.Version, w.CatalogStale, i+2)
		}
		if got := latestFile(t, r, a); got != strconv.FormatInt(w.Version, 10) {
			t.Fatalf("latest = %q after writing version %d", got, w.Version)
		}
		if open := openWriteIntents(t, r); len(open) != 0 {
			t.Fatalf("intent left open: %s", open[0].LastError)
		}
	}
	cs := catalogStaleMark(t, r)
	if cs == nil || len(cs.Intents) != 2 || cs.Catalog != r.CatalogPath {
		t.Fatalf("stale mark = %+v, want two intents on %s", cs, r.CatalogPath)
	}

	rep, err := doctor.Run(context.Background(), r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}})
	if err != nil {
		t.Fatal(err)
	}
	if !hasFinding(rep, doctor.CodeCatalogStale) || rep.Clean() {
		t.Fatalf("doctor does not report the stale catalog: %+v", rep.Findings)
	}

	// The operator fixes the path; the rebuild makes the catalog agree and
	// clears the mark.
	if err := os.Remove(r.CatalogPath); err != nil {
		t.Fatal(err)
	}
	if _, err := catalogsync.Rebuild(context.Background(), r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	if cs := catalogStaleMark(t, r); cs != nil {
		t.Fatalf("rebuild left the stale mark: %+v", cs)
	}
	if v := viewItem(t, r, a); v.CatalogLatest != 3 {
		t.Fatalf("catalog latest after rebuild = %d, want 3", v.CatalogLatest)
	}
	rep, err = doctor.Run(context.Background(), r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}})
	if err != nil || !rep.Clean() {
		t.Fatalf("doctor after rebuild: %v %+v", err, rep)
	}
}

// TestWriteCatalogFullDiskAfterPublish: the disk fills exactly at the
// catalog commit, after the version is published. The write succeeds
// (the version is complete and latest names it), says the catalog is
// stale and why (ENOSPC named), and nothing is left open.
func TestWriteCatalogFullDiskAfterPublish(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	clean := fsx.NewFault(fsx.Real())
	probe := newWriteRepo(t)
	write1(t, probe, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	write1(t, probe, VersionWrite{Address: a, Content: strings.NewReader("v2")}, WriteOptions{fsys: clean})
	at := -1
	for _, op := range clean.Trace() {
		if strings.HasPrefix(op.Kind, "failpoint:catalog") && strings.HasSuffix(op.Kind, "commit") {
			at = op.N
		}
	}
	if at < 0 {
		t.Fatalf("no catalog commit in the trace: %v", clean.Trace())
	}
	f := fsx.NewFault(fsx.Real()).FailAt(at, syscall.ENOSPC)
	res, err := WriteVersions(context.Background(), r, []VersionWrite{{Address: a, Content: strings.NewReader("v2")}}, WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: f}})
	if err != nil {
		t.Fatalf("the write failed though its version was published: %v", err)
	}
	if !strings.Contains(res[0].CatalogStale, "no space left") {
		t.Fatalf("catalogStale = %q, want it to name the full disk", res[0].CatalogStale)
	}
	v := viewItem(t, r, a)
	if v.Latest != "2" || v.CatalogLatest != 1 {
		t.Fatalf("after the write: %+v", v)
	}
	if open := openWriteIntents(t, r); len(open) != 0 {
		t.Fatalf("intent left open: %s", open[0].LastError)
	}
	if catalogStaleMark(t, r) == nil {
		t.Fatal("no stale mark")
	}
}

// TestWriteRollbackWithUnwritableCatalog: a write that fails after its
// intent (the `latest` replace gets EIO) while the catalog cannot be
// opened is still rolled back cleanly: undoing the catalog step is skipped,
// not a reason to leave the intent open.
func TestWriteRollbackWithUnwritableCatalog(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	before := viewItem(t, r, a)
	_ = os.Remove(r.CatalogPath + "-wal")
	_ = os.Remove(r.CatalogPath + "-shm")
	if err := os.Remove(r.CatalogPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(r.CatalogPath, 0o755); err != nil {
		t.Fatal(err)
	}
	f := fsx.NewFault(fsx.Real()).FailKind("rename", syscall.EIO)
	_, err := WriteVersions(context.Background(), r, []VersionWrite{{Address: a, Content: strings.NewReader("v2")}}, WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: f}})
	var we *WriteFailedError
	if !errors.As(err, &we) || we.RollbackErr != nil {
		t.Fatalf("want a rolled-back *WriteFailedError, got %v", err)
	}
	if got := latestFile(t, r, a); got != before.Latest {
		t.Fatalf("latest = %q, was %q", got, before.Latest)
	}
	if _, err := os.Stat(filepath.Join(r.DataRoot, "command/shell/m/state/2")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("version 2 exists after the rollback: %v", err)
	}
	noStagingLeft(t, r)
	if open := openWriteIntents(t, r); len(open) != 0 {
		t.Fatalf("intent left open: %s", open[0].LastError)
	}
}

// latestFile is what the item's `latest` file holds ("" when missing).
func latestFile(t testing.TB, r *repo.Repo, a repo.Address) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.DataRoot, filepath.FromSlash(a.Type), a.ModelID, a.DataName, "latest"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

func hasFinding(rep *doctor.Report, code doctor.Code) bool {
	for _, f := range rep.Findings {
		if f.Code == code {
			return true
		}
	}
	return false
}

// TestDoctorRepairClearsStaleMark: a write made
// while the catalog could not be opened (here: its path held by a
// directory, which no user can open as a database) leaves the journal's
// stale mark; once the catalog is back, a confirmed doctor repair compares
// the whole catalog with the disk, fixes the difference and clears the
// mark, so nothing is left "manual" and the next doctor is clean.
func TestDoctorRepairClearsStaleMark(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	aside := r.CatalogPath + ".aside"
	if err := os.Rename(r.CatalogPath, aside); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(r.CatalogPath, 0o755); err != nil {
		t.Fatal(err)
	}
	if w := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v2")}, WriteOptions{}); w.CatalogStale == "" {
		t.Fatal("the write did not report the catalog stale")
	}
	if err := os.Remove(r.CatalogPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(aside, r.CatalogPath); err != nil {
		t.Fatal(err)
	}

	rep, err := doctor.Run(context.Background(), r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Repair: true, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Status != doctor.StatusRepaired {
			t.Errorf("%s left %s: %s (fix: %s)", f.Code, f.Status, f.Message, f.Fix)
		}
	}
	if !hasFinding(rep, doctor.CodeCatalogStale) || !rep.Clean() {
		t.Fatalf("the repair must report the stale catalog repaired and leave nothing: remaining %d, %+v", rep.Remaining, rep.Findings)
	}
	if cs := catalogStaleMark(t, r); cs != nil {
		t.Fatalf("the repair left the stale mark: %+v", cs)
	}
	if v := viewItem(t, r, a); v.CatalogLatest != 2 {
		t.Fatalf("catalog latest after the repair = %d, want 2", v.CatalogLatest)
	}
	rep, err = doctor.Run(context.Background(), r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}})
	if err != nil || !rep.Clean() {
		t.Fatalf("doctor after the repair: %v %+v", err, rep.Findings)
	}
}
