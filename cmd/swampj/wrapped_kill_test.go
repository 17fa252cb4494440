package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/wrapped"
)

// The wrapper of `swampj run`, and the command that settles a dead one,
// killed at each of their named points; then the next wrapped command (what
// a restarted service runs) must leave a settled repo: no run open or
// dead, the doctor clean, latest readable.
func TestKillPointWrappedRun(t *testing.T) {
	if err := wrapped.Supported(); err != nil {
		t.Skipf("the write barrier cannot run here: %v", err)
	}
	count := fsxtest.Count(t, "wrapped-run", "kill")
	cases := []struct {
		name string
		// kill kills something in dir and reports whether it was killed.
		kill func(t *testing.T, dir, item string) bool
	}{
		{"after the record's commit, before the command starts", func(t *testing.T, dir, _ string) bool {
			return swampjKilledAt(t, dir, "failpoint:journal.run.begin", nil, "run", "--", "true")
		}},
		{"while the command writes (a power cut's moment)", func(t *testing.T, dir, item string) bool {
			r := swampj(t, dir, "run", "--", "sh", "-c", tearAndDie(item))
			return r.code == -1 || r.code == 137
		}},
		{"after the doctor, at the record's close", func(t *testing.T, dir, _ string) bool {
			return swampjKilledAt(t, dir, "failpoint:journal.run.close", nil, "run", "--", "true")
		}},
		{"settling a dead run, in its repair's intent", func(t *testing.T, dir, item string) bool {
			r := swampj(t, dir, "run", "--", "sh", "-c", tearAndDie(item))
			if r.code != -1 && r.code != 137 {
				t.Fatalf("the first wrapper was not killed: exit %d", r.code)
			}
			return swampjKilledAt(t, dir, "failpoint:journal.begin", nil, "recover")
		}},
		{"settling a dead run, at its record's close", func(t *testing.T, dir, item string) bool {
			r := swampj(t, dir, "run", "--", "sh", "-c", tearAndDie(item))
			if r.code != -1 && r.code != 137 {
				t.Fatalf("the first wrapper was not killed: exit %d", r.code)
			}
			return swampjKilledAt(t, dir, "failpoint:journal.run.close", nil, "recover")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			count.Check()
			dir := exampleRepo(t)
			item, _, prev := exampleItem(t, dir)
			if !tc.kill(t, dir, item) {
				t.Fatal("nothing was killed")
			}
			mustOK(t, swampj(t, dir, "run", "--", "true"), "the next wrapped command")
			if d := swampj(t, dir, "doctor"); d.code != 0 {
				t.Fatalf("doctor after the next command: exit %d\n%s%s", d.code, d.stdout, d.stderr)
			}
			jl := swampj(t, dir, "journal", "list", "--json")
			if strings.Contains(jl.stdout, `"state": "dead"`) || strings.Contains(jl.stdout, `"state": "running"`) {
				t.Fatalf("a run is still open:\n%s", jl.stdout)
			}
			if b, _ := os.ReadFile(filepath.Join(item, "latest")); strings.TrimSpace(string(b)) != prev {
				t.Fatalf("latest is %q, want %s", b, prev)
			}
			logs, _ := filepath.Glob(filepath.Join(dir, ".swamp", "_journal.db.run-*"))
			if len(logs) != 0 {
				t.Fatalf("change logs left: %v", logs)
			}
			count.Recovered()
		})
	}
}
