package catalog_test

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/swampj/swampj/catalog"
)

// swampTable is swamp-format §3.3's column table, written out independently of the
// package's own copy: name, type, notnull, default, pk.
var swampTable = []string{
	"namespace|TEXT|1|''|1",
	"type_normalized|TEXT|1|<nil>|2",
	"model_id|TEXT|1|<nil>|3",
	"data_name|TEXT|1|<nil>|4",
	"id|TEXT|1|<nil>|0",
	"version|INTEGER|1|<nil>|5",
	"is_latest|INTEGER|1|1|0",
	"model_name|TEXT|1|<nil>|0",
	"spec_name|TEXT|1|''|0",
	"data_type|TEXT|1|''|0",
	"content_type|TEXT|1|''|0",
	"lifetime|TEXT|1|''|0",
	"owner_type|TEXT|1|''|0",
	"streaming|INTEGER|1|0|0",
	"size|INTEGER|1|0|0",
	"created_at|TEXT|1|<nil>|0",
	"tags|TEXT|1|'{}'|0",
	"owner_ref|TEXT|1|''|0",
	"workflow_run_id|TEXT|1|''|0",
	"workflow_name|TEXT|1|''|0",
	"job_name|TEXT|1|''|0",
	"step_name|TEXT|1|''|0",
	"source|TEXT|1|''|0",
}

// swampIndexes is swamp-format §3.3's index table plus SQLite's implicit primary-key
// index: name -> unique flag, origin, columns.
var swampIndexes = map[string]string{
	"idx_catalog_model_name":      "0|c|model_name",
	"idx_catalog_spec_name":       "0|c|spec_name",
	"idx_catalog_data_type":       "0|c|data_type",
	"idx_catalog_created_at":      "0|c|created_at",
	"idx_catalog_workflow_run_id": "0|c|workflow_run_id",
	"idx_catalog_step_name":       "0|c|step_name",
	"idx_namespace":               "0|c|namespace",
	"idx_catalog_is_latest":       "0|c|namespace,type_normalized,model_id,data_name,is_latest",
	"idx_catalog_latest_lookup":   "0|c|model_name,data_name,is_latest,namespace",
	"sqlite_autoindex_catalog_1":  "1|pk|namespace,type_normalized,model_id,data_name,version",
}

func tableInfo(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rs, err := db.Query(`SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var name, typ string
		var notnull, pk int
		var def sql.NullString
		if err := rs.Scan(&name, &typ, &notnull, &def, &pk); err != nil {
			t.Fatal(err)
		}
		d := "<nil>"
		if def.Valid {
			d = def.String
		}
		out = append(out, fmt.Sprintf("%s|%s|%d|%s|%d", name, typ, notnull, d, pk))
	}
	return out
}

func indexes(t *testing.T, db *sql.DB, table string) map[string]string {
	t.Helper()
	rs, err := db.Query(`SELECT name, "unique", origin FROM pragma_index_list(?)`, table)
	if err != nil {
		t.Fatal(err)
	}
	type idx struct {
		name, origin string
		unique       int
	}
	var list []idx
	for rs.Next() {
		var i idx
		if err := rs.Scan(&i.name, &i.unique, &i.origin); err != nil {
			t.Fatal(err)
		}
		list = append(list, i)
	}
	rs.Close()
	out := map[string]string{}
	for _, i := range list {
		cr, err := db.Query(`SELECT name FROM pragma_index_info(?) ORDER BY seqno`, i.name)
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for cr.Next() {
			var c string
			if err := cr.Scan(&c); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, c)
		}
		cr.Close()
		out[i.name] = fmt.Sprintf("%d|%s|%s", i.unique, i.origin, strings.Join(cols, ","))
	}
	return out
}

func TestCreatedCatalogMatchesSwampSchema(t *testing.T) {
	path := catalogPath(t)
	c := openRW(t, path)
	if !c.Created() || c.MovedAside() != nil || c.HasStepLatest() {
		t.Fatalf("Created=%v MovedAside=%v HasStepLatest=%v", c.Created(), c.MovedAside(), c.HasStepLatest())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	db := rawDB(t, path)
	wantStrings(t, "catalog columns", tableInfo(t, db, "catalog"), swampTable)
	wantStrings(t, "catalog_meta columns", tableInfo(t, db, "catalog_meta"),
		[]string{"key|TEXT|0|<nil>|1", "value|TEXT|1|<nil>|0"})
	if got := indexes(t, db, "catalog"); !reflect.DeepEqual(got, swampIndexes) {
		t.Fatalf("catalog indexes:\n got  %v\n want %v", got, swampIndexes)
	}
	if got := indexes(t, db, "catalog_meta"); !reflect.DeepEqual(got, map[string]string{"sqlite_autoindex_catalog_meta_1": "1|pk|key"}) {
		t.Fatalf("catalog_meta indexes: %v", got)
	}

	// catalog_meta: schema_version "4" and nothing else (populated deleted).
	rs, err := db.Query(`SELECT key, value, typeof(value) FROM catalog_meta ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	var meta []string
	for rs.Next() {
		var k, v, typ string
		if err := rs.Scan(&k, &v, &typ); err != nil {
			t.Fatal(err)
		}
		meta = append(meta, k+"="+v+"("+typ+")")
	}
	rs.Close()
	wantStrings(t, "catalog_meta", meta, []string{"schema_version=4(text)"})

	// The file is in WAL mode (persistent) and the table is a rowid table.
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
	var tableSQL string
	if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'catalog'`).Scan(&tableSQL); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tableSQL, "WITHOUT ROWID") || !strings.HasPrefix(tableSQL, "CREATE TABLE catalog (\n        namespace       TEXT") ||
		!strings.HasSuffix(tableSQL, "version)\n      )") {
		t.Fatalf("catalog DDL text differs from swamp's layout:\n%s", tableSQL)
	}
	// Exactly the two tables and ten indexes, nothing else.
	if n := len(masterSnapshot(t, path)); n != 2+len(swampIndexes)+1 {
		t.Fatalf("sqlite_master has %d objects: %q", n, masterSnapshot(t, path))
	}
}

func TestOpenSwampCreatedCatalogLeavesSchemaUnchanged(t *testing.T) {
	for _, tc := range []struct {
		fixture  string
		withStep bool
	}{
		{"swamp-schema4.sql", false},
		{"swamp-schema4-step-latest.sql", true},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			path := catalogPath(t)
			db := buildFromFixture(t, path, tc.fixture)
			r1, r2 := row("", "aws/ec2/vpc", "m1", "state", 1), row("", "aws/ec2/vpc", "m1", "state", 2)
			r2.IsLatest, r2.IsStepLatest = true, true
			insertRaw(t, db, r1, tc.withStep)
			insertRaw(t, db, r2, tc.withStep)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			before := masterSnapshot(t, path)

			c := openRW(t, path)
			if c.HasStepLatest() != tc.withStep {
				t.Fatalf("HasStepLatest = %v, want %v", c.HasStepLatest(), tc.withStep)
			}
			if c.Created() {
				t.Fatal("Created() on an existing catalog")
			}
			got := rows(t, c, "")
			if !tc.withStep {
				r2.IsStepLatest = false // not a column of this catalog
			}
			if !reflect.DeepEqual(got, []catalog.Row{r1, r2}) {
				t.Fatalf("Rows = %+v", got)
			}
			// A write keeps the schema too.
			if err := c.UpsertNewVersion(ctx, row("", "aws/ec2/vpc", "m1", "state", 3)); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			wantStrings(t, "sqlite_master after Open", masterSnapshot(t, path), before)
		})
	}
}
