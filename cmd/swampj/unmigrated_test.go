package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// After `namespace set` and before `migrate`, the data still sits at the
// un-namespaced path. verify says so; a confirmed rebuild describes that
// data where it is, stamped solo, and keeps its rows (it used to refuse,
// which wedged a repo whose reverse migration's restamp failed); after
// migrate, verify agrees (the rows were kept and restamped).
func TestRebuildBeforeMigrateKeepsTheSoloRows(t *testing.T) {
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
	if r.code != 0 || !strings.Contains(r.stdout, `"soloView": true`) || !strings.Contains(r.stdout, `"inSync": true`) {
		t.Fatalf("rebuild must find the solo rows in sync with the data where it is: %+v", r)
	}
	if r := swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if r := swampj(t, dir, "catalog", "verify"); r.code != 0 {
		t.Fatalf("after migrate the catalog must agree (the rows were kept and restamped): %+v", r)
	}
}
