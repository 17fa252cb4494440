package catalog_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/swampj/swampj/catalog"
)

// schemaText is sqlite_master as a list, in rowid order, with the root pages
// left out (they change when an index is rebuilt and nothing reads them).
func schemaText(t *testing.T, path string) []string {
	t.Helper()
	rs, err := rawDB(t, path).Query(`SELECT type, name, tbl_name, ifnull(sql, '<null>') FROM sqlite_master ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var typ, name, tbl, sql string
		if err := rs.Scan(&typ, &name, &tbl, &sql); err != nil {
			t.Fatal(err)
		}
		out = append(out, typ+"|"+name+"|"+tbl+"|"+sql)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRebuildLargeKeepsSchemaText: a rebuild big enough to rebuild the
// indexes after the inserts (an empty table) leaves sqlite_master byte for
// byte as it was, the rows in write order and every index consistent.
func TestRebuildLargeKeepsSchemaText(t *testing.T) {
	path := catalogPath(t)
	c := openRW(t, path)
	before := schemaText(t, path)
	if len(before) == 0 {
		t.Fatal("no schema")
	}

	var all []catalog.Row
	for i := range 1500 {
		r := row("", "aws/ec2/vpc", fmt.Sprintf("m%04d", i/3), "state", int64(i%3+1))
		// Scrambled creation times, so write order is not key order.
		s := (i * 7919) % 1500
		r.CreatedAt = fmt.Sprintf("2026-08-01T%02d:%02d:%02d.000Z", s/3600, s/60%60, s%60)
		all = append(all, r)
	}
	for _, step := range []int{0, 1} {
		in := all
		if step == 1 {
			in = all[:1200] // the second rebuild deletes: a non-empty table
		}
		d, applied, err := c.Rebuild(ctx, "", in, nil)
		if err != nil || !applied || d.Empty() {
			t.Fatalf("Rebuild %d: %v applied=%v", step, err, applied)
		}
		if got := schemaText(t, path); !reflect.DeepEqual(got, before) {
			t.Fatalf("rebuild %d changed sqlite_master:\n%q\nwant\n%q", step, got, before)
		}
		var ok string
		if err := rawDB(t, path).QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
			t.Fatalf("integrity_check after rebuild %d: %q %v", step, ok, err)
		}
		got := rows(t, c, "")
		if len(got) != len(in) {
			t.Fatalf("rebuild %d: %d rows, want %d", step, len(got), len(in))
		}
		for i := 1; i < len(got); i++ {
			a, b := got[i-1], got[i]
			if a.CreatedAt > b.CreatedAt || a.CreatedAt == b.CreatedAt && a.Version > b.Version {
				t.Fatalf("rebuild %d: rowid order is not write order at %d: %s v%d before %s v%d", step, i, a.CreatedAt, a.Version, b.CreatedAt, b.Version)
			}
		}
	}
}
