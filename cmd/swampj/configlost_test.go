package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLostSwampYAML (ALICE): a power cut while `namespace unset
// --migrate` replaced .swamp.yaml can leave neither the old nor the new
// file (here: the process killed right after the replace, then the file
// removed, which is the state ALICE's lost rename leaves). The doctor says
// what it sees and what to run instead of "not a swamp repo"; `recover`
// finds the repo by its journal and writes .swamp.yaml back from the
// interrupted intent; afterwards every command works and the doctor is
// clean. With no intent to restore it from, recover says so.
func TestLostSwampYAML(t *testing.T) {
	addr := "command/shell/" + dataModel + "/result"
	dir := newRepo(t)
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "v1")
	mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "set")
	mustOK(t, swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"), "migrate")
	if !swampjKilledAt(t, dir, "rename@/.swamp.yaml", nil, "datastore", "namespace", "unset", "--migrate", "--confirm") {
		t.Fatal("unset --migrate was not killed at the replace of .swamp.yaml")
	}
	cfg := filepath.Join(dir, ".swamp.yaml")
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, ".swamp", "data")
	for _, args := range [][]string{{"doctor"}, {"data", "get", addr}} {
		r := swampj(t, sub, append([]string{"--json"}, args...)...)
		code, msg := errCode(t, r)
		if r.code != 1 || code != "config_lost" || !strings.Contains(msg, cfg) || !strings.Contains(msg, "swampj recover") {
			t.Fatalf("%v in a repo without .swamp.yaml: want config_lost naming %s and recover: %+v", args, cfg, r)
		}
	}
	mustOK(t, swampj(t, sub, "recover"), "recover without .swamp.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatalf("recover did not put .swamp.yaml back: %v", err)
	}
	if strings.Contains(string(b), "ns1") {
		t.Fatalf("recover finished the unset, but .swamp.yaml still names the namespace:\n%s", b)
	}
	if got := mustOK(t, swampj(t, dir, "data", "get", addr), "get").stdout; got != `{"v":1}` {
		t.Fatalf("content after recovery = %q", got)
	}
	mustOK(t, swampj(t, dir, "doctor"), "doctor")
	mustOK(t, swampj(t, dir, "catalog", "verify"), "catalog verify")

	// Lost with no intent that holds it: recover says it cannot know it.
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	r := swampj(t, dir, "--json", "recover")
	if code, msg := errCode(t, r); r.code != 1 || code != "config_lost" || !strings.Contains(msg, "backup") {
		t.Fatalf("recover with nothing to restore .swamp.yaml from: %+v", r)
	}
}
