package catalogsync_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
)

var ctx = context.Background()

// helloResult is the example repo's item of three versions, latest 3.
const helloResult = "command/shell/" + example.HelloShell + "/result"

// exampleRepo writes example.Write (the data tree, no catalog, no journal)
// into a fresh directory and returns it loaded, with what it wrote.
func exampleRepo(t *testing.T) (*repo.Repo, example.Stats) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	stats, err := example.Write(fsx.Real(), dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return r, stats
}

func rebuild(t *testing.T, r *repo.Repo, confirm bool) *catalogsync.Report {
	t.Helper()
	rep, err := catalogsync.Rebuild(ctx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Confirm: confirm})
	if err != nil {
		t.Fatalf("rebuild (confirm %v): %v", confirm, err)
	}
	return rep
}

func verify(t *testing.T, r *repo.Repo) *catalogsync.Report {
	t.Helper()
	rep, err := catalogsync.Verify(ctx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return rep
}

// rowKeys reads the catalog's rows of the repo's namespace from the SQLite
// file: "type/model/data@version" plus "*" when is_latest.
func rowKeys(t *testing.T, r *repo.Repo) []string {
	t.Helper()
	c, err := catalog.Open(ctx, fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.Rows(ctx, r.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return keysOf(rows)
}

func keysOf(rows []catalog.Row) []string {
	var out []string
	for _, row := range rows {
		k := row.TypeNormalized + "/" + row.ModelID + "/" + row.DataName + "@" + strconv.FormatInt(row.Version, 10)
		if row.IsLatest {
			k += "*"
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// files is the catalog's files (the database and its sidecars) with their
// bytes, to show that a command wrote none of them.
func files(t *testing.T, r *repo.Repo) fsxtest.Tree {
	t.Helper()
	base := filepath.Base(r.CatalogPath)
	tree := fsxtest.Snapshot(t, filepath.Dir(r.CatalogPath), nil)
	for rel := range tree {
		if len(rel) < len(base) || rel[:len(base)] != base {
			delete(tree, rel)
		}
	}
	return tree
}

// emptyVersion leaves version n of an item as an unclean shutdown does
// (swamp's bug report #3955): raw and metadata.yaml both zero bytes.
func emptyVersion(t *testing.T, r *repo.Repo, item string, n string) {
	t.Helper()
	for _, f := range []string{"raw", "metadata.yaml"} {
		if err := os.Truncate(filepath.Join(r.DataRoot, item, n, f), 0); err != nil {
			t.Fatal(err)
		}
	}
}

// A repo with no catalog: verify and a preview rebuild report every row
// missing and create nothing; a confirmed rebuild creates the catalog with
// one row per version on disk, and verify then finds it in sync.
func TestRebuildCreatesTheCatalogOnlyWhenConfirmed(t *testing.T) {
	r, stats := exampleRepo(t)

	v := verify(t, r)
	if !v.CatalogMissing || v.InSync || v.Counts.VersionsOnDisk != stats.Versions {
		t.Fatalf("verify without a catalog: missing %v, in sync %v, versions %d (want true, false, %d)",
			v.CatalogMissing, v.InSync, v.Counts.VersionsOnDisk, stats.Versions)
	}
	p := rebuild(t, r, false)
	if !p.CatalogMissing || p.Applied || p.Confirmed {
		t.Fatalf("preview: missing %v, applied %v, confirmed %v", p.CatalogMissing, p.Applied, p.Confirmed)
	}
	if len(files(t, r)) != 0 {
		t.Fatalf("verify or preview created catalog files: %v", files(t, r))
	}

	c := rebuild(t, r, true)
	if !c.CatalogCreated || !c.Applied || c.Counts.ExpectedRows == 0 {
		t.Fatalf("confirmed rebuild: created %v, applied %v, rows %d", c.CatalogCreated, c.Applied, c.Counts.ExpectedRows)
	}
	got := rowKeys(t, r)
	if len(got) != c.Counts.ExpectedRows || c.Counts.ExpectedRows != c.Counts.Readable-c.Counts.RenamedVersions {
		t.Fatalf("%d rows in the catalog, report says %d expected of %d readable (%d renamed)",
			len(got), c.Counts.ExpectedRows, c.Counts.Readable, c.Counts.RenamedVersions)
	}
	exp, err := catalogsync.ExpectedRows(ctx, r, catalogsync.ExpectedOptions{Common: host.Common{FS: fsx.Real()}, StepLatestColumn: c.StepLatestColumn})
	if err != nil {
		t.Fatal(err)
	}
	if want := keysOf(exp.Rows); !reflect.DeepEqual(got, want) {
		t.Fatalf("catalog rows\n%v\nwant the rows the disk implies\n%v", got, want)
	}
	if v := verify(t, r); !v.InSync {
		t.Fatalf("verify after the rebuild: not in sync: %+v", v.Counts)
	}
	if again := rebuild(t, r, true); !again.InSync || again.Applied {
		t.Fatalf("a second rebuild: in sync %v, applied %v; want nothing to do", again.InSync, again.Applied)
	}
}

// Verify writes nothing, even when it finds drift; a confirmed rebuild
// removes the row of a version emptied by a crash (which swamp's additive
// rebuild keeps) and moves is_latest to the last readable version.
func TestRebuildRemovesTheRowOfAnEmptiedVersion(t *testing.T) {
	r, _ := exampleRepo(t)
	rebuild(t, r, true)
	before := rowKeys(t, r)
	emptyVersion(t, r, helloResult, "3")

	catBefore := files(t, r)
	v := verify(t, r)
	if v.InSync || v.Counts.RowsStale != 1 || v.Counts.Unreadable != 1 {
		t.Fatalf("verify: in sync %v, stale rows %d, unreadable %d; want false, 1, 1", v.InSync, v.Counts.RowsStale, v.Counts.Unreadable)
	}
	if u := v.Unreadable[0]; u.Version != 3 || u.ModelID != example.HelloShell || u.DataName != "result" {
		t.Fatalf("unreadable = %+v, want %s version 3", u, helloResult)
	}
	if d := fsxtest.Diff(catBefore, files(t, r)); len(d) != 0 {
		t.Fatalf("verify changed the catalog's files: %v", d)
	}
	if p := rebuild(t, r, false); p.Applied || len(fsxtest.Diff(catBefore, files(t, r))) != 0 {
		t.Fatal("a preview rebuild changed the catalog")
	}

	rebuild(t, r, true)
	item := "command/shell/" + example.HelloShell + "/result@"
	var want []string
	for _, k := range before {
		switch k {
		case item + "3*":
		case item + "2":
			want = append(want, item+"2*")
		default:
			want = append(want, k)
		}
	}
	sort.Strings(want)
	if got := rowKeys(t, r); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows after the rebuild\n%v\nwant\n%v", got, want)
	}
	if v := verify(t, r); !v.InSync {
		t.Fatalf("verify after the rebuild: %+v", v.Counts)
	}
}

// While the journal holds an interrupted operation the disk is mid-change:
// a rebuild, confirmed or not, refuses and changes nothing; verify
// reports it.
func TestRebuildRefusesWhileAnIntentIsOpen(t *testing.T) {
	r, _ := exampleRepo(t)
	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	id, err := j.Begin(&journal.Intent{Kind: "test", Summary: "interrupted", Steps: []journal.Step{{Kind: "mkdir", Path: filepath.Join(r.DataRoot, "x")}}})
	if err != nil {
		t.Fatal(err)
	}
	j.Abandon() // the process died

	_, err = catalogsync.Rebuild(ctx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Confirm: true})
	var open *report.OpenIntentsError
	if !errors.As(err, &open) || len(open.IDs) != 1 || open.IDs[0] != id {
		t.Fatalf("rebuild with intent %d open: %v, want *OpenIntentsError naming it", id, err)
	}
	if _, err := catalogsync.Rebuild(ctx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}}); !errors.As(err, &open) {
		t.Fatalf("preview with intent %d open: %v, want *OpenIntentsError", id, err)
	}
	if len(files(t, r)) != 0 {
		t.Fatal("the refused rebuild created the catalog")
	}
	if v := verify(t, r); v.OpenIntents != 1 {
		t.Fatalf("verify: %d open intents, want 1", v.OpenIntents)
	}
}

// Both commands hold swampj's journal lock: while another swampj holds it,
// they time out and change nothing.
func TestRebuildAndVerifyWaitForTheJournalLock(t *testing.T) {
	r, _ := exampleRepo(t)
	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	o := catalogsync.Options{Common: host.Common{JournalLockTimeout: 200 * time.Millisecond}, Confirm: true}
	if _, err := catalogsync.Rebuild(ctx, r, o); !errors.Is(err, journal.ErrLockTimeout) {
		t.Fatalf("rebuild under another holder: %v, want a lock timeout", err)
	}
	if _, err := catalogsync.Verify(ctx, r, o); !errors.Is(err, journal.ErrLockTimeout) {
		t.Fatalf("verify under another holder: %v, want a lock timeout", err)
	}
	if len(files(t, r)) != 0 {
		t.Fatal("a command that timed out created the catalog")
	}
}

// The rows ExpectedRows builds do not depend on how many workers scan.
func TestExpectedRowsDoNotDependOnWorkers(t *testing.T) {
	r, _ := exampleRepo(t)
	emptyVersion(t, r, helloResult, "3")
	one, err := catalogsync.ExpectedRows(ctx, r, catalogsync.ExpectedOptions{Common: host.Common{FS: fsx.Real()}, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	many, err := catalogsync.ExpectedRows(ctx, r, catalogsync.ExpectedOptions{Common: host.Common{FS: fsx.Real()}, Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one.Rows, many.Rows) || !reflect.DeepEqual(one.Unreadable, many.Unreadable) || one.Items != many.Items {
		t.Fatal("1 worker and 8 workers built different rows")
	}
	if !one.HasItem("command/shell", example.HelloShell, "result") || one.HasItem("command/shell", example.HelloShell, "nothing") {
		t.Fatal("HasItem does not answer from the walk")
	}
}

// BuildIfNotBuilt fills only a catalog that exists and holds no row (what
// swamp leaves after invalidating it); no catalog, or one with rows, is
// left alone.
func TestBuildIfNotBuilt(t *testing.T) {
	r, _ := exampleRepo(t)
	built, err := catalogsync.BuildIfNotBuilt(ctx, r, nil, host.Common{FS: fsx.Real()})
	if err != nil || built || len(files(t, r)) != 0 {
		t.Fatalf("without a catalog: built %v, %v, files %v; want nothing done", built, err, files(t, r))
	}

	c, err := catalog.Open(ctx, fsx.Real(), r.CatalogPath, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	built, err = catalogsync.BuildIfNotBuilt(ctx, r, nil, host.Common{FS: fsx.Real()})
	if err != nil || !built {
		t.Fatalf("an empty catalog: built %v, %v; want built", built, err)
	}
	if v := verify(t, r); !v.InSync {
		t.Fatalf("verify after the build: %+v", v.Counts)
	}

	emptyVersion(t, r, helloResult, "3")
	before := rowKeys(t, r)
	built, err = catalogsync.BuildIfNotBuilt(ctx, r, nil, host.Common{FS: fsx.Real()})
	if err != nil || built {
		t.Fatalf("a catalog with rows: built %v, %v; want left alone", built, err)
	}
	if got := rowKeys(t, r); !reflect.DeepEqual(got, before) {
		t.Fatal("a catalog with rows was changed")
	}
}

// A Handle opens the catalog on first use only, and its Close closes what
// it opened; a nil Handle has no opener.
func TestHandleOpensOnFirstUse(t *testing.T) {
	r, _ := exampleRepo(t)
	h := catalogsync.OpenHandle(fsx.Real(), r.Dir)
	if len(files(t, r)) != 0 {
		t.Fatal("OpenHandle opened the catalog")
	}
	built, err := catalogsync.BuildIfNotBuilt(ctx, r, h.Opener(), host.Common{FS: fsx.Real()})
	if err != nil || built {
		t.Fatalf("BuildIfNotBuilt through a handle without a catalog: %v, %v", built, err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	var none *catalogsync.Handle
	if none.Opener() != nil {
		t.Fatal("a nil Handle has an opener")
	}
}

// Rows of another repo's namespace (swamp-format §3.9) are never touched;
// rows of this repo's items under a namespace it no longer uses are its
// old stamps, and the rebuild reconciles them away.
func TestRebuildKeepsForeignRowsAndReconcilesOldStamps(t *testing.T) {
	r, _ := exampleRepo(t)
	rebuild(t, r, true)
	c, err := catalog.Open(ctx, fsx.Real(), r.CatalogPath, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	own, err := c.Rows(ctx, r.Namespace)
	if err != nil || len(own) == 0 {
		t.Fatalf("own rows: %d, %v", len(own), err)
	}
	foreign, old := own[0], own[0]
	foreign.Namespace, foreign.ModelID = "team-b", "00000000-0000-4000-8000-000000000001"
	old.Namespace = "old-ns"
	if err := c.UpsertVersions(ctx, []catalog.Row{foreign, old}); err != nil {
		t.Fatal(err)
	}
	inserted, err := c.Rows(ctx, "team-b")
	if err != nil || len(inserted) != 1 {
		t.Fatalf("team-b's rows: %+v, %v", inserted, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	rep := rebuild(t, r, true)
	if len(rep.ForeignNamespaces) != 1 || rep.ForeignNamespaces[0].Namespace != "team-b" || rep.Counts.ForeignKept != 1 {
		t.Errorf("foreign namespaces %+v, kept %d; want team-b's one row", rep.ForeignNamespaces, rep.Counts.ForeignKept)
	}
	if len(rep.StaleNamespaces) != 1 || rep.StaleNamespaces[0].Namespace != "old-ns" {
		t.Errorf("stale namespaces %+v, want old-ns", rep.StaleNamespaces)
	}
	c, err = catalog.Open(ctx, fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	kept, err := c.Rows(ctx, "team-b")
	if err != nil || !reflect.DeepEqual(kept, inserted) {
		t.Errorf("team-b's rows after the rebuild: %+v, %v; want %+v untouched", kept, err, inserted)
	}
	if gone, err := c.Rows(ctx, "old-ns"); err != nil || len(gone) != 0 {
		t.Errorf("old-ns rows after the rebuild: %+v, %v; want none", gone, err)
	}
}

// A damaged catalog: verify reports it and changes nothing; a preview says
// the rebuild would move it aside; the confirmed rebuild moves it aside
// (never deletes it: its bytes are kept) and builds a new one.
func TestRebuildMovesADamagedCatalogAside(t *testing.T) {
	r, _ := exampleRepo(t)
	garbage := []byte("this is not an SQLite database, but it was once a catalog\n")
	if err := os.MkdirAll(filepath.Dir(r.CatalogPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.CatalogPath, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	before := files(t, r)
	if _, err := catalogsync.Verify(ctx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}}); err == nil {
		t.Fatal("verify of a damaged catalog: no error")
	}
	if p := rebuild(t, r, false); p.CatalogDamaged == "" || p.Applied {
		t.Fatalf("preview of a damaged catalog: damaged %q, applied %v", p.CatalogDamaged, p.Applied)
	}
	if d := fsxtest.Diff(before, files(t, r)); len(d) != 0 {
		t.Fatalf("verify or the preview changed the damaged catalog: %v", d)
	}

	c := rebuild(t, r, true)
	if c.MovedAside == nil || len(c.MovedAside.Files) == 0 {
		t.Fatalf("confirmed rebuild of a damaged catalog: moved aside %+v", c.MovedAside)
	}
	var kept bool
	for _, m := range c.MovedAside.Files {
		if m.From == r.CatalogPath {
			b, err := os.ReadFile(m.To)
			kept = err == nil && string(b) == string(garbage)
		}
	}
	if !kept {
		t.Fatalf("the damaged catalog's bytes are not where it was moved: %+v", c.MovedAside.Files)
	}
	if v := verify(t, r); !v.InSync {
		t.Fatalf("verify after the rebuild: %+v", v.Counts)
	}
}
