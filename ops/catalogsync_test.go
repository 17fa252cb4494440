package ops_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/ops/store"
)

var csCtx = context.Background()

var csNow = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

// The example repo's items (example.Write).
const (
	csHello = "command/shell/" + example.HelloShell
	csScan  = "command/shell/" + example.ScanShell
)

// newExample writes example.Write into a fresh directory and returns it loaded,
// without a catalog.
func csNewExample(t *testing.T) *repo.Repo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if _, err := example.Write(fsx.Real(), dir); err != nil {
		t.Fatal(err)
	}
	return csLoad(t, dir)
}

// syncedExample is newExample with a catalog rebuilt from the tree.
func csSyncedExample(t *testing.T) *repo.Repo {
	t.Helper()
	r := csNewExample(t)
	csRebuild(t, r)
	return r
}

func csLoad(t *testing.T, dir string) *repo.Repo {
	t.Helper()
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func csRebuild(t *testing.T, r *repo.Repo) *catalogsync.Report {
	t.Helper()
	rep, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsx.Real()}, Confirm: true})
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	return rep
}

func csVerify(t *testing.T, r *repo.Repo) *catalogsync.Report {
	t.Helper()
	rep, err := catalogsync.Verify(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsx.Real()}})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return rep
}

// mustAgree verifies and fails unless the catalog agrees with the disk.
func csMustAgree(t *testing.T, r *repo.Repo) *catalogsync.Report {
	t.Helper()
	rep := csVerify(t, r)
	if !rep.InSync {
		t.Fatalf("verify after rebuild: not in sync: %+v\n%+v", rep.Counts, rep.Diff)
	}
	return rep
}

// withDB runs fn on a plain SQLite connection to the catalog, as swamp or a
// hand edit would, and closes it.
func csWithDB(t *testing.T, r *repo.Repo, fn func(db *sql.DB)) {
	t.Helper()
	db, err := sql.Open("sqlite", r.CatalogPath+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fn(db)
}

func csExec1(t *testing.T, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	res, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	n, _ := res.RowsAffected()
	return n
}

// insertRow writes a full row with plain SQL.
func csInsertRow(t *testing.T, db *sql.DB, r catalog.Row) {
	t.Helper()
	csExec1(t, db, `INSERT OR REPLACE INTO catalog (namespace, type_normalized, model_id, data_name, id, version, is_latest,
		model_name, spec_name, data_type, content_type, lifetime, owner_type, streaming, size, created_at, tags, owner_ref,
		workflow_run_id, workflow_name, job_name, step_name, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		r.Namespace, r.TypeNormalized, r.ModelID, r.DataName, r.ID, r.Version, csBi(r.IsLatest), r.ModelName, r.SpecName,
		r.DataType, r.ContentType, r.Lifetime, r.OwnerType, csBi(r.Streaming), r.Size, r.CreatedAt, r.Tags, r.OwnerRef,
		r.WorkflowRunID, r.WorkflowName, r.JobName, r.StepName, r.Source)
}

func csBi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// foreignRow is a row another repo exported under namespace ns.
func csForeignRow(ns, model, name string, v int64) catalog.Row {
	return catalog.Row{Namespace: ns, TypeNormalized: "aws/s3/bucket", ModelID: model, DataName: name,
		ID: fmt.Sprintf("f-%s-%d", name, v), Version: v, IsLatest: true, ModelName: "their-bucket", SpecName: name,
		DataType: "resource", ContentType: "application/json", Lifetime: "infinite", OwnerType: "model-method",
		Size: 7, CreatedAt: "2026-07-01T00:00:00.000Z", Tags: `{"type":"resource"}`, OwnerRef: model}
}

// addForeign plants foreign rows the way `swamp datastore catalog pull`
// does: rows of namespace "infra" plus foreign_synced:infra. One of them is
// for one of this repo's own items, to show that foreign stays foreign.
func csAddForeign(t *testing.T, r *repo.Repo) []string {
	t.Helper()
	csWithDB(t, r, func(db *sql.DB) {
		for _, fr := range []catalog.Row{
			csForeignRow("infra", "11111111-2222-4333-8444-555555555555", "bucket", 1),
			csForeignRow("infra", "11111111-2222-4333-8444-555555555555", "bucket", 2),
		} {
			csInsertRow(t, db, fr)
		}
		mine := csForeignRow("infra", example.HelloShell, "result", 3)
		mine.TypeNormalized = "command/shell"
		csInsertRow(t, db, mine)
		csExec1(t, db, `INSERT OR REPLACE INTO catalog_meta (key, value) VALUES ('foreign_synced:infra', '2026-08-01T00:00:00.000Z')`)
	})
	return csDump(t, r, "infra")
}

// dump renders every row stamped ns (all columns and the rowid) in rowid
// order, for exact before/after comparisons.
func csDump(t *testing.T, r *repo.Repo, ns string) []string {
	t.Helper()
	var out []string
	csWithDB(t, r, func(db *sql.DB) {
		rows, err := db.Query(`SELECT rowid, * FROM catalog WHERE namespace = ? ORDER BY rowid`, ns)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(vals...))
		}
	})
	return out
}

// dumpAll is dump over every namespace, plus catalog_meta.
func csDumpAll(t *testing.T, r *repo.Repo) []string {
	t.Helper()
	var out []string
	csWithDB(t, r, func(db *sql.DB) {
		for _, q := range []string{`SELECT rowid, * FROM catalog ORDER BY rowid`, `SELECT * FROM catalog_meta ORDER BY key`} {
			rows, err := db.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				out = append(out, fmt.Sprint(vals...))
			}
			rows.Close()
		}
	})
	return out
}

// flags lists "item vN:latest[step]" for the rows stamped ns, sorted.
func csFlags(t *testing.T, r *repo.Repo, ns string) []string {
	t.Helper()
	c, err := catalog.Open(csCtx, fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.Rows(csCtx, ns)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, row := range rows {
		s := fmt.Sprintf("%s/%s/%s v%d:%d", row.TypeNormalized, row.ModelID, row.DataName, row.Version, csBi(row.IsLatest))
		if c.HasStepLatest() {
			s += fmt.Sprint(csBi(row.IsStepLatest))
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func csVersionDir(r *repo.Repo, item string, v int) string {
	return filepath.Join(r.DataRoot, filepath.FromSlash(item), fmt.Sprint(v))
}

func csWriteFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRebuildFromNothingThenVerifyAgrees(t *testing.T) {
	r := csNewExample(t)

	rep := csVerify(t, r)
	if rep.InSync || !rep.CatalogMissing || rep.Counts.RowsMissing != 14 || rep.Counts.ExpectedRows != 14 {
		t.Fatalf("verify without a catalog: %+v", rep)
	}
	if ok, _ := fsx.Exists(fsx.Real(), r.CatalogPath); ok {
		t.Fatal("verify created the catalog")
	}
	preview, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsx.Real()}})
	if err != nil || preview.Applied || preview.Counts.RowsMissing != 14 {
		t.Fatalf("preview: %+v %v", preview, err)
	}
	if ok, _ := fsx.Exists(fsx.Real(), r.CatalogPath); ok {
		t.Fatal("rebuild without --confirm created the catalog")
	}

	rep = csRebuild(t, r)
	if !rep.Applied || !rep.CatalogCreated || rep.Counts.Items != 6 || rep.Counts.VersionsOnDisk != 14 || rep.Counts.Readable != 14 {
		t.Fatalf("rebuild: %+v", rep)
	}
	csMustAgree(t, r)

	// Without is_step_latest, is_latest is per (item, step_name) (swamp-format §3.5):
	// scan-shell's two steps each keep their newest version.
	got := csFlags(t, r, "")
	want := []string{
		"command/shell/" + example.HelloShell + "/result v1:0",
		"command/shell/" + example.HelloShell + "/result v2:0",
		"command/shell/" + example.HelloShell + "/result v3:1",
		csScan + "/result v1:0", csScan + "/result v2:0", csScan + "/result v3:1", csScan + "/result v4:1",
	}
	for _, w := range want {
		if !csContains(got, w) {
			t.Fatalf("flag %q missing in %q", w, got)
		}
	}

	// rowid order is write order, (created_at, version) (swamp-format §9.9).
	c, err := catalog.Open(csCtx, fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	byRowid, err := c.Rows(csCtx, "")
	c.Close()
	if err != nil || len(byRowid) != 14 {
		t.Fatalf("rows: %d %v", len(byRowid), err)
	}
	for i := 1; i < len(byRowid); i++ {
		if byRowid[i-1].CreatedAt > byRowid[i].CreatedAt {
			t.Fatalf("rowid order is not write order at %d: %s > %s", i, byRowid[i-1].CreatedAt, byRowid[i].CreatedAt)
		}
	}

	// A second rebuild finds nothing to do and changes nothing.
	before := csDumpAll(t, r)
	rep = csRebuild(t, r)
	if !rep.InSync || rep.Applied {
		t.Fatalf("second rebuild: %+v", rep)
	}
	if after := csDumpAll(t, r); !reflect.DeepEqual(before, after) {
		t.Fatal("a rebuild of an agreeing catalog changed it")
	}
}

func csContains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// Each kind of drift is one small corrupt function (etcd's repair-test
// shape). After it: verify reports exactly that drift, rebuild fixes it,
// verify agrees, and the foreign rows are byte for byte what they were.
func TestRebuildFixesEachKindOfDrift(t *testing.T) {
	type counts struct{ missing, stale, flags, fields, wrongNS, unreadable int }
	cases := []struct {
		name    string
		corrupt func(t *testing.T, r *repo.Repo)
		want    counts
		check   func(t *testing.T, r *repo.Repo)
	}{
		{
			name: "rows missing",
			corrupt: func(t *testing.T, r *repo.Repo) {
				csWithDB(t, r, func(db *sql.DB) {
					csExec1(t, db, `DELETE FROM catalog WHERE namespace = '' AND model_id = ?`, example.ScanShell)
				})
			},
			want: counts{missing: 4},
		},
		{
			name: "row of a deleted version",
			corrupt: func(t *testing.T, r *repo.Repo) {
				if err := os.RemoveAll(csVersionDir(r, csScan+"/result", 4)); err != nil {
					t.Fatal(err)
				}
				csWriteFile(t, filepath.Join(r.DataRoot, filepath.FromSlash(csScan), "result", "latest"), []byte("3"))
			},
			// v4 was summarize's latest; summarize's latest is now v2.
			want: counts{stale: 1, flags: 1},
			check: func(t *testing.T, r *repo.Repo) {
				f := csFlags(t, r, "")
				if !csContains(f, csScan+"/result v2:1") || !csContains(f, csScan+"/result v3:1") {
					t.Fatalf("flags after deleting v4: %q", f)
				}
			},
		},
		{
			name: "zero-byte latest version (#3955)",
			corrupt: func(t *testing.T, r *repo.Repo) {
				dir := csVersionDir(r, csHello+"/result", 3)
				csWriteFile(t, filepath.Join(dir, "metadata.yaml"), nil)
				csWriteFile(t, filepath.Join(dir, "raw"), nil)
			},
			want: counts{stale: 1, flags: 1, unreadable: 1},
			check: func(t *testing.T, r *repo.Repo) {
				f := csFlags(t, r, "")
				if !csContains(f, csHello+"/result v2:1") || csContains(f, csHello+"/result v3:1") || csContains(f, csHello+"/result v3:0") {
					t.Fatalf("flags after emptying v3: %q", f)
				}
			},
		},
		{
			name: "whole item deleted",
			corrupt: func(t *testing.T, r *repo.Repo) {
				if err := os.RemoveAll(filepath.Join(r.DataRoot, "aws")); err != nil {
					t.Fatal(err)
				}
			},
			want: counts{stale: 3},
		},
		{
			name: "flags wrong",
			corrupt: func(t *testing.T, r *repo.Repo) {
				csWithDB(t, r, func(db *sql.DB) {
					csExec1(t, db, `UPDATE catalog SET is_latest = 1 - is_latest WHERE namespace = '' AND data_name = 'result'`)
				})
			},
			want: counts{flags: 10},
		},
		{
			name: "fields wrong",
			corrupt: func(t *testing.T, r *repo.Repo) {
				csWithDB(t, r, func(db *sql.DB) {
					csExec1(t, db, `UPDATE catalog SET size = 0, tags = '{}' WHERE namespace = '' AND version = 1`)
				})
			},
			want: counts{fields: 6},
		},
		{
			name: "old namespace stamps of this repo (solo again after a namespace)",
			corrupt: func(t *testing.T, r *repo.Repo) {
				csWithDB(t, r, func(db *sql.DB) {
					// Half the rows still carry the namespace the repo had
					// (swamp-format §10.8); one of them is for a version deleted since.
					csExec1(t, db, `UPDATE catalog SET namespace = 'old' WHERE namespace = '' AND model_id = ?`, example.ScanShell)
					old := csForeignRow("old", example.ScanShell, "result", 9)
					old.TypeNormalized = "command/shell"
					csInsertRow(t, db, old)
				})
			},
			want: counts{missing: 4, wrongNS: 4, stale: 1},
			check: func(t *testing.T, r *repo.Repo) {
				if rows := csDump(t, r, "old"); len(rows) != 0 {
					t.Fatalf("old stamps left: %q", rows)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := csSyncedExample(t)
			foreign := csAddForeign(t, r)
			tc.corrupt(t, r)

			rep := csVerify(t, r)
			got := counts{rep.Counts.RowsMissing, rep.Counts.RowsStale, rep.Counts.FlagsWrong, rep.Counts.FieldsWrong,
				rep.Counts.WrongNamespace, rep.Counts.Unreadable}
			if rep.InSync || got != tc.want {
				t.Fatalf("verify: got %+v, want %+v\n%+v", got, tc.want, rep.Diff)
			}
			if rep.Counts.ForeignKept != 3 || len(rep.ForeignNamespaces) != 1 || rep.ForeignNamespaces[0].Namespace != "infra" {
				t.Fatalf("foreign rows not reported as kept: %+v %+v", rep.Counts, rep.ForeignNamespaces)
			}

			// The same repair through the catalog's plain Diff + Apply, on a
			// copy, must give the very same catalog, rowids included: the
			// bulk path (catalog/bulk.go) changes speed, not results.
			twin := csTwinApply(t, r, rep)

			if rep := csRebuild(t, r); !rep.Applied {
				t.Fatalf("rebuild did not apply: %+v", rep)
			}
			csMustAgree(t, r)
			if got := csDumpAll(t, r); !reflect.DeepEqual(got, twin) {
				t.Fatalf("Rebuild and Diff+Apply disagree:\n rebuild %q\n apply   %q", got, twin)
			}
			if after := csDump(t, r, "infra"); !reflect.DeepEqual(foreign, after) {
				t.Fatalf("foreign rows changed:\n before %q\n after  %q", foreign, after)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// csTwinApply copies r's catalog aside, repairs the copy with Diff and
// Apply, and returns its dump.
func csTwinApply(t *testing.T, r *repo.Repo, rep *catalogsync.Report) []string {
	t.Helper()
	twin := &repo.Repo{CatalogPath: filepath.Join(t.TempDir(), "_catalog.db")}
	csWithDB(t, r, func(db *sql.DB) { csExec1(t, db, `PRAGMA wal_checkpoint(TRUNCATE)`) })
	data, err := os.ReadFile(r.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	csWriteFile(t, twin.CatalogPath, data)
	c, err := catalog.Open(csCtx, fsx.Real(), twin.CatalogPath, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := catalogsync.ExpectedRows(csCtx, r, catalogsync.ExpectedOptions{Common: host.Common{FS: fsx.Real()}, StepLatestColumn: c.HasStepLatest()})
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	for _, s := range rep.StaleNamespaces {
		stale = append(stale, s.Namespace)
	}
	d, err := c.Diff(csCtx, r.Namespace, e.Rows, stale)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(csCtx, r.Namespace, e.Rows, d); err != nil {
		t.Fatal(err)
	}
	return csDumpAll(t, twin)
}

// namespaced turns a synced example repo into one whose .swamp.yaml has
// namespace ns and whose data was moved under {base}/{ns}/data, as `swamp
// datastore namespace set` + `migrate --confirm` leave it: the catalog stays
// at .swamp/data with every row still stamped "" (swamp-format §10.8, §9.18).
func csNamespaced(t *testing.T, r *repo.Repo, ns string) *repo.Repo {
	t.Helper()
	base := filepath.Join(r.Dir, ".swamp")
	cfg, err := os.ReadFile(r.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, []byte("datastore:\n  type: filesystem\n  path: "+base+"\n  namespace: "+ns+"\n")...)
	csWriteFile(t, r.ConfigPath, cfg)
	to := filepath.Join(base, ns, "data")
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(r.DataRoot)
	for _, e := range ents {
		if repo.IsCatalogFile(e.Name()) {
			continue
		}
		if err := os.Rename(filepath.Join(r.DataRoot, e.Name()), filepath.Join(to, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	csWriteFile(t, repo.ManifestPath(base, ns), repo.WriteManifestBytes(ns, r.RepoID, csNow))
	nr := csLoad(t, r.Dir)
	if nr.Namespace != ns || nr.DataRoot != to {
		t.Fatalf("namespaced repo: %+v", nr)
	}
	return nr
}

func TestRebuildRestampsSoloRowsAfterNamespaceSet(t *testing.T) {
	solo := csSyncedExample(t)
	foreign := csAddForeign(t, solo)
	r := csNamespaced(t, solo, "demo")

	rep := csVerify(t, r)
	if rep.InSync || rep.Counts.RowsMissing != 14 || rep.Counts.WrongNamespace != 14 || rep.Counts.RowsStale != 0 {
		t.Fatalf("verify: %+v", rep.Counts)
	}
	if len(rep.StaleNamespaces) != 1 || rep.StaleNamespaces[0].Namespace != "" {
		t.Fatalf("stale namespaces: %+v", rep.StaleNamespaces)
	}
	csRebuild(t, r)
	csMustAgree(t, r)
	if n := len(csDump(t, r, "")); n != 0 {
		t.Fatalf("%d solo rows left", n)
	}
	if n := len(csDump(t, r, "demo")); n != 14 {
		t.Fatalf("%d rows stamped demo, want 14", n)
	}
	if after := csDump(t, r, "infra"); !reflect.DeepEqual(foreign, after) {
		t.Fatal("foreign rows changed")
	}
}

// A namespace is never taken for an old stamp when it was pulled as foreign
// or registered by another repo, even when its rows name this repo's items.
func TestForeignNamespacesAreNeverRestamped(t *testing.T) {
	r := csSyncedExample(t)
	csWithDB(t, r, func(db *sql.DB) {
		// Registered by another repo, never pulled.
		other := csForeignRow("other", example.HelloShell, "result", 1)
		other.TypeNormalized = "command/shell"
		csInsertRow(t, db, other)
		// Not pulled, not registered, and for no item of this repo.
		csInsertRow(t, db, csForeignRow("stray", "99999999-2222-4333-8444-555555555555", "x", 1))
	})
	csWriteFile(t, repo.ManifestPath(r.Base, "other"), repo.WriteManifestBytes("other", "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", csNow))
	infra := csAddForeign(t, r)
	before := map[string][]string{"other": csDump(t, r, "other"), "stray": csDump(t, r, "stray"), "infra": infra}

	rep := csVerify(t, r)
	if !rep.InSync || rep.Counts.ForeignKept != 5 || len(rep.StaleNamespaces) != 0 {
		t.Fatalf("verify: in sync %v, %+v, stale %+v, foreign %+v", rep.InSync, rep.Counts, rep.StaleNamespaces, rep.ForeignNamespaces)
	}
	csRebuild(t, r)
	for ns, rows := range before {
		if after := csDump(t, r, ns); !reflect.DeepEqual(rows, after) {
			t.Fatalf("namespace %q changed", ns)
		}
	}
}

// The rebuild is one transaction: when it fails right before COMMIT (the
// catalog's failpoint), every row — stale, missing, old-stamped, foreign —
// is exactly as before, rowids included.
func TestRebuildIsOneTransaction(t *testing.T) {
	r := csSyncedExample(t)
	csAddForeign(t, r)
	dir := csVersionDir(r, csHello+"/result", 3)
	csWriteFile(t, filepath.Join(dir, "metadata.yaml"), nil)
	csWithDB(t, r, func(db *sql.DB) {
		csExec1(t, db, `DELETE FROM catalog WHERE namespace = '' AND model_id = ?`, example.ScanShell)
		csExec1(t, db, `UPDATE catalog SET size = 0 WHERE namespace = '' AND data_name = 'vpc'`)
		csExec1(t, db, `DELETE FROM catalog_meta WHERE key = 'populated'`)
	})
	before := csDumpAll(t, r)

	injected := errors.New("injected commit failure")
	fault := fsx.NewFault(fsx.Real()).FailKind("failpoint:"+catalog.FailpointRebuild, injected)
	_, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: fault}, Confirm: true})
	if !errors.Is(err, injected) {
		t.Fatalf("rebuild: %v, want the injected error", err)
	}
	if fault.Count("failpoint:"+catalog.FailpointRebuild) != 1 {
		t.Fatalf("trace: %v", fault.Trace())
	}
	if after := csDumpAll(t, r); !reflect.DeepEqual(before, after) {
		t.Fatalf("a failed rebuild changed the catalog:\n before %q\n after  %q", before, after)
	}
	if rep := csVerify(t, r); rep.InSync {
		t.Fatal("drift vanished after a failed rebuild")
	}
	csRebuild(t, r)
	csMustAgree(t, r)
}

// csCrashFS copies the catalog files (with `cp`, another process, so this
// process's SQLite locks are not disturbed) at the rebuild's commit point and
// then stops the process model: the copy is what a power cut or kill -9
// right before COMMIT leaves on disk.
type csCrashFS struct {
	fsx.FS
	catalog, snapshot string
	t                 *testing.T
}

func (c *csCrashFS) Failpoint(name string) error {
	if name != catalog.FailpointRebuild {
		return c.FS.Failpoint(name)
	}
	for _, suf := range []string{"", "-wal"} {
		if _, err := os.Stat(c.catalog + suf); err != nil {
			continue
		}
		if out, err := exec.Command("cp", c.catalog+suf, c.snapshot+suf).CombinedOutput(); err != nil {
			c.t.Errorf("cp: %v %s", err, out)
		}
	}
	return fsx.ErrCrashed
}

func TestCrashBeforeCommitLeavesPreviousCatalog(t *testing.T) {
	r := csSyncedExample(t)
	csAddForeign(t, r)
	if err := os.RemoveAll(filepath.Join(r.DataRoot, "aws")); err != nil {
		t.Fatal(err)
	}
	csWithDB(t, r, func(db *sql.DB) {
		csExec1(t, db, `UPDATE catalog SET is_latest = 0 WHERE namespace = ''`)
	})
	before := csDumpAll(t, r)

	snapDir := filepath.Join(t.TempDir(), "snap", ".swamp", "data")
	if err := os.MkdirAll(snapDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfs := &csCrashFS{FS: fsx.Real(), catalog: r.CatalogPath, snapshot: filepath.Join(snapDir, "_catalog.db"), t: t}
	if _, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: cfs}, Confirm: true}); !fsx.IsCrash(err) {
		t.Fatalf("rebuild: %v, want the simulated crash", err)
	}
	// The files as the crash left them hold the previous catalog: SQLite
	// ignores WAL frames without a commit record.
	snap := &repo.Repo{CatalogPath: cfs.snapshot}
	if got := csDumpAll(t, snap); !reflect.DeepEqual(before, got) {
		t.Fatalf("files at the crash point do not hold the previous catalog:\n before %q\n crash  %q", before, got)
	}
	if got := csDumpAll(t, r); !reflect.DeepEqual(before, got) {
		t.Fatal("the live catalog changed")
	}
}

// hotWAL opens a second connection that commits without ever checkpointing
// and stays open, so its rows live only in _catalog.db-wal.
func csHotWAL(t *testing.T, r *repo.Repo) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", r.CatalogPath+"?_pragma=busy_timeout(5000)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q %v", mode, err)
	}
	return db
}

func TestHotWALIsReadAndSurvivesRebuild(t *testing.T) {
	r := csSyncedExample(t)
	db := csHotWAL(t, r)
	csInsertRow(t, db, csForeignRow("infra", "11111111-2222-4333-8444-555555555555", "bucket", 1))
	csExec1(t, db, `INSERT OR REPLACE INTO catalog_meta (key, value) VALUES ('foreign_synced:infra', 'x')`)
	csExec1(t, db, `DELETE FROM catalog WHERE namespace = '' AND data_name = '207333'`)
	stale := csForeignRow("", example.HelloShell, "result", 7)
	stale.TypeNormalized = "command/shell"
	csInsertRow(t, db, stale)

	// The commits are in the -wal only: the database file alone, copied
	// without its WAL, does not have them.
	if fi, err := os.Stat(r.CatalogPath + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("no hot WAL: %v", err)
	}
	alone := filepath.Join(t.TempDir(), "alone.db")
	if out, err := exec.Command("cp", r.CatalogPath, alone).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if got := csDump(t, &repo.Repo{CatalogPath: alone}, "infra"); len(got) != 0 {
		t.Fatalf("the rows reached the database file: %q", got)
	}

	// A copy of db + wal is what a crashed swamp leaves: a hot WAL with no
	// process. It is recovered and read the same way.
	crashed := csNewExample(t)
	for _, suf := range []string{"", "-wal"} {
		if out, err := exec.Command("cp", r.CatalogPath+suf, crashed.CatalogPath+suf).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
	}

	for name, rr := range map[string]*repo.Repo{"live": r, "crashed": crashed} {
		t.Run(name, func(t *testing.T) {
			rep := csVerify(t, rr)
			if rep.InSync || rep.Counts.RowsMissing != 1 || rep.Counts.RowsStale != 1 || rep.Counts.ForeignKept != 1 {
				t.Fatalf("verify did not see the WAL's rows: %+v", rep.Counts)
			}
			csRebuild(t, rr)
			csMustAgree(t, rr)
			if got := csDump(t, rr, "infra"); len(got) != 1 {
				t.Fatalf("foreign row from the WAL lost: %q", got)
			}
		})
	}
	// The live second connection sees the rebuilt catalog too.
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM catalog WHERE namespace = ''`).Scan(&n); err != nil || n != 14 {
		t.Fatalf("second connection sees %d rows (%v), want 14", n, err)
	}
}

func TestDamagedCatalogIsMovedAsideAndRebuilt(t *testing.T) {
	r := csSyncedExample(t)
	csWriteFile(t, r.CatalogPath, []byte("this is not a database, it was overwritten"))

	if _, err := catalogsync.Verify(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsx.Real()}}); catalog.ErrorCode(err) != catalog.CodeCorrupt {
		t.Fatalf("verify of a damaged catalog: %v", err)
	}
	preview, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsx.Real()}})
	if err != nil || preview.CatalogDamaged == "" || preview.Applied {
		t.Fatalf("preview: %+v %v", preview, err)
	}
	rep := csRebuild(t, r)
	if rep.MovedAside == nil || len(rep.MovedAside.Files) == 0 {
		t.Fatalf("not reported as moved aside: %+v", rep)
	}
	if _, err := os.Stat(rep.MovedAside.Files[0].To); err != nil {
		t.Fatalf("moved-aside file: %v", err)
	}
	csMustAgree(t, r)
}

func TestRebuildRefusesWhileRecoveryHasWork(t *testing.T) {
	r := csSyncedExample(t)
	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Begin(&journal.Intent{Kind: "test", Summary: "interrupted"}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	var oi *report.OpenIntentsError
	if _, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsx.Real()}, Confirm: true}); !errors.As(err, &oi) || oi.Code() != "open_intents" {
		t.Fatalf("rebuild with an open intent: %v", err)
	}
	if rep := csVerify(t, r); rep.OpenIntents != 1 || !rep.InSync {
		t.Fatalf("verify with an open intent: %+v", rep)
	}
}

func TestVerifyWaitsForTheJournalLock(t *testing.T) {
	r := csSyncedExample(t)
	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	_, err = catalogsync.Verify(csCtx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: 200 * time.Millisecond, FS: fsx.Real()}})
	if !errors.Is(err, journal.ErrLockTimeout) {
		t.Fatalf("verify while another swampj holds the repo: %v", err)
	}
}

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
