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
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
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
