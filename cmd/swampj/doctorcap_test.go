package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A doctor at 3 a.m. reads a screenful: many findings of one code are
// listed a few at a time and counted; -v and --json keep every one.
func TestDoctorTextListsAFewOfEachCodeAndCountsTheRest(t *testing.T) {
	dir := newRepo(t)
	const n = 12
	for i := 0; i < n; i++ {
		addr := "command/shell/" + dataModel + "/item" + itoa(i)
		mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "write")
		mustOK(t, swampjIn(t, dir, []byte(`{"v":2}`), "data", "write", addr), "write")
		// #3955: the latest version's files cut to zero bytes.
		for _, f := range []string{"raw", "metadata.yaml"} {
			p := filepath.Join(dir, ".swamp", "data", "command", "shell", dataModel, "item"+itoa(i), "2", f)
			must(t, os.Truncate(p, 0))
			old(t, p)
		}
	}
	r := swampj(t, dir, "doctor")
	listed := strings.Count(r.stdout, "\n  version_unreadable ")
	if r.code != 1 || listed != findingsPerCode || !strings.Contains(r.stdout, "… and 7 more version_unreadable (-v or --json lists every one)") {
		t.Fatalf("doctor lists %d version_unreadable lines (want %d) and the count of the rest: exit %d\n%s", listed, findingsPerCode, r.code, r.stdout)
	}
	if v := swampj(t, dir, "doctor", "-v"); strings.Count(v.stdout, "\n  version_unreadable ") != n {
		t.Fatalf("doctor -v must list every finding:\n%s", v.stdout)
	}
	j := swampj(t, dir, "doctor", "--json")
	var d struct{ Findings []struct{ Code string } }
	if err := json.Unmarshal([]byte(j.stdout), &d); err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, f := range d.Findings {
		if f.Code == "version_unreadable" {
			got++
		}
	}
	if got != n {
		t.Fatalf("doctor --json lists %d version_unreadable findings, want %d", got, n)
	}
}
