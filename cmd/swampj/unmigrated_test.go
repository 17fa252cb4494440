package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// After `namespace set` and before `migrate`, the data still sits at the
// un-namespaced path. verify says so; a confirmed rebuild refuses (it would
// drop rows the migration keeps); after migrate, verify agrees.
func TestRebuildRefusesBeforeMigrate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("cp", "-R", "../../testdata/example-repo", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if r := swampj(t, dir, "datastore", "namespace", "set", "later"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	r := swampj(t, dir, "catalog", "verify")
	if r.code != 1 || !strings.Contains(r.stdout, "not migrated") || !strings.Contains(r.stdout, "namespace migrate --confirm") {
		t.Fatalf("verify must point at migrate: %+v", r)
	}
	r = swampj(t, dir, "catalog", "rebuild", "--confirm", "--json")
	if r.code != 1 || !strings.Contains(r.stderr, `"unmigrated_data"`) {
		t.Fatalf("rebuild must refuse: %+v", r)
	}
	if r := swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if r := swampj(t, dir, "catalog", "verify"); r.code != 0 {
		t.Fatalf("after migrate the catalog must agree (the rows were kept and restamped): %+v", r)
	}
}
