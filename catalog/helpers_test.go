package catalog_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
)

var ctx = context.Background()

// catalogPath is where swamp keeps the catalog inside a fresh repo (swamp-format §3.1);
// the parent directories do not exist yet.
func catalogPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "repo", ".swamp", "data", "_catalog.db")
}

func openRW(t *testing.T, path string) *catalog.Catalog {
	t.Helper()
	return openWith(t, fsx.Real(), path)
}

func openWith(t *testing.T, fsys fsx.FS, path string) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Open(ctx, fsys, path, catalog.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rawDB opens the file with plain SQLite, as another process (swamp) would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// buildFromFixture creates a catalog at path the way swamp would, from one
// of the DDL files under testdata/catalog, and switches it to WAL.
func buildFromFixture(t *testing.T, path, fixture string) *sql.DB {
	t.Helper()
	ddl, err := os.ReadFile(filepath.Join("..", "testdata", "catalog", fixture))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode=WAL`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode=WAL: %q %v", mode, err)
	}
	mustExec(t, db, string(ddl))
	return db
}

// insertRaw writes a row with plain SQL (all 23 columns; is_step_latest too
// when withStep).
func insertRaw(t *testing.T, db *sql.DB, r catalog.Row, withStep bool) {
	t.Helper()
	cols := `namespace, type_normalized, model_id, data_name, id, version, is_latest, model_name, spec_name,
		data_type, content_type, lifetime, owner_type, streaming, size, created_at, tags, owner_ref,
		workflow_run_id, workflow_name, job_name, step_name, source`
	vals := []any{r.Namespace, r.TypeNormalized, r.ModelID, r.DataName, r.ID, r.Version, b(r.IsLatest),
		r.ModelName, r.SpecName, r.DataType, r.ContentType, r.Lifetime, r.OwnerType, b(r.Streaming), r.Size,
		r.CreatedAt, r.Tags, r.OwnerRef, r.WorkflowRunID, r.WorkflowName, r.JobName, r.StepName, r.Source}
	marks := "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?"
	if withStep {
		cols += ", is_step_latest"
		vals = append(vals, b(r.IsStepLatest))
		marks += ", ?"
	}
	mustExec(t, db, `INSERT INTO catalog (`+cols+`) VALUES (`+marks+`)`, vals...)
}

func b(v bool) int {
	if v {
		return 1
	}
	return 0
}

// row builds a plausible row; the created_at grows with the version.
func row(ns, typ, model, name string, v int64) catalog.Row {
	return catalog.Row{
		Namespace: ns, TypeNormalized: typ, ModelID: model, DataName: name,
		ID: fmt.Sprintf("id-%s-%s-%d", model, name, v), Version: v,
		ModelName: "name-" + model, SpecName: name, DataType: "resource",
		ContentType: "application/json", Lifetime: "infinite", OwnerType: "model-method",
		Size: 10 * v, CreatedAt: fmt.Sprintf("2026-08-01T12:00:%02d.000Z", v),
		Tags:     `{"type":"resource","specName":"` + name + `","modelName":"name-` + model + `"}`,
		OwnerRef: model,
	}
}

func stepRow(ns, name string, v int64, workflow, job, step string) catalog.Row {
	r := row(ns, "aws/ec2/vpc", "m1", name, v)
	r.WorkflowName, r.JobName, r.StepName, r.Source = workflow, job, step, "step-output"
	r.WorkflowRunID = fmt.Sprintf("run-%d", v)
	return r
}

func rows(t *testing.T, c *catalog.Catalog, ns string) []catalog.Row {
	t.Helper()
	rs, err := c.Rows(ctx, ns)
	if err != nil {
		t.Fatalf("Rows(%q): %v", ns, err)
	}
	return rs
}

// flags renders "v<version>:<is_latest><is_step_latest>" per row, in rowid
// order, for compact assertions.
func flags(rs []catalog.Row) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s/v%d:%d%d", r.DataName, r.Version, b(r.IsLatest), b(r.IsStepLatest))
	}
	return out
}

func wantStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// masterSnapshot is sqlite_master as text, for "schema unchanged" checks.
func masterSnapshot(t *testing.T, path string) []string {
	t.Helper()
	db := rawDB(t, path)
	defer db.Close()
	rs, err := db.Query(`SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var a, b2, c, d string
		if err := rs.Scan(&a, &b2, &c, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, a+"|"+b2+"|"+c+"|"+d)
	}
	return out
}

// dirListing maps each file name in dir to its content.
func dirListing(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// keptSidecar: the -wal and -shm SQLite keeps beside the catalog between
// processes (persistwal.go).
func keptSidecar(name string) bool { return name == "_catalog.db-wal" || name == "_catalog.db-shm" }
