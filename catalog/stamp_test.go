package catalog_test

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
)

// stampRows renders every row with its rowid, in rowid order.
func stampRows(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT rowid, namespace, type_normalized, model_id, data_name, version, is_latest FROM catalog ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var rowid, v, latest int64
		var ns, typ, model, name string
		if err := rows.Scan(&rowid, &ns, &typ, &model, &name, &v, &latest); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %q %s/%s/%s v%d latest=%d", rowid, ns, typ, model, name, v, latest))
	}
	return out
}

func masterSQL(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT type, name, ifnull(sql, '') FROM sqlite_master ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, name, text string
		if err := rows.Scan(&typ, &name, &text); err != nil {
			t.Fatal(err)
		}
		out = append(out, typ+" "+name+" "+text)
	}
	return out
}

// TestMoveStampMovesEveryRowInPlace: every row of the source stamp gets the
// destination stamp, keeping its rowid (write order) and flags; other
// stamps are untouched; with enough rows to take the drop-and-recreate path
// for the namespace indexes, the schema is the same text in the same order
// afterwards and the indexes are sound.
func TestMoveStampMovesEveryRowInPlace(t *testing.T) {
	for _, n := range []int{3, 1200} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			path := catalogPath(t)
			c := openRW(t, path)
			var rows []catalog.Row
			for i := 0; i < n; i++ {
				rows = append(rows, row("", "command/shell", fmt.Sprintf("m%d", i%7), "out", int64(i/7+1)))
			}
			rows = append(rows, row("other", "command/shell", "m1", "out", 1))
			if err := c.UpsertVersions(ctx, rows); err != nil {
				t.Fatal(err)
			}
			db := rawDB(t, path)
			before, schema := stampRows(t, db), masterSQL(t, db)

			if err := c.MoveStamp(ctx, "", "ns1", int64(n)); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, r := range before {
				want = append(want, strings.Replace(r, ` "" `, ` "ns1" `, 1))
			}
			if got := stampRows(t, db); !reflect.DeepEqual(got, want) {
				t.Fatalf("rows after the move:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if got := masterSQL(t, db); !reflect.DeepEqual(got, schema) {
				t.Fatalf("schema after the move:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(schema, "\n"))
			}
			var check string
			if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
				t.Fatalf("integrity_check: %q %v", check, err)
			}
			if k, err := c.CountStamped(ctx, "ns1"); err != nil || k != int64(n) {
				t.Fatalf("CountStamped(ns1) = %d, %v; want %d", k, err, n)
			}
			if _, ok, err := c.LatestRow(ctx, catalog.ItemKey{Namespace: "ns1", TypeNormalized: "command/shell", ModelID: "m1", DataName: "out"}); err != nil || !ok {
				t.Fatalf("the moved item has no latest row through the index: %v %v", ok, err)
			}
		})
	}
}

// TestMoveStampRefuses: onto a stamp that has rows, or when the source
// does not hold the number of rows the caller counted, nothing changes.
func TestMoveStampRefuses(t *testing.T) {
	path := catalogPath(t)
	c := openRW(t, path)
	if err := c.UpsertVersions(ctx, []catalog.Row{
		row("", "command/shell", "m1", "out", 1), row("", "command/shell", "m1", "out", 2),
		row("ns1", "command/shell", "m9", "other", 1),
	}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	before := stampRows(t, db)
	var se *catalog.StampError
	if err := c.MoveStamp(ctx, "", "ns1", -1); !errors.As(err, &se) || se.ToRows != 1 {
		t.Fatalf("onto a stamp with rows: %v", err)
	}
	if err := c.MoveStamp(ctx, "ns1", "", -1); !errors.As(err, &se) || se.ToRows != 2 {
		t.Fatalf("onto a stamp with rows: %v", err)
	}
	if err := c.MoveStamp(ctx, "ns1", "ns2", 5); !errors.As(err, &se) || se.FromRows != 1 || se.WantFrom != 5 {
		t.Fatalf("a count that differs: %v", err)
	}
	if got := stampRows(t, db); !reflect.DeepEqual(got, before) {
		t.Fatalf("a refused move changed rows:\n%s", strings.Join(got, "\n"))
	}
	if err := c.MoveStamp(ctx, "ns1", "ns2", 1); err != nil {
		t.Fatal(err)
	}
}

// TestMoveStampFailpoint: a crash at the commit leaves the catalog as it was.
func TestMoveStampFailpoint(t *testing.T) {
	path := catalogPath(t)
	f := fsx.NewFault(fsx.Real())
	c := openWith(t, f, path)
	if err := c.UpsertVersions(ctx, []catalog.Row{row("", "command/shell", "m1", "out", 1)}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	before := stampRows(t, db)
	f.CrashAfter(f.Ops()) // the next operation is the commit's failpoint
	if err := c.MoveStamp(ctx, "", "ns1", 1); !fsx.IsCrash(err) {
		t.Fatalf("want a crash, got %v", err)
	}
	if got := stampRows(t, db); !reflect.DeepEqual(got, before) {
		t.Fatalf("a crashed move changed rows:\n%s", strings.Join(got, "\n"))
	}
}
