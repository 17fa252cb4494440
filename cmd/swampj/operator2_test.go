package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJournalShowWrappedRun: journal list names a wrapped run runN, and
// journal show runN shows that run (not intent N); journal show N still
// shows intent N.
func TestJournalShowWrappedRun(t *testing.T) {
	dir := newRepo(t)
	addr := "command/shell/" + dataModel + "/result"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "write")
	mustOK(t, swampj(t, dir, "run", "--", "sh", "-c", "exit 0"), "run")
	if l := mustOK(t, swampj(t, dir, "journal", "list", "--all"), "list"); !strings.Contains(l.stdout, "run1 ") {
		t.Fatalf("journal list does not name run1: %s", l.stdout)
	}
	r := mustOK(t, swampj(t, dir, "journal", "show", "run1"), "show run1")
	for _, w := range []string{"Wrapped run run1", `"sh" "-c" "exit 0"`, "closed", "pid ", "exited with status 0", "_journal.db.run-"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("journal show run1 lacks %q:\n%s", w, r.stdout)
		}
	}
	r = mustOK(t, swampj(t, dir, "journal", "show", "run1", "--json"), "show run1 --json")
	var run struct {
		ID      uint64   `json:"id"`
		Command []string `json:"command"`
		PID     int      `json:"pid"`
		Started string   `json:"started"`
		State   string   `json:"state"`
		Log     string   `json:"log"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if run.ID != 1 || len(run.Command) != 3 || run.PID == 0 || run.Started == "" || run.State != "closed" || run.Log == "" {
		t.Fatalf("journal show run1 --json: %+v", run)
	}
	// Intent 1 is the write, not the run.
	if r := mustOK(t, swampj(t, dir, "journal", "show", "1"), "show 1"); !strings.HasPrefix(r.stdout, "Intent 1:") {
		t.Fatalf("journal show 1: %s", r.stdout)
	}
	if r := swampj(t, dir, "journal", "show", "run9"); r.code != 1 || !strings.Contains(r.stderr, "no wrapped run 9") {
		t.Fatalf("an unknown run: %+v", r)
	}
	if r := swampj(t, dir, "journal", "show", "runx"); r.code != 2 {
		t.Fatalf("runx: %+v", r)
	}
}

// TestResumedReverseSaysNamespaceStillSet: a reverse migration finished by
// re-running it says, as an uninterrupted one does, that the namespace is
// still set and swamp finds no data; the command it names unsets the
// namespace and removes its manifest.
func TestResumedReverseSaysNamespaceStillSet(t *testing.T) {
	dir := newRepo(t)
	addr := "command/shell/" + dataModel + "/result"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "write")
	mustOK(t, swampjIn(t, dir, []byte(`{"o":1}`), "data", "write", "command/shell/"+dataModel+"/other"), "write other")
	mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "set")
	mustOK(t, swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"), "migrate")
	if !swampjKilledAt(t, dir, "rename-noreplace:1", nil, "datastore", "namespace", "migrate", "--reverse", "--confirm") {
		t.Fatal("reverse migration not killed")
	}
	r := mustOK(t, swampj(t, dir, "datastore", "namespace", "migrate", "--reverse", "--confirm"), "resumed reverse")
	hint := "'swampj datastore namespace unset --migrate --confirm'"
	if !strings.Contains(r.stdout, `Namespace "ns1" is still set`) || !strings.Contains(r.stdout, "finds no data") || !strings.Contains(r.stdout, hint) {
		t.Fatalf("the resumed reverse does not say the namespace is still set, or what to run:\n%s\n%s", r.stdout, r.stderr)
	}
	manifest := filepath.Join(dir, ".swamp", "ns1", ".namespace.json")
	if _, err := os.Stat(manifest); err != nil {
		t.Fatalf("the manifest should still be there before the unset: %v", err)
	}
	mustOK(t, swampj(t, dir, "datastore", "namespace", "unset", "--migrate", "--confirm"), "the hint's command")
	if _, err := os.Stat(manifest); !os.IsNotExist(err) {
		t.Fatalf("the hint's command left the manifest: %v", err)
	}
	if y, _ := os.ReadFile(filepath.Join(dir, ".swamp.yaml")); strings.Contains(string(y), "ns1") {
		t.Fatalf(".swamp.yaml still names the namespace:\n%s", y)
	}
	if g := mustOK(t, swampj(t, dir, "data", "get", addr), "get"); g.stdout != `{"v":1}` {
		t.Fatalf("data get after the unset: %q", g.stdout)
	}
}
