package main

// What an operator meets after a migration, a damaged journal or a hand
// change in the middle of an interrupted operation: the commands say what
// is true on disk and what to run, and a preview predicts its run. Where
// swamp judges (what it reads after a migration), the real swamp does.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/lock"
)

// operatorDoctor is the part of `doctor --json` these tests read.
type operatorDoctor struct {
	DataRoot      string
	OtherDataRoot string
	Findings      []struct {
		Code, Path, Message, Fix, Remedy, Then, Status string
	}
	Notices []struct{ Kind, Message, Remedy string }
}

func runOperatorDoctor(t *testing.T, dir string) (result, operatorDoctor) {
	t.Helper()
	r := swampj(t, dir, "doctor", "--json")
	var d operatorDoctor
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("doctor --json: exit %d: %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	return r, d
}

func TestOperatorRealSwamp(t *testing.T) {
	needSwamp(t)
	base := buildSwampBase(t)

	// A reverse migration that leaves the namespace set: swamp reads the
	// emptied namespace root and finds nothing. The reverse says so, the
	// doctor finds it, and its remedy makes swamp read the data again.
	t.Run("reverse_leaves_namespace_set", func(t *testing.T) {
		dir := copyRepo(t, base)
		nsSet(t, dir, "ns1")
		if _, ok := swampjOK(t, dir, "datastore", "namespace", "migrate", "--confirm"); !ok {
			t.FailNow()
		}
		r, ok := swampjOK(t, dir, "datastore", "namespace", "migrate", "--reverse", "--confirm")
		if !ok {
			t.FailNow()
		}
		if !strings.Contains(r.stdout, `Namespace "ns1" is still set`) || !strings.Contains(r.stdout, filepath.Join(".swamp", "ns1", "data")) ||
			!strings.Contains(r.stdout, "'swampj datastore namespace unset --migrate --confirm'") {
			t.Errorf("the reverse's report must say the namespace is still set, what swamp reads and what to run:\n%s", r.stdout)
		}
		if g := swampCmd(t, dir, "data", "get", "m1", "result"); g.code == 0 {
			t.Fatalf("swamp reads the data with the namespace still set, so there is nothing to report: %s", g.stdout)
		}
		dr, d := runOperatorDoctor(t, dir)
		var f *struct{ Code, Path, Message, Fix, Remedy, Then, Status string }
		for i := range d.Findings {
			if d.Findings[i].Code == "data_at_other_root" {
				f = &d.Findings[i]
			}
		}
		if dr.code == 0 || f == nil || f.Remedy != "unset_namespace" {
			t.Fatalf("doctor must report data_at_other_root with remedy unset_namespace (exit %d): %+v\n%s", dr.code, f, dr.stdout)
		}
		if d.OtherDataRoot != filepath.Join(dir, ".swamp", "data") {
			t.Errorf("doctor names %q as the other root", d.OtherDataRoot)
		}
		for _, n := range d.Notices {
			if n.Remedy == "migrate" {
				t.Errorf("a note offers the forward migration as the remedy of a reverse: %s", n.Message)
			}
		}
		cmds := printedCommands(f.Fix)
		if len(cmds) == 0 {
			t.Fatalf("the fix prints no command: %s", f.Fix)
		}
		for _, c := range cmds {
			if _, ok := swampjOK(t, dir, c...); !ok {
				t.FailNow()
			}
		}
		if _, ok := swampOK(t, dir, "data", "get", "m1", "result"); !ok {
			t.Fatal("after the doctor's remedy swamp still does not read the data")
		}
		if r := swampj(t, dir, "doctor"); r.code != 0 {
			t.Fatalf("doctor after the remedy: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})

	// A namespace set before the migration: the data, a zero-byte version
	// and a dead model lock are at the un-namespaced root. The doctor finds
	// the damage there, its repair takes it out of service, and the
	// migration then carries no dead lock into the namespace.
	t.Run("damage_at_the_root_swamp_does_not_read", func(t *testing.T) {
		dir := copyRepo(t, base)
		nsSet(t, dir, "ns1")
		item := filepath.Join(dir, ".swamp", "data", "command", "shell", base.models["m1"], "result")
		raws, _ := filepath.Glob(filepath.Join(item, "*", "raw"))
		if len(raws) == 0 {
			t.Fatalf("no version of %s", item)
		}
		sort.Strings(raws)
		must(t, os.Truncate(raws[len(raws)-1], 0))
		deadLock := filepath.Join(dir, ".swamp", "data", "command", "shell", base.models["m2"], ".lock")
		must(t, os.WriteFile(deadLock, nil, 0o644))
		old(t, deadLock)

		dr, d := runOperatorDoctor(t, dir)
		found := map[string]string{}
		for _, f := range d.Findings {
			found[f.Code] = f.Path
		}
		if dr.code == 0 || !strings.HasPrefix(found["version_unreadable"], item) || found["lock_dead"] == "" {
			t.Fatalf("doctor must find the zero-byte version and the dead lock at the root swamp does not read (exit %d): %v\n%s", dr.code, found, dr.stdout)
		}
		swampj(t, dir, "doctor", "--repair", "--confirm") // leaves data_at_other_root: not the repair's to fix
		_, d = runOperatorDoctor(t, dir)
		for _, f := range d.Findings {
			if f.Code != "data_at_other_root" {
				t.Errorf("the repair left %s at %s: %s", f.Code, f.Path, f.Message)
			}
		}
		if _, ok := swampjOK(t, dir, "datastore", "namespace", "migrate", "--confirm"); !ok {
			t.FailNow()
		}
		if _, err := os.Lstat(filepath.Join(dir, ".swamp", "ns1", "data", "command", "shell", base.models["m2"], ".lock")); err == nil {
			t.Error("the migration carried the dead lock into the namespace")
		}
		if _, ok := swampOK(t, dir, "model", "method", "run", "m2", "execute", "--input", "run=echo after"); !ok {
			t.Error("swamp cannot run m2 after the repair and the migration")
		}
		if r := swampj(t, dir, "doctor"); r.code != 0 {
			t.Fatalf("doctor after the repair and the migration: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})

	// A plain file where the migration needs a directory: the preview
	// names it and exits 1; the run stops there and says so, as does the
	// doctor; once the file is moved away the printed command finishes.
	t.Run("file_where_a_directory_must_go", func(t *testing.T) {
		dir := copyRepo(t, base)
		nsSet(t, dir, "ns1")
		obstacle := filepath.Join(dir, ".swamp", "ns1", "outputs")
		must(t, os.MkdirAll(filepath.Dir(obstacle), 0o755))
		must(t, os.WriteFile(obstacle, []byte("not a directory\n"), 0o644))
		const says = "a regular file stands where a directory must go"

		p := swampj(t, dir, "datastore", "namespace", "migrate")
		if p.code == 0 || !strings.Contains(p.stdout+p.stderr, says) || !strings.Contains(p.stdout+p.stderr, obstacle) {
			t.Errorf("the preview must name the obstacle and exit non-zero: exit %d\n%s%s", p.code, p.stdout, p.stderr)
		}
		c := swampj(t, dir, "datastore", "namespace", "migrate", "--confirm")
		if c.code == 0 || !strings.Contains(c.stderr, says+": "+obstacle+"; move it away, then run the migration again") {
			t.Errorf("the run's error must say what stands in the way: exit %d\n%s", c.code, c.stderr)
		}
		_, d := runOperatorDoctor(t, dir)
		var fix string
		for _, f := range d.Findings {
			if f.Code == "open_intent" {
				fix = f.Fix
			}
		}
		if !strings.Contains(fix, says) || strings.Contains(fix, "put back what is missing") {
			t.Errorf("the doctor's fix for the open intent must name the obstacle: %q", fix)
		}
		for _, n := range d.Notices {
			if strings.Contains(n.Message, obstacle) && n.Remedy == "fix_access" {
				t.Errorf("a warning about the obstacle calls for fix_access: %s", n.Message)
			}
		}
		must(t, os.Remove(obstacle))
		cmds := printedCommands(fix)
		if len(cmds) == 0 {
			t.Fatalf("the doctor's fix prints no command: %s", fix)
		}
		for _, cmd := range cmds {
			if _, ok := swampjOK(t, dir, cmd...); !ok {
				t.FailNow()
			}
		}
		if !isNamespaced(t, dir, "ns1") {
			t.Error(".swamp.yaml lost the namespace")
		}
		if _, ok := swampOK(t, dir, "data", "get", "m1", "result"); !ok {
			t.Error("swamp does not read the migrated data")
		}
		if r := swampj(t, dir, "doctor"); r.code != 0 {
			t.Fatalf("doctor after the migration: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestRecoverDryRunPredictsConflict: an interrupted migration whose next
// step the disk now contradicts (data put at both ends of a move by
// hand). The dry run must say the run stops there, and exit as the run
// does; neither changes anything.
func TestRecoverDryRunPredictsConflict(t *testing.T) {
	dir := matrixWrites(t, 1)
	fsWrite := func(rel, content string) {
		p := filepath.Join(dir, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	fsWrite(".swamp/outputs/x", "x")
	fsWrite(".swamp/audit/y", "y")
	mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "namespace set")
	if !swampjKilledAt(t, dir, "rename-noreplace:1", nil, "datastore", "namespace", "migrate", "--confirm") {
		t.Fatal("the migration was not killed")
	}
	fsWrite(".swamp/ns1/outputs/z", "z") // data at the destination too, by hand

	dry := swampj(t, dir, "recover", "--dry-run")
	run := swampj(t, dir, "recover")
	if run.code == 0 {
		t.Fatalf("the premise: recovery over a conflict fails: %s", run.stdout)
	}
	conflict := filepath.Join(dir, ".swamp", "ns1", "outputs")
	if dry.code != run.code || !strings.Contains(dry.stdout, "stop at step") || !strings.Contains(dry.stderr, conflict) ||
		strings.Contains(dry.stdout, "would go forward\n") {
		t.Fatalf("the dry run must predict the run (exit %d, stops at the conflict): exit %d\nstdout: %s\nstderr: %s\nthe run: %s",
			run.code, dry.code, dry.stdout, dry.stderr, run.stderr)
	}
	j := swampj(t, dir, "recover", "--dry-run", "--json")
	var rep struct {
		Intents []struct {
			Blocked *struct {
				Index    int
				Observed string
			}
		}
	}
	if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil || len(rep.Intents) != 1 || rep.Intents[0].Blocked == nil ||
		rep.Intents[0].Blocked.Observed != "conflict" || j.code != run.code {
		t.Fatalf("--json: exit %d, %v\n%s", j.code, err, j.stdout)
	}
}

// TestCtrlCWhileAMigrationWaits: Ctrl-C while the migration waits for
// swamp's datastore lock (held by a live process) ends it with exit 130
// and says that nothing was changed, not a bare "context canceled".
func TestCtrlCWhileAMigrationWaits(t *testing.T) {
	dir := nsRepo(t)
	nsWant(t, 0, dir, "datastore", "namespace", "set", nsSlug)
	host, _ := os.Hostname()
	held := lock.Info{Holder: "tester@" + host, Hostname: host, Pid: os.Getpid(), AcquiredAt: time.Now().UTC(), TTLMs: 60000, Nonce: "test-nonce"}
	lockPath := lock.GlobalPath(filepath.Join(dir, ".swamp"), nsSlug)
	fsxtest.WriteFiles(t, filepath.Dir(lockPath), map[string]string{filepath.Base(lockPath): string(held.Encode())})

	cmd := exec.Command(binary, "datastore", "namespace", "migrate", "--confirm")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWAMP_LOCK_TIMEOUT_MS=60000")
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitSignalHandled(t, cmd.Process.Pid, 2)
	// Waiting on the lock: the journal's holder record is written as the
	// run takes the journal, after which it looks for swamp's lock.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !nsExists(dir, ".swamp/_journal.db"); time.Sleep(20 * time.Millisecond) {
	}
	time.Sleep(200 * time.Millisecond)
	if code := interruptAndWait(t, cmd, &se, 10*time.Second); code != 130 || !strings.Contains(se.String(), "interrupted during") ||
		!strings.Contains(se.String(), "nothing was changed") {
		t.Fatalf("exit %d (want 130), stderr: %s", code, se.String())
	}
	if !nsExists(dir, ".swamp/outputs/run-1/output.json") {
		t.Fatal("nothing may move")
	}
}

// TestDoctorTextIsOneLinePerFinding: six damaged versions read as a
// summary line per check (no empty counts), one line per finding, one
// line per remedy (a group of several findings shows its command, not
// one finding's fix), and the notes after the results.
func TestDoctorTextIsOneLinePerFinding(t *testing.T) {
	dir := newRepo(t)
	for i := 1; i <= 6; i++ {
		addr := "command/shell/" + dataModel + "/item" + itoa(i)
		mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "write")
		mustOK(t, swampjIn(t, dir, []byte(`{"v":2}`), "data", "write", addr), "write")
		must(t, os.Truncate(filepath.Join(dir, ".swamp", "data", "command", "shell", dataModel, "item"+itoa(i), "2", "raw"), 0))
	}
	mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "namespace set")
	mustOK(t, swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"), "migrate")
	r := swampj(t, dir, "doctor")
	if r.code == 0 {
		t.Fatalf("doctor finds nothing:\n%s", r.stdout)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	problems, nothing := -1, -1
	for i, l := range lines {
		switch {
		case strings.Contains(l, " , ") || strings.HasSuffix(l, " ") || strings.Contains(l, "  ,"):
			t.Errorf("an empty count or trailing blank: %q", l)
		case strings.HasSuffix(l, "problem(s):"):
			problems = i
		case strings.HasPrefix(l, "Nothing was changed"):
			nothing = i
		case strings.Contains(strings.ToLower(l), "note:") && problems < 0:
			t.Errorf("a note before the results: %q", l)
		}
	}
	var d struct{ Findings []json.RawMessage }
	if err := json.Unmarshal([]byte(swampj(t, dir, "doctor", "--json").stdout), &d); err != nil {
		t.Fatal(err)
	}
	if problems < 0 || nothing < 0 || nothing-problems-1 != len(d.Findings) {
		t.Fatalf("want one line per finding (%d) between the count and the outcome:\n%s", len(d.Findings), r.stdout)
	}
	next := strings.Join(lines[nothing:], "\n")
	if strings.Contains(next, "quarantine") || !strings.Contains(next, "'swampj doctor --repair --confirm'") {
		t.Errorf("the repair action of several findings must show its command, not one finding's fix:\n%s", next)
	}
	if len(lines) > len(d.Findings)+30 {
		t.Errorf("%d lines for %d findings:\n%s", len(lines), len(d.Findings), r.stdout)
	}
	if v := swampj(t, dir, "doctor", "-v"); !strings.Contains(v.stdout, "fix: ") {
		t.Errorf("-v must show each finding's fix:\n%s", v.stdout)
	}
}

// interruptAndWait sends cmd (started, its stderr in se) SIGINT and waits
// at most limit for it to exit; it returns the exit code.
func interruptAndWait(t *testing.T, cmd *exec.Cmd, se *bytes.Buffer, limit time.Duration) int {
	t.Helper()
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		t.Fatalf("still running %s after SIGINT; stderr: %s", limit, se.String())
	}
	return cmd.ProcessState.ExitCode()
}
