package main

import (
	"encoding/json"
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
