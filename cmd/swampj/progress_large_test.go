package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/example"
)

// TestProgressLargeOnTerminal runs every long command on a 50,000-version
// repo (cmd/mkswamp's generator; the first command builds its catalog) with stderr on a pseudo-terminal:
// the terminal is never silent for more than 2 s from start to exit, each
// command shows its phases, and the same command under --json prints one
// JSON document on stdout and no progress (stderr holds JSON lines only).
// It takes about 2–3 minutes, so it is opt-in; .ci/run runs it as a step.
func TestProgressLargeOnTerminal(t *testing.T) {
	if os.Getenv("SWAMPJ_PTY_LARGE") != "1" {
		t.Skip("SWAMPJ_PTY_LARGE is not set: skipping the long commands under a pseudo-terminal on a 50,000-version repo (SWAMPJ_PTY_LARGE=1; about 3 min)")
	}
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) for a pseudo-terminal")
	}
	// 10,000 items of 5 versions, written by mkswamp's generator; the
	// first command builds its catalog (as mkswamp does, under the pty).
	dir := filepath.Join(t.TempDir(), "repo")
	began := time.Now()
	if _, err := example.Synthetic(fsx.Real(), dir, example.SyntheticOptions{Items: 10000, Versions: 5, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	t.Logf("50,000 versions written in %s", time.Since(began).Round(100*time.Millisecond))
	catalogDB := filepath.Join(dir, ".swamp", "data", "_catalog.db")
	migrate := []string{"datastore", "namespace", "migrate", "--confirm"}
	reverse := []string{"datastore", "namespace", "migrate", "--reverse", "--confirm"}
	noCatalog := func(t *testing.T) {
		for _, suf := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(catalogDB + suf); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	setNamespace := func(t *testing.T) {
		mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "namespace set")
	}
	killMigration := func(t *testing.T) {
		if !swampjKilledAt(t, dir, "rename-noreplace:2", nil, migrate...) {
			t.Fatal("the migration was not killed")
		}
	}
	// In order: each command leaves the repo as the next one needs it, and
	// again puts it back where the same command under --json has the same
	// work to do.
	steps := []struct {
		name         string
		setup, again func(t *testing.T)
		args, phases []string
	}{
		// From no catalog: 50,000 rows inserted in one commit.
		{"catalog rebuild --confirm", noCatalog, noCatalog, []string{"catalog", "rebuild", "--confirm"}, []string{"scanning"}},
		{"catalog verify", nil, nil, []string{"catalog", "verify"}, []string{"scanning"}},
		{"doctor --verify-checksums", nil, nil, []string{"doctor", "--verify-checksums"}, []string{"verifying checksums"}},
		{"namespace migrate --confirm", setNamespace, func(t *testing.T) { mustOK(t, swampj(t, dir, reverse...), "reverse") },
			migrate, []string{"planning", "restamping catalog"}},
		{"migrate --reverse", nil, func(t *testing.T) { mustOK(t, swampj(t, dir, migrate...), "migrate") },
			reverse, []string{"planning", "restamping catalog"}},
		{"recover of a killed migration", killMigration, func(t *testing.T) {
			mustOK(t, swampj(t, dir, reverse...), "reverse")
			killMigration(t)
		}, []string{"recover"}, []string{"recovering"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.setup != nil {
				st.setup(t)
			}
			stdout, chunks, start, end := ptyRun(t, dir, nil, st.args...)
			if strings.Contains(stdout, "\r") || strings.Contains(stdout, "\033") {
				t.Errorf("progress on stdout: %q", lastOf(stdout, 200))
			}
			checkProgress(t, chunks, start, end, st.phases...)
			if st.again != nil {
				st.again(t)
			}
			stdout, chunks, start, end = ptyRun(t, dir, nil, append([]string{"--json"}, st.args...)...)
			checkJSONOnly(t, stdout, chunks)
			t.Logf("--json: %s", end.Sub(start).Round(100*time.Millisecond))
		})
	}
	mustOK(t, swampj(t, dir, "doctor"), "doctor at the end")
	mustOK(t, swampj(t, dir, "catalog", "verify"), "catalog verify at the end")
	t.Logf("%s in all", time.Since(began).Round(time.Second))
}

// checkJSONOnly asserts stdout is one JSON document and nothing else, and
// the terminal shows no progress: every line on it is a JSON warning.
func checkJSONOnly(t *testing.T, stdout string, chunks []ptyChunk) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not JSON: %v: %q", err, lastOf(stdout, 300))
	}
	if rest := strings.TrimSpace(stdout[dec.InputOffset():]); rest != "" {
		t.Errorf("more than one JSON document on stdout: %q", lastOf(rest, 300))
	}
	term := joinChunks(chunks)
	if strings.Contains(strings.ReplaceAll(term, "\r\n", "\n"), "\r") || strings.Contains(term, "\033") {
		t.Errorf("progress on the terminal under --json: %q", lastOf(term, 300))
	}
	for _, line := range strings.Split(strings.ReplaceAll(term, "\r\n", "\n"), "\n") {
		if line = strings.TrimSpace(line); line != "" && !json.Valid([]byte(line)) {
			t.Errorf("a line on the terminal under --json that is not JSON: %q", line)
		}
	}
}
