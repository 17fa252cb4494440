package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNamespaceUnsetPreviewsWithoutConfirm: as its help says, `namespace
// unset` without --confirm changes nothing (.swamp.yaml and the journal
// are as they were) and says what would change and the command that does
// it; with --confirm it removes the namespace.
func TestNamespaceUnsetPreviewsWithoutConfirm(t *testing.T) {
	dir := nsRepo(t)
	nsWant(t, 0, dir, "datastore", "namespace", "set", nsSlug)
	cfg := filepath.Join(dir, ".swamp.yaml")
	before, err := os.ReadFile(cfg)
	if err != nil || !strings.Contains(string(before), nsSlug) {
		t.Fatalf(".swamp.yaml after set: %q %v", before, err)
	}
	journalBefore := nsWant(t, 0, dir, "journal", "list").stdout

	r := nsWant(t, 0, dir, "datastore", "namespace", "unset")
	for _, want := range []string{`would remove namespace "` + nsSlug + `"`, "swampj datastore namespace unset --confirm"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the preview does not say %q:\n%s", want, r.stdout)
		}
	}
	j := nsWant(t, 0, dir, "datastore", "namespace", "unset", "--json")
	var p struct {
		Namespace string `json:"namespace"`
		Preview   bool   `json:"preview"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &p); err != nil || p.Namespace != nsSlug || !p.Preview {
		t.Errorf("unset --json preview: %+v %v\n%s", p, err, j.stdout)
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Fatalf("unset without --confirm changed .swamp.yaml:\n%s\nwas:\n%s", after, before)
	}
	if got := nsWant(t, 0, dir, "journal", "list").stdout; got != journalBefore {
		t.Fatalf("unset without --confirm journaled a change:\n%s\nwas:\n%s", got, journalBefore)
	}

	r = nsWant(t, 0, dir, "datastore", "namespace", "unset", "--confirm")
	if !strings.Contains(r.stdout, "removed from .swamp.yaml") {
		t.Errorf("unset --confirm: %s", r.stdout)
	}
	if after, _ := os.ReadFile(cfg); strings.Contains(string(after), nsSlug) {
		t.Fatalf("unset --confirm left the namespace in .swamp.yaml:\n%s", after)
	}
	// Nothing left to unset: the preview says so as the change would.
	if r := swampj(t, dir, "datastore", "namespace", "unset"); r.code != 1 || !strings.Contains(r.stderr, "Nothing to unset") {
		t.Errorf("unset preview with no namespace: %+v", r)
	}
}
