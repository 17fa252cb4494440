package main

// Two checkouts sharing one filesystem datastore outside .swamp/ (issue
// #24, swamp-format.md §13.7). Newer swamp keeps the checkouts' catalogs
// honest with writer tokens under .catalog-writers/; swamp 06b6147 predates
// them (no file of its source names them). This pins what 06b6147 does: a
// checkout's populated catalog never learns of the other checkout's
// writes, swamp's own included, until it is rebuilt.

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRealSwampSharedDatastoreHasNoWriterTokens(t *testing.T) {
	needSwamp(t)
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, dir := range []string{a, b} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, ok := swampOK(t, dir, "init"); !ok {
			t.FailNow()
		}
		f, err := os.OpenFile(filepath.Join(dir, ".swamp.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString("datastore:\n  type: filesystem\n  path: " + shared + "\n")
		if cerr := f.Close(); err != nil || cerr != nil {
			t.Fatal(err, cerr)
		}
	}
	run := func(dir string, args ...string) {
		t.Helper()
		if _, ok := swampOK(t, dir, args...); !ok {
			t.FailNow()
		}
	}
	total := func(dir, pred string) int {
		t.Helper()
		var q struct {
			Total int `json:"total"`
		}
		if !swampJSON(t, dir, &q, "data", "query", pred) {
			t.FailNow()
		}
		return q.Total
	}
	run(b, "model", "create", "command/shell", "mb")
	run(b, "model", "method", "run", "mb", "execute", "--input", "run=echo b")
	if n := total(b, `modelName == "mb"`); n == 0 {
		t.Fatal("b does not see its own write")
	}
	run(a, "model", "create", "command/shell", "ma")
	run(a, "model", "method", "run", "ma", "execute", "--input", "run=echo a")

	if n := total(b, `modelName == "ma"`); n != 0 {
		t.Errorf("b's catalog sees a's write (%d rows): swamp %s now keeps shared catalogs in step; revisit #24's writer tokens", n, os.Getenv("SWAMP_BIN"))
	}
	if _, err := os.Stat(filepath.Join(shared, ".catalog-writers")); !os.IsNotExist(err) {
		t.Errorf("swamp wrote writer tokens: %v", err)
	}
	// The data is there: a catalog built afresh finds it.
	for _, f := range []string{"_catalog.db", "_catalog.db-wal", "_catalog.db-shm"} {
		_ = os.Remove(filepath.Join(b, ".swamp", "data", f))
	}
	if n := total(b, `modelName == "ma"`); n == 0 {
		t.Error("a rebuilt catalog in b does not see a's write either")
	}

	t.Run("a swampj write in a rewrites its token", func(t *testing.T) {
		// TODO(#24 phase 2): once swampj's data write, repair and rebuild
		// call catalogwriters.Record, write a version in a with swampj and
		// assert a token under shared/.catalog-writers/ changed; b's swamp
		// 06b6147 still reads no token (as above), a newer swamp would
		// invalidate and see it.
		t.Skip("TODO(#24 phase 2): swampj's writes do not record a writer token yet")
	})
}
