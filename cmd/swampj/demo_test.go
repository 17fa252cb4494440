package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo runs the README's first command end to end: every step does
// what it narrates (the demo checks each one and exits 1 otherwise), and
// under --json it prints one document listing them.
func TestDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tour")
	r := mustOK(t, swampjEnv(t, t.TempDir(), []string{"SWAMP_BIN="}, nil, "demo", dir), "demo")
	for _, want := range []string{"killed with SIGKILL", "swampj recover", "doctor --repair --confirm", "every step did what it said"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the narration lacks %q:\n%s", want, r.stdout)
		}
	}
	j := mustOK(t, swampjEnv(t, t.TempDir(), []string{"SWAMP_BIN="}, nil, "demo", filepath.Join(t.TempDir(), "again"), "--json"), "demo --json")
	var rep demoReport
	if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil || !rep.OK || len(rep.Steps) < 10 {
		t.Fatalf("demo --json: %v %+v\n%s", err, rep, j.stdout)
	}
	if r := swampj(t, t.TempDir(), "demo", dir); r.code != 2 {
		t.Fatalf("a non-empty DIR must be a usage error, got %d", r.code)
	}
}
