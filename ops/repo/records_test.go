package repo

import (
	"path/filepath"
	"slices"
	"testing"
)

// The record trees sit in the datastore tier, under the namespace when
// one is set; what swamp parses there is .yaml, .json and .jsonl, never a
// .log or a temp dot-file, but its runs index is a record.
func TestRecordRootsAndNames(t *testing.T) {
	r := &Repo{Base: "/d/.swamp"}
	if got, want := r.RecordRoots(), []string{"/d/.swamp/outputs", "/d/.swamp/workflow-runs", "/d/.swamp/audit"}; !slices.Equal(got, want) {
		t.Errorf("roots: %v, want %v", got, want)
	}
	r.Namespace = "team"
	if got, want := r.RecordRoots()[2], filepath.Join("/d/.swamp", "team", "audit"); got != want {
		t.Errorf("namespaced audit root: %s, want %s", got, want)
	}
	for n, want := range map[string]bool{
		"run-1.yaml": true, "x.json": true, "2026-12.jsonl": true, ".runs-index.json": true,
		"run-1.log": false, ".run-1.yaml.tmp": false, ".hidden.yaml": false,
	} {
		if got := IsRecordName(n); got != want {
			t.Errorf("IsRecordName(%q) = %v, want %v", n, got, want)
		}
	}
}
