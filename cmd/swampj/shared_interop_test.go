package main

// Two checkouts sharing one filesystem datastore outside .swamp/
// (swamp-format §13.7). Newer swamp keeps the checkouts' catalogs
// honest with writer tokens under .catalog-writers/; swamp 06b6147 predates
// them (no file of its source names them). This pins what 06b6147 does: a
// checkout's populated catalog never learns of the other checkout's
// writes, swamp's own and swampj's included, until it is rebuilt; swampj's
// writes rewrite its token all the same, for newer swamp.

import (
	"os"
	"path/filepath"
	"strings"
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
		t.Errorf("b's catalog sees a's write (%d rows): swamp %s now keeps shared catalogs in step; revisit the writer tokens", n, os.Getenv("SWAMP_BIN"))
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

	t.Run("a swampj write in a rewrites its token; 06b6147 in b does not read it", func(t *testing.T) {
		seen := total(b, `modelName == "ma"`) // b's catalog, populated just above
		tokens := func() map[string]string {
			out := map[string]string{}
			ents, _ := os.ReadDir(filepath.Join(shared, ".catalog-writers"))
			for _, e := range ents {
				if data, err := os.ReadFile(filepath.Join(shared, ".catalog-writers", e.Name())); err == nil && !strings.HasSuffix(e.Name(), ".tmp") {
					out[e.Name()] = string(data)
				}
			}
			return out
		}
		mustOK(t, swampjIn(t, a, []byte(`{"from":"swampj"}`), "data", "write", "ma", "sjout"), "swampj data write in a")
		first := tokens()
		if len(first) != 1 {
			t.Fatalf("after swampj's write: tokens %v under %s, want swampj's one", first, filepath.Join(shared, ".catalog-writers"))
		}
		mustOK(t, swampjIn(t, a, []byte(`{"from":"swampj","v":2}`), "data", "write", "ma", "sjout"), "second swampj data write in a")
		for id, tok := range first {
			if tokens()[id] == tok {
				t.Fatalf("swampj's token did not change with its second write")
			}
		}
		// What 06b6147 sees: it predates writer tokens, so b's populated
		// catalog stays blind to swampj's writes as it is to swamp's own
		// (a newer swamp would see the token change, invalidate and see
		// them); a catalog built afresh finds them.
		if n := total(b, `modelName == "ma"`); n != seen {
			t.Errorf("b's catalog (swamp %s) sees swampj's writes (%d rows, %d before) without a rebuild: swamp now reads writer tokens; update swamp-format §13", os.Getenv("SWAMP_BIN"), n, seen)
		}
		for _, f := range []string{"_catalog.db", "_catalog.db-wal", "_catalog.db-shm"} {
			_ = os.Remove(filepath.Join(b, ".swamp", "data", f))
		}
		if n := total(b, `modelName == "ma"`); n <= seen {
			t.Errorf("a rebuilt catalog in b does not see swampj's write: %d rows, %d before", n, seen)
		}
	})
}
