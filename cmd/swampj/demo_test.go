package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
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

// TestDemoSaysWhatItDoesAndCleansUp: the narration names no version the
// write did not make, the doctor's step shows the command it says to run,
// and the temporary repo is removed unless --keep asks for it (a kept one
// says how to remove it).
func TestDemoSaysWhatItDoesAndCleansUp(t *testing.T) {
	tmp := t.TempDir()
	r := mustOK(t, swampjEnv(t, t.TempDir(), []string{"SWAMP_BIN=", "TMPDIR=" + tmp}, nil, "demo"), "demo")
	wrote := regexp.MustCompile(`Wrote \S+ version (\d+)`).FindAllStringSubmatch(r.stdout, -1)
	if len(wrote) != 2 {
		t.Fatalf("the demo shows %d writes, want 2:\n%s", len(wrote), r.stdout)
	}
	for _, title := range regexp.MustCompile(`• Writing[^\n]*`).FindAllString(r.stdout, -1) {
		if m := regexp.MustCompile(`version (\d+)`).FindStringSubmatch(title); m != nil && m[1] != wrote[0][1] && m[1] != wrote[1][1] {
			t.Errorf("a step title names version %s; the writes made versions %s and %s:\n%s", m[1], wrote[0][1], wrote[1][1], title)
		}
	}
	_, says, _ := strings.Cut(r.stdout, "says what to run")
	says, _, _ = strings.Cut(says, "•")
	if !strings.Contains(says, "'swampj recover'") {
		t.Errorf("the step that says what to run shows no command:%s", says)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("the demo left its temporary repo behind: %v", ents)
	}
	if !strings.Contains(r.stdout, "--keep") {
		t.Errorf("the demo does not say how to keep its repo:\n%s", r.stdout)
	}

	r = mustOK(t, swampjEnv(t, t.TempDir(), []string{"SWAMP_BIN=", "TMPDIR=" + tmp}, nil, "demo", "--keep"), "demo --keep")
	ents, _ := os.ReadDir(tmp)
	if len(ents) != 1 {
		t.Fatalf("demo --keep kept %d directories, want its repo", len(ents))
	}
	kept := filepath.Join(tmp, ents[0].Name())
	if _, err := os.Stat(filepath.Join(kept, ".swamp.yaml")); err != nil || !strings.Contains(r.stdout, "rm -rf "+kept) {
		t.Errorf("demo --keep: the repo %s (%v) and how to remove it:\n%s", kept, err, r.stdout)
	}
}
