package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// doctorOutcome is the part of `doctor --json` that says what a run leaves.
type doctorOutcome struct {
	Outcome string `json:"outcome"`
	Actions []struct {
		Remedy, Then, Fix string
		Person            bool
		Codes             []string
	} `json:"actions"`
	Findings []struct{ Code, Status, Remedy, Then, Fix string } `json:"findings"`
}

func decodeOutcome(t *testing.T, r result) doctorOutcome {
	t.Helper()
	var d doctorOutcome
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return d
}

// TestDoctorExitSaysWhatIsLeft: a repair that leaves something only
// a person can fix exits 3 (doctor_manual) and names that action; once the
// person has acted, the same repair ends it all and exits 0 ("repaired").
func TestDoctorExitSaysWhatIsLeft(t *testing.T) {
	dir := newRepo(t)
	addr := "command/shell/" + dataModel + "/result"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "first write")
	cat := filepath.Join(dir, ".swamp", "data", "_catalog.db")
	if err := os.Rename(cat, cat+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(cat, 0o755); err != nil { // a catalog no user can open
		t.Fatal(err)
	}
	mustOK(t, swampjIn(t, dir, []byte(`{"v":2}`), "data", "write", addr), "write with the catalog unusable")

	r := swampj(t, dir, "doctor", "--repair", "--confirm", "--json")
	d := decodeOutcome(t, r)
	if r.code != exitManual || errCodeOf(t, r) != codeDoctorManual || d.Outcome != "manual" {
		t.Fatalf("a repair that leaves a person's action: exit %d, outcome %q, stderr %s", r.code, d.Outcome, r.stderr)
	}
	if len(d.Actions) == 0 || !d.Actions[0].Person || d.Actions[0].Remedy != "fix_access" ||
		!strings.Contains(d.Actions[0].Fix, "can read and write") || !strings.Contains(r.stderr, "only a person can fix: make ") {
		t.Fatalf("the summary must name the person's action: %+v\n%s", d.Actions, r.stderr)
	}
	text := swampj(t, dir, "doctor", "--repair", "--confirm")
	if text.code != exitManual || !strings.Contains(text.stdout, "[by hand, fix_access]") {
		t.Fatalf("text summary: %+v", text)
	}

	// The person acts: the catalog is a catalog again.
	if err := os.Remove(cat); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cat+".aside", cat); err != nil {
		t.Fatal(err)
	}
	r = swampj(t, dir, "doctor", "--repair", "--confirm", "--json")
	if d = decodeOutcome(t, r); r.code != 0 || d.Outcome != "repaired" || len(d.Actions) != 0 {
		t.Fatalf("the repair after the fix: exit %d, outcome %q, actions %+v\n%s", r.code, d.Outcome, d.Actions, r.stderr)
	}
	for _, f := range d.Findings {
		if f.Status != "repaired" {
			t.Fatalf("%s left %s", f.Code, f.Status)
		}
	}
	if r = swampj(t, dir, "doctor", "--json"); r.code != 0 || decodeOutcome(t, r).Outcome != "clean" {
		t.Fatalf("doctor after the repair: %+v", r)
	}
}

// TestDoctorNoticesCarryRemedies: every note and every warning of
// the doctor carries a remedy code, in --json (notices) and in text (the
// note lines, the warnings on stderr).
func TestDoctorNoticesCarryRemedies(t *testing.T) {
	check := func(t *testing.T, dir string, wantKinds ...string) {
		t.Helper()
		r := swampj(t, dir, "doctor", "--json")
		var d struct {
			Notes, Warnings []string
			Notices         []struct{ Kind, Message, Remedy string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatalf("%v: %+v", err, r)
		}
		if len(d.Notices) != len(d.Notes)+len(d.Warnings) {
			t.Fatalf("notices %d, notes %d + warnings %d", len(d.Notices), len(d.Notes), len(d.Warnings))
		}
		kinds := map[string]bool{}
		for _, n := range d.Notices {
			kinds[n.Kind] = true
			if n.Remedy == "" {
				t.Errorf("a %s without a remedy: %s", n.Kind, n.Message)
			}
		}
		for _, k := range wantKinds {
			if !kinds[k] {
				t.Fatalf("no %s here: %+v", k, d.Notices)
			}
		}
		text := swampj(t, dir, "doctor")
		for _, line := range strings.Split(text.stdout, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "note:") && !strings.Contains(line, "[remedy: ") {
				t.Errorf("a note line without its remedy: %s", line)
			}
		}
		for _, line := range strings.Split(text.stderr, "\n") {
			if strings.Contains(line, "warning:") && !strings.Contains(line, "[remedy: ") {
				t.Errorf("a warning without its remedy: %s", line)
			}
		}
	}
	t.Run("notes", func(t *testing.T) {
		dir := nsRepo(t)
		mustOK(t, swampj(t, dir, "datastore", "namespace", "set", nsSlug), "set")
		mustOK(t, swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"), "migrate")
		check(t, dir, "note")
	})
	t.Run("warnings", func(t *testing.T) {
		// A catalog a later swamp wrote (another schema_version): its rows
		// are not checked, a warning.
		dir := exampleRepo(t)
		mustOK(t, swampj(t, dir, "catalog", "rebuild", "--confirm"), "rebuild")
		db, err := sql.Open("sqlite", filepath.Join(dir, ".swamp", "data", "_catalog.db"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`UPDATE catalog_meta SET value = '99' WHERE key = 'schema_version'`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		check(t, dir, "warning")
	})
}
