package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// The library describes what to do; the CLI names the command: a catalog
// of a schema swampj does not write (catalog.ForeignSchemaError, whose
// message says "rebuild the catalog") gets both commands from cliHint.
// (Doctor fixes and swamp-check messages: catalog_test.go and
// swampstate_test.go look for the rendered command.)
func TestCLINamesTheCommandsOfLibraryRemedies(t *testing.T) {
	dir, _ := smallRepo(t, 1)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, ".swamp", "data", "_catalog.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE catalog_meta SET value = '3' WHERE key = 'schema_version'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r := swampj(t, dir, "catalog", "rebuild", "--confirm")
	if r.code != 1 || !strings.Contains(r.stderr, "rebuild the catalog (`swampj catalog rebuild --confirm`)") ||
		!strings.Contains(r.stderr, "`swampj catalog verify --json`") {
		t.Fatalf("foreign schema: %+v", r)
	}
}
