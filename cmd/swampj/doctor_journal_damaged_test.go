package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A confirmed repair on a repo whose journal is damaged sets the journal
// aside as recover does (nothing deleted), repairs the data with a fresh
// journal, says so, and exits 0 when the data is then healthy.
func TestDoctorRepairSetsADamagedJournalAside(t *testing.T) {
	dir := newRepo(t)
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", "command/shell/"+dataModel+"/result"), "write")
	jpath := filepath.Join(dir, ".swamp", "_journal.db")
	garbage := make([]byte, 40000)
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(jpath, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	r := swampj(t, dir, "doctor", "--repair", "--confirm")
	if r.code != 0 || !strings.Contains(r.stderr+r.stdout, "was damaged") || strings.Contains(r.stderr, "where the repo can be written") {
		t.Fatalf("doctor --repair --confirm on a damaged journal: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	aside, _ := filepath.Glob(jpath + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("the damaged journal was not set aside: %v", aside)
	}
	if b, err := os.ReadFile(aside[0]); err != nil || len(b) != len(garbage) {
		t.Fatalf("the set-aside journal is not the damaged bytes: %v", err)
	}
	if d := swampj(t, dir, "doctor"); d.code != 0 {
		t.Fatalf("doctor after: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
}
