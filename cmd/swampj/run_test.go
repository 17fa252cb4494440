package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRunWrapper: `swampj run -- COMMAND` recovers first, passes the
// command's exit status through (128+N for a signal), and after the command
// reports — or with --repair repairs — the damage it left in the data it
// changed.
func TestRunWrapper(t *testing.T) {
	addr := "command/shell/" + dataModel + "/result"
	t.Run("exit status", func(t *testing.T) {
		dir := newRepo(t)
		if r := swampj(t, dir, "run", "--", "sh", "-c", "echo out; echo err >&2; exit 3"); r.code != 3 || r.stdout != "out\n" || !strings.Contains(r.stderr, "err") {
			t.Fatalf("%+v", r)
		}
		if r := swampj(t, dir, "run", "--", "sh", "-c", "kill -TERM $$"); r.code != 128+15 {
			t.Fatalf("killed by SIGTERM: %+v", r)
		}
		// As a shell: 127 for a command not found, 126 for one that cannot
		// run.
		if r := swampj(t, dir, "run", "--", "no-such-command-here"); r.code != 127 {
			t.Fatalf("a command that cannot be found: %+v", r)
		}
		notExec := filepath.Join(dir, "not-executable")
		if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := swampj(t, dir, "run", "--", notExec); r.code != 126 {
			t.Fatalf("a command that cannot run: %+v", r)
		}
		if r := swampj(t, dir, "run"); r.code != 2 {
			t.Fatalf("no command: %+v", r)
		}
	})
	t.Run("recovers before the command", func(t *testing.T) {
		dir := newRepo(t)
		mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "v1")
		mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "set")
		if !swampjKilledAt(t, dir, "rename-noreplace:1", nil, "datastore", "namespace", "migrate", "--confirm") {
			t.Fatal("migration not killed")
		}
		r := swampj(t, dir, "run", "--", "sh", "-c", "test -d .swamp/ns1/data/command && ! test -e .swamp/data/command")
		if r.code != 0 || !strings.Contains(r.stderr, "finished interrupted intent") {
			t.Fatalf("the command did not see the finished migration: %+v", r)
		}
	})
	t.Run("busy repo: the command is not run", func(t *testing.T) {
		dir := newRepo(t)
		mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "v1")
		mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "set")
		if !swampjKilledAt(t, dir, "rename-noreplace:1", nil, "datastore", "namespace", "migrate", "--confirm") {
			t.Fatal("migration not killed")
		}
		holder := exec.Command(binary, "journal", "hold", "--for", "20s")
		holder.Dir = dir
		stdout, _ := holder.StdoutPipe()
		if err := holder.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
		buf := make([]byte, 16)
		_, _ = stdout.Read(buf)
		marker := filepath.Join(dir, "ran")
		r := swampj(t, dir, "--lock-timeout", "300ms", "run", "--", "touch", marker)
		if r.code != 75 {
			t.Fatalf("want 75 while the repo is held: %+v", r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the command ran although recovery could not")
		}
	})
	t.Run("doctor after, --repair", func(t *testing.T) {
		dir := newRepo(t)
		mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "v1")
		mustOK(t, swampjIn(t, dir, []byte(`{"other":1}`), "data", "write", "command/shell/"+dataModel+"/other"), "other")
		time.Sleep(1100 * time.Millisecond) // mtimes of the setup lie before the run
		item := ".swamp/data/" + addr
		// What swamp leaves after an unclean shutdown: a zero-byte version latest names.
		damage := "mkdir " + item + "/2 && : > " + item + "/2/raw && : > " + item + "/2/metadata.yaml && printf 2 > " + item + "/latest"
		r := swampj(t, dir, "run", "--", "sh", "-c", damage)
		if r.code != exitRunDamage || !strings.Contains(r.stderr, "version_unreadable") || !strings.Contains(r.stderr, "doctor --repair --confirm") {
			t.Fatalf("the damage was not reported: %+v", r)
		}
		time.Sleep(1100 * time.Millisecond) // past the one second of mtime slack
		r = swampj(t, dir, "run", "--repair", "--", "true")
		if r.code != 0 {
			t.Fatalf("%+v", r)
		}
		// Nothing changed during that run: the doctor looked at nothing.
		if strings.Contains(r.stderr, "repaired") {
			t.Fatalf("a run that changed nothing repaired something: %+v", r)
		}
		damage2 := "mkdir " + item + "/3 && : > " + item + "/3/raw && : > " + item + "/3/metadata.yaml && printf 3 > " + item + "/latest"
		r = swampj(t, dir, "run", "--repair", "--", "sh", "-c", damage2)
		if r.code != 0 || !strings.Contains(r.stderr, "repaired") {
			t.Fatalf("--repair did not repair: %+v", r)
		}
		if got := mustOK(t, swampj(t, dir, "data", "get", addr), "get").stdout; got != `{"v":1}` {
			t.Fatalf("latest serves %q after the repair", got)
		}
		// Version 2, damaged before this run and not touched by it, was
		// left to the full doctor.
		mustOK(t, swampj(t, dir, "doctor", "--repair", "--confirm"), "full repair")
		mustOK(t, swampj(t, dir, "doctor"), "doctor")
	})
}

// TestRunWrapperRealSwamp: swamp's method run under the wrapper returns
// swamp's status, its data is durable and readable by swampj afterwards.
func TestRunWrapperRealSwamp(t *testing.T) {
	bin := os.Getenv("SWAMP_BIN")
	if bin == "" {
		t.Skip("SWAMP_BIN is not set: skipping swampj run with the real swamp (SWAMP_BIN=$(bash ../shared/realswamp/setup.sh))")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init"}, {"model", "create", "command/shell", "m1"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("swamp %v: %v\n%s", args, err, out)
		}
	}
	r := swampj(t, dir, "run", "--", bin, "model", "method", "run", "m1", "execute", "--input", "run=echo hi")
	if r.code != 0 {
		t.Fatalf("swamp under the wrapper: %+v", r)
	}
	if r := swampj(t, dir, "run", "--", bin, "model", "method", "run", "no-such-model", "execute"); r.code == 0 {
		t.Fatalf("swamp's failure was not passed through: %+v", r)
	}
	mustOK(t, swampj(t, dir, "doctor"), "doctor")
	l := mustOK(t, swampj(t, dir, "data", "list"), "data list")
	if !strings.Contains(l.stdout, "/result") {
		t.Fatalf("swamp's result is not listed:\n%s", l.stdout)
	}
}

// TestRunWrapperProgressOnTerminal: the wrapper's recover and its doctor
// show progress when stderr is a terminal, and the line is cleared before
// the command writes; on a pipe there is none.
func TestRunWrapperProgressOnTerminal(t *testing.T) {
	addr := "command/shell/" + dataModel + "/result"
	dir := newRepo(t)
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "v1")
	mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "set")
	if !swampjKilledAt(t, dir, "rename-noreplace:1", nil, "datastore", "namespace", "migrate", "--confirm") {
		t.Fatal("migration not killed")
	}
	// The command writes a version, so the doctor after it has an item to scan.
	write := "echo command-ran >&2; printf '{\"v\":2}' | " + shellQuote(binary) + " data write " + addr
	_, chunks, start, end := ptyRun(t, dir, nil, "run", "--", "sh", "-c", write)
	// Each line's first draw is immediate and shows the latest event; later
	// phases of a run this small may end between two redraws, so the doctor
	// is seen by whichever of its phases was drawn.
	checkProgress(t, chunks, start, end, "recovering", "syncing file system")
	term := joinChunks(chunks)
	if plain := csiRE.ReplaceAllString(term, ""); !regexp.MustCompile(`syncing file system[^\n]*\r(checking locks|scanning|reading catalog|checking items)`).MatchString(plain) {
		t.Errorf("no progress line of the doctor after the command: %q", lastOf(plain, 400))
	}
	ran := strings.Index(term, "command-ran")
	drawn := strings.LastIndex(term[:max(ran, 0)], "recovering")
	if ran < 0 || drawn < 0 || !strings.Contains(term[drawn:ran], "\r\033[K") {
		t.Errorf("the progress line was not cleared before the command wrote: %q", lastOf(term, 400))
	}
	mustOK(t, swampj(t, dir, "datastore", "namespace", "migrate", "--reverse", "--confirm"), "reverse")
	if !swampjKilledAt(t, dir, "rename-noreplace:1", nil, "datastore", "namespace", "migrate", "--confirm") {
		t.Fatal("second migration not killed")
	}
	r := swampj(t, dir, "run", "--", "sh", "-c", strings.Replace(write, `"v\":2`, `"v\":3`, 1))
	if r.code != 0 || strings.Contains(r.stderr, "\r") || strings.Contains(r.stderr, "\033") {
		t.Fatalf("progress on a pipe, or the run failed: %+v", r)
	}
}
