package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestRunForScripts: swampj run --json leaves the command's stdout as it
// is and ends stdout with one JSON line of its own; a command that exited
// 0 but left damage the doctor after it found exits 4 (run_left_damage),
// and a command that failed keeps its own status.
func TestRunForScripts(t *testing.T) {
	addr := "command/shell/" + dataModel + "/result"
	type runDoc struct {
		Command         []string `json:"command"`
		CommandExitCode int      `json:"commandExitCode"`
		ExitCode        int      `json:"exitCode"`
		ErrorCode       string   `json:"errorCode"`
		DoctorRan       bool     `json:"doctorRan"`
		DamageFound     bool     `json:"damageFound"`
		DamageRemains   bool     `json:"damageRemains"`
		Findings        []struct{ Code, Path, Status string }
	}
	lastDoc := func(t *testing.T, r result, before string) runDoc {
		t.Helper()
		if !strings.HasPrefix(r.stdout, before) || !strings.HasSuffix(r.stdout, "\n") {
			t.Fatalf("stdout is not the command's output and then one line: %q", r.stdout)
		}
		rest := strings.TrimSuffix(strings.TrimPrefix(r.stdout, before), "\n")
		if strings.Contains(rest, "\n") {
			t.Fatalf("swampj's document is not one line: %q", rest)
		}
		var d runDoc
		if err := json.Unmarshal([]byte(rest), &d); err != nil {
			t.Fatalf("%v: %q", err, r.stdout)
		}
		return d
	}
	dir := newRepo(t)
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "v1")
	time.Sleep(1100 * time.Millisecond) // mtimes of the setup lie before the run

	// Clean: the command's output (without a final newline) then the document.
	r := swampj(t, dir, "run", "--json", "--", "sh", "-c", "printf 'a\\nb'")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if d := lastDoc(t, r, "a\nb\n"); d.CommandExitCode != 0 || d.ExitCode != 0 || d.DamageFound || d.DamageRemains || len(d.Command) != 3 {
		t.Fatalf("clean run: %+v", d)
	}

	// A failed command keeps its status; the document says so.
	r = swampj(t, dir, "run", "--json", "--", "sh", "-c", "echo out; exit 5")
	if d := lastDoc(t, r, "out\n"); r.code != 5 || d.CommandExitCode != 5 || d.ExitCode != 5 {
		t.Fatalf("failed command: %+v %+v", r, d)
	}

	// Damage left by a command that exited 0: exit 4, named in the document.
	item := ".swamp/data/" + addr
	damage := "mkdir " + item + "/2 && : > " + item + "/2/raw && : > " + item + "/2/metadata.yaml && printf 2 > " + item + "/latest && echo done"
	r = swampj(t, dir, "run", "--json", "--", "sh", "-c", damage)
	d := lastDoc(t, r, "done\n")
	if r.code != 4 || d.CommandExitCode != 0 || d.ExitCode != 4 || d.ErrorCode != "run_left_damage" || !d.DoctorRan || !d.DamageFound || !d.DamageRemains {
		t.Fatalf("damage after the command: %+v\n%+v", r, d)
	}
	found := false
	for _, f := range d.Findings {
		if f.Code == "version_unreadable" && strings.Contains(f.Path, filepath.Join(addr, "2")) {
			found = true
		}
	}
	if !found {
		t.Fatalf("the document does not name the damaged version: %+v", d.Findings)
	}
	if !strings.Contains(r.stderr, "run_left_damage") {
		t.Fatalf("stderr does not carry the error code: %s", r.stderr)
	}
	// The same without --json: exit 4 too.
	time.Sleep(1100 * time.Millisecond)
	damage3 := "mkdir " + item + "/3 && : > " + item + "/3/raw && : > " + item + "/3/metadata.yaml && printf 3 > " + item + "/latest"
	if r := swampj(t, dir, "run", "--", "sh", "-c", damage3); r.code != 4 || !strings.Contains(r.stderr, "version_unreadable") || r.stdout != "" {
		t.Fatalf("damage without --json: %+v", r)
	}
	// Repaired by --repair: nothing remains, exit 0.
	time.Sleep(1100 * time.Millisecond)
	damage4 := "mkdir " + item + "/4 && : > " + item + "/4/raw && : > " + item + "/4/metadata.yaml && printf 4 > " + item + "/latest"
	r = swampj(t, dir, "run", "--repair", "--json", "--", "sh", "-c", damage4)
	if d := lastDoc(t, r, ""); r.code != 0 || !d.DamageFound || d.DamageRemains || d.ExitCode != 0 {
		t.Fatalf("repaired damage: %+v\n%+v", r, d)
	}
}

// TestHelpTakesACommandPath: 'swampj help PATH...' is 'swampj PATH...
// --help'; an unknown command is a usage error; run's help has one
// examples section.
func TestHelpTakesACommandPath(t *testing.T) {
	dir := newRepo(t)
	want := mustOK(t, swampj(t, dir, "data", "write", "--help"), "data write --help")
	if r := swampj(t, dir, "help", "data", "write"); r.code != 0 || r.stdout != want.stdout {
		t.Fatalf("help data write: %+v\nwant stdout:\n%s", r, want.stdout)
	}
	if r := swampj(t, dir, "help"); r.code != 0 || !strings.Contains(r.stdout, "USAGE:") {
		t.Fatalf("help: %+v", r)
	}
	if r := swampj(t, dir, "help", "help"); r.code != 0 || !strings.Contains(r.stdout, "USAGE:") {
		t.Fatalf("help help: %+v", r)
	}
	if r := swampj(t, dir, "--help"); r.code != 0 || !strings.Contains(r.stdout, "help") {
		t.Fatalf("--help: %+v", r)
	}
	if r := swampj(t, dir, "help", "nope"); r.code != 2 {
		t.Fatalf("help nope: %+v", r)
	}
	r := mustOK(t, swampj(t, dir, "run", "--help"), "run --help")
	if n := strings.Count(r.stdout, "EXAMPLE"); n != 1 {
		t.Fatalf("run --help has %d example sections:\n%s", n, r.stdout)
	}
	for _, w := range []string{"4 when the doctor after it found damage", "last line of stdout"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("run --help does not say %q", w)
		}
	}
}
