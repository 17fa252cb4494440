package ops_test

// The rows a rebuild expects: which rows carry is_latest and
// is_step_latest, the order the rows come in and what the walk skips; then
// the rebuild's bulk path, where its time went, and a catalog created while
// it ran. The cs* helpers are in catalogsync_test.go.

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// The catalog's generation decides the flags (swamp-format §11): with is_step_latest,
// is_latest is one per item and is_step_latest one per (workflow, job,
// step) group.
func TestStepLatestCatalog(t *testing.T) {
	r := csNewExample(t)
	ddl, err := os.ReadFile(filepath.Join("..", "testdata", "catalog", "swamp-schema4-step-latest.sql"))
	if err != nil {
		t.Fatal(err)
	}
	csWithDB(t, r, func(db *sql.DB) {
		csExec1(t, db, `PRAGMA journal_mode=WAL`)
		csExec1(t, db, string(ddl))
	})
	rep := csRebuild(t, r)
	if !rep.StepLatestColumn {
		t.Fatal("is_step_latest not detected")
	}
	csMustAgree(t, r)
	f := csFlags(t, r, "")
	for _, w := range []string{csScan + "/result v1:00", csScan + "/result v2:00", csScan + "/result v3:01", csScan + "/result v4:11",
		csHello + "/result v3:11", csHello + "/result v2:00"} {
		if !csContains(f, w) {
			t.Fatalf("flag %q missing in %q", w, f)
		}
	}
}

// is_latest follows the `latest` pointer, falls back when it is unusable,
// never lands on an unreadable version, and never on a version above the
// committed latest (swamp-format §9.8).
func TestLatestFlagRules(t *testing.T) {
	latestOf := func(t *testing.T, e *catalogsync.Expected, item string) []int64 {
		var out []int64
		for _, row := range e.Rows {
			if row.TypeNormalized+"/"+row.ModelID+"/"+row.DataName == item && row.IsLatest {
				out = append(out, row.Version)
			}
		}
		return out
	}
	item := csHello + "/result"
	latestFile := func(r *repo.Repo) string { return filepath.Join(r.DataRoot, filepath.FromSlash(item), "latest") }
	cases := []struct {
		name   string
		change func(t *testing.T, r *repo.Repo)
		want   []int64
	}{
		{"pointer", func(*testing.T, *repo.Repo) {}, []int64{3}},
		{"pointer below the highest (uncommitted v3)", func(t *testing.T, r *repo.Repo) { csWriteFile(t, latestFile(r), []byte("2")) }, []int64{2}},
		{"pointer missing: highest", func(t *testing.T, r *repo.Repo) { os.Remove(latestFile(r)) }, []int64{3}},
		{"pointer empty: highest", func(t *testing.T, r *repo.Repo) { csWriteFile(t, latestFile(r), nil) }, []int64{3}},
		{"pointer to an unreadable version: last good", func(t *testing.T, r *repo.Repo) {
			csWriteFile(t, filepath.Join(csVersionDir(r, item, 3), "metadata.yaml"), nil)
		}, []int64{2}},
		{"pointer missing, highest unreadable: highest readable", func(t *testing.T, r *repo.Repo) {
			os.Remove(latestFile(r))
			csWriteFile(t, filepath.Join(csVersionDir(r, item, 3), "raw"), nil)
		}, []int64{2}},
		{"pointer to a vanished version: last good below it", func(t *testing.T, r *repo.Repo) {
			csWriteFile(t, latestFile(r), []byte("9"))
		}, []int64{3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := csNewExample(t)
			tc.change(t, r)
			e, err := catalogsync.ExpectedRows(csCtx, r, catalogsync.ExpectedOptions{Common: host.Common{FS: fsx.Real()}})
			if err != nil {
				t.Fatal(err)
			}
			if got := latestOf(t, e, item); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("is_latest on %v, want %v", got, tc.want)
			}
		})
	}
}

// Without versions above `latest`, the flags are exactly catalog.MarkLatest's.
func TestFlagsEqualMarkLatestOnCleanTree(t *testing.T) {
	r := csNewExample(t)
	for _, step := range []bool{false, true} {
		e, err := catalogsync.ExpectedRows(csCtx, r, catalogsync.ExpectedOptions{Common: host.Common{FS: fsx.Real()}, StepLatestColumn: step})
		if err != nil {
			t.Fatal(err)
		}
		mark := append([]catalog.Row(nil), e.Rows...)
		catalog.MarkLatest(mark, step)
		if !reflect.DeepEqual(mark, e.Rows) {
			t.Fatalf("step=%v: flags differ from catalog.MarkLatest", step)
		}
		e.Mark(!step)
		catalog.MarkLatest(mark, !step)
		if !reflect.DeepEqual(mark, e.Rows) {
			t.Fatalf("Mark(%v) differs from catalog.MarkLatest", !step)
		}
	}
}

func TestExpectedRowsOrderAndSkips(t *testing.T) {
	r := csNewExample(t)
	// A rename tombstone as the latest of an item: swamp removes the
	// item's rows (swamp-format §2.6.6), so it gets none.
	vpc := csFirstDir(t, filepath.Join(r.DataRoot, "aws", "ec2", "vpc"))
	tomb := &meta.Metadata{ID: "0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6e", Name: "vpc", Version: 3, ContentType: "application/json",
		Lifetime: "infinite", GarbageCollection: meta.GarbageCollection{N: 10},
		Tags:  meta.Tags{{Key: "type", Value: "resource"}, {Key: "specName", Value: "vpc"}, {Key: "modelName", Value: "main-vpc"}},
		Owner: meta.Owner{OwnerType: "model-method", OwnerRef: vpc}, CreatedAt: "2026-08-02T00:00:00.000Z",
		Lifecycle: "deleted", RenamedTo: "vpc-main"}
	md, err := meta.Encode(tomb)
	if err != nil {
		t.Fatal(err)
	}
	itemDir := filepath.Join(r.DataRoot, "aws", "ec2", "vpc", vpc, "vpc")
	csWriteFile(t, filepath.Join(itemDir, "3", "metadata.yaml"), md)
	csWriteFile(t, filepath.Join(itemDir, "3", "raw"), []byte(`{"renamedTo":"vpc-main"}`))
	csWriteFile(t, filepath.Join(itemDir, "latest"), []byte("3"))
	// A type directory swamp never reads (not normalised).
	if err := os.Rename(filepath.Join(r.DataRoot, "@acme"), filepath.Join(r.DataRoot, "@ACME")); err != nil {
		t.Fatal(err)
	}
	// A not-normalised copy beside the real items must not disturb them.
	// ("command.shell" walks after "command" and normalises to command/shell.)
	if out, err := exec.Command("cp", "-R", filepath.Join(r.DataRoot, "command", "shell"), filepath.Join(r.DataRoot, "command.shell")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}

	e, err := catalogsync.ExpectedRows(csCtx, r, catalogsync.ExpectedOptions{Common: host.Common{FS: fsx.Real()}, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if e.RenamedItems != 1 || e.RenamedVersions != 3 {
		t.Fatalf("renamed: %d items %d versions", e.RenamedItems, e.RenamedVersions)
	}
	for _, row := range e.Rows {
		if row.DataName == "vpc" || strings.HasPrefix(row.TypeNormalized, "@") {
			t.Fatalf("row for a skipped item: %+v", row)
		}
	}
	var codes []store.Code
	for _, p := range e.ItemProblems {
		codes = append(codes, p.Problem.Code)
	}
	if len(codes) != 4 {
		t.Fatalf("item problems: %v", codes)
	}
	for _, c := range codes {
		if c != catalogsync.CodeTypeNotNormalized {
			t.Fatalf("item problems: %v", codes)
		}
	}
	latest := 0
	for _, row := range e.Rows {
		if row.ModelID == example.HelloShell && row.IsLatest {
			latest++
			if row.Version != 3 {
				t.Fatalf("hello-shell latest is v%d", row.Version)
			}
		}
	}
	if latest != 1 {
		t.Fatalf("%d latest rows for hello-shell, want 1", latest)
	}
	// Key order, the order the diff lists rows in.
	for i := 1; i < len(e.Rows); i++ {
		a, b := e.Rows[i-1], e.Rows[i]
		ka := fmt.Sprintf("%s\x00%s\x00%s\x00%08d", a.TypeNormalized, a.ModelID, a.DataName, a.Version)
		kb := fmt.Sprintf("%s\x00%s\x00%s\x00%08d", b.TypeNormalized, b.ModelID, b.DataName, b.Version)
		if ka >= kb {
			t.Fatalf("rows not in key order at %d: %s >= %s", i, ka, kb)
		}
	}
	// The same tree gives the same rows whatever the worker count.
	e1, err := catalogsync.ExpectedRows(csCtx, r, catalogsync.ExpectedOptions{Common: host.Common{FS: fsx.Real()}, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e.Rows, e1.Rows) || !reflect.DeepEqual(e.ItemProblems, e1.ItemProblems) {
		t.Fatal("rows depend on the worker count")
	}
}

func csFirstDir(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		t.Fatalf("%s: %v", dir, err)
	}
	return ents[0].Name()
}

func TestUnlistableDirectoryFailsTheWalk(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory")
	}
	r := csSyncedExample(t)
	dir := filepath.Join(r.DataRoot, "aws")
	if err := os.Chmod(dir, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	before := csDumpAll(t, r)
	if _, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsx.Real()}, Confirm: true}); !errors.Is(err, syscall.EACCES) {
		t.Fatalf("rebuild over an unreadable directory: %v", err)
	}
	if after := csDumpAll(t, r); !reflect.DeepEqual(before, after) {
		t.Fatal("a failed walk changed the catalog")
	}
}

// Larger than one insert batch: Rebuild into an empty catalog gives exactly
// what Diff + Apply give, rowids included.
func TestBulkRebuildEqualsApply(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	if _, err := example.Synthetic(fsx.Real(), dir, example.SyntheticOptions{Items: 31, Versions: 3, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	r := csLoad(t, dir)
	rep := csVerify(t, r)
	twin := csTwinApplyFresh(t, r, rep)
	if rep := csRebuild(t, r); rep.Counts.RowsMissing != 93 || !rep.Applied {
		t.Fatalf("rebuild: %+v", rep.Counts)
	}
	if got := csDumpAll(t, r); !reflect.DeepEqual(got, twin) {
		t.Fatalf("Rebuild and Diff+Apply disagree:\n rebuild %q\n apply   %q", got, twin)
	}
	csMustAgree(t, r)
}

func csTwinApplyFresh(t *testing.T, r *repo.Repo, rep *catalogsync.Report) []string {
	t.Helper()
	twin := &repo.Repo{CatalogPath: filepath.Join(t.TempDir(), "_catalog.db")}
	c, err := catalog.Open(csCtx, fsx.Real(), twin.CatalogPath, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := catalogsync.ExpectedRows(csCtx, r, catalogsync.ExpectedOptions{Common: host.Common{FS: fsx.Real()}, StepLatestColumn: c.HasStepLatest()})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Diff(csCtx, r.Namespace, e.Rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(csCtx, r.Namespace, e.Rows, d); err != nil {
		t.Fatal(err)
	}
	return csDumpAll(t, twin)
}

// TestRebuildSaysWhereItsTimeWent: a confirmed rebuild reports its phases.
// From nothing it scans, inserts, builds nothing more (14 rows are too few
// for the bulk index path), commits and publishes the catalog it built
// aside (synced once, linked in); run again on the catalog it left, it
// scans and reads the rows but writes, commits and publishes nothing, and
// closes the catalog it opened.
func TestRebuildSaysWhereItsTimeWent(t *testing.T) {
	r := csNewExample(t)
	rep := csRebuild(t, r)
	tm := rep.Timings
	if tm == nil || tm.Scan <= 0 || tm.Write <= 0 || tm.Commit <= 0 || tm.Publish <= 0 {
		t.Fatalf("rebuild from nothing: timings %+v", tm)
	}
	again := csRebuild(t, r)
	tm = again.Timings
	if again.Applied || tm == nil || tm.Scan <= 0 || tm.Read <= 0 || tm.Write != 0 || tm.Commit != 0 || tm.Publish != 0 || tm.Close <= 0 {
		t.Fatalf("rebuild of a catalog in sync: applied %v, timings %+v", again.Applied, tm)
	}
}

// csCreateMeanwhileFS is the real disk on which a catalog appears under
// the catalog's name the moment a rebuild starts building its own aside:
// what swamp creating the catalog meanwhile does (it takes no swampj lock).
type csCreateMeanwhileFS struct {
	fsx.FS
	catalogPath string
	content     []byte
	done        bool
}

func (f *csCreateMeanwhileFS) Create(name string, perm os.FileMode) (fsx.File, error) {
	if !f.done && strings.HasPrefix(filepath.Base(name), catalog.CreationPrefix(repo.CatalogName)) {
		f.done = true
		if err := os.WriteFile(f.catalogPath, f.content, 0o644); err != nil {
			return nil, err
		}
	}
	return f.FS.Create(name, perm)
}

// TestRebuildFromNothingMeetsACatalogCreatedMeanwhile: a rebuild that
// found no catalog builds one aside; when a catalog appears under the name
// before it is linked in, the rebuild leaves the temp, rebuilds that
// catalog in place — its own rows exactly as a plain rebuild gives them,
// the other catalog's meta key kept — and leaves nothing beside it.
func TestRebuildFromNothingMeetsACatalogCreatedMeanwhile(t *testing.T) {
	twin := csNewExample(t)
	csRebuild(t, twin)
	want := csDump(t, twin, "")

	// "swamp's" catalog: swamp's schema, no rows, a key of its own.
	theirs := filepath.Join(t.TempDir(), repo.CatalogName)
	c, err := catalog.Open(csCtx, fsx.Real(), theirs, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	db, err := sql.Open("sqlite", theirs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO catalog_meta (key, value) VALUES ('foreign_synced:elsewhere', '2026-12-01T00:00:00.000Z')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	content, err := os.ReadFile(theirs)
	if err != nil {
		t.Fatal(err)
	}

	r := csNewExample(t)
	fsys := &csCreateMeanwhileFS{FS: fsx.Real(), catalogPath: r.CatalogPath, content: content}
	rep, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsys}, Confirm: true})
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if !fsys.done {
		t.Fatal("the rebuild built no catalog aside")
	}
	if !rep.Applied || rep.CatalogCreated || rep.Counts.RowsMissing != len(want) {
		t.Fatalf("rebuild: applied %v, created %v, %d rows missing (want %d)", rep.Applied, rep.CatalogCreated, rep.Counts.RowsMissing, len(want))
	}
	if got := csDump(t, r, ""); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows after the rebuild in place:\n%q\nwant\n%q", got, want)
	}
	if !csContains(csDumpAll(t, r), "foreign_synced:elsewhere2026-12-01T00:00:00.000Z") {
		t.Fatalf("the other catalog's meta key is gone: %q", csDumpAll(t, r))
	}
	csMustAgree(t, r)
	ents, err := os.ReadDir(filepath.Dir(r.CatalogPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() && e.Name() != repo.CatalogName {
			t.Fatalf("%s left beside the catalog", e.Name())
		}
	}
}
