package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestVerboseLogsExecutorSteps: -v adds the executor's step records on
// stderr (slog's text handler; JSON lines under --json); without it
// stderr stays as it was — empty for a clean write.
func TestVerboseLogsExecutorSteps(t *testing.T) {
	dir, _ := smallRepo(t, 1)
	plain := mustOK(t, swampjIn(t, dir, []byte("two"), "data", "write", smallAddr, "-"), "write")
	if plain.stderr != "" {
		t.Errorf("stderr of a clean write without -v: %q", plain.stderr)
	}
	r := mustOK(t, swampjIn(t, dir, []byte("three"), "-v", "data", "write", smallAddr, "-"), "write -v")
	for _, want := range []string{"level=DEBUG msg=intent intent=", "msg=step", "kind=stage", "kind=catalog-publish", `observed="not done" outcome=applied`, `msg="intent settled"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("-v: no %q in stderr:\n%s", want, r.stderr)
		}
	}
	r = mustOK(t, swampjIn(t, dir, []byte("four"), "-v", "--json", "data", "write", smallAddr, "-"), "write -v --json")
	steps := 0
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("-v --json: a stderr line that is not JSON: %q", line)
		}
		if rec["msg"] == "step" && rec["intent"] != nil && rec["kind"] != nil {
			steps++
		}
	}
	if steps < 4 {
		t.Errorf("-v --json: %d step records:\n%s", steps, r.stderr)
	}
}
