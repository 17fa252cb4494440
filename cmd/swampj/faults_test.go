package main

// Faults never wedge the repo: after a full disk, an
// unwritable catalog or bad input, the command says truthfully what is on
// disk, and the ordinary commands bring the repo to a clean doctor.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of the given size at a new directory (root
// only; skipped with a notice elsewhere).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (CI runs as root)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// noStagingDirs fails if a .swampj-stage-* directory is left under root.
func noStagingDirs(t *testing.T, root string) {
	t.Helper()
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), ".swampj-stage-") {
			t.Errorf("staging directory left: %s", p)
		}
		return nil
	})
}

// TestFullDiskWriteLeavesNothingAndRecoverWorks: a write larger than the
// free space fails, names the full disk, leaves no staged bytes and no
// open intent; recover, doctor and a small write afterwards all work.
func TestFullDiskWriteLeavesNothingAndRecoverWorks(t *testing.T) {
	dir := mountTmpfs(t, "3m")
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("swampVersion: test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "command/shell/" + dataModel + "/result"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "first write")

	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"file", "stdin"} {
		var r result
		if mode == "file" {
			r = swampj(t, dir, "data", "write", addr, "--file", big)
		} else {
			r = swampjIn(t, dir, bytes.Repeat([]byte("y"), 4<<20), "data", "write", addr)
		}
		if r.code != 1 || !strings.Contains(r.stderr, "no space left on device") {
			t.Fatalf("%s: want exit 1 naming the full disk, got %d: %s", mode, r.code, r.stderr)
		}
		noStagingDirs(t, dir)
		if l := mustOK(t, swampj(t, dir, "journal", "list"), "journal list"); strings.Contains(l.stdout, "open") {
			t.Fatalf("%s: an intent is left open:\n%s", mode, l.stdout)
		}
		got := mustOK(t, swampj(t, dir, "data", "get", addr), "data get")
		if got.stdout != `{"v":1}` {
			t.Fatalf("%s: latest content = %q", mode, got.stdout)
		}
	}
	mustOK(t, swampj(t, dir, "recover"), "recover")
	mustOK(t, swampj(t, dir, "doctor"), "doctor")
	mustOK(t, swampjIn(t, dir, []byte(`{"v":2}`), "data", "write", addr), "small write after the full disk")
}

// TestUnwritableCatalogWriteSucceedsAndRebuildHeals: _catalog.db is a
// directory. The write publishes its version and says the catalog is
// stale (exit 0); recover, a second write and doctor run (doctor reports
// the stale catalog); once the path is fixed a rebuild heals it.
func TestUnwritableCatalogWriteSucceedsAndRebuildHeals(t *testing.T) {
	dir := newRepo(t)
	addr := "command/shell/" + dataModel + "/result"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "first write")
	cat := filepath.Join(dir, ".swamp", "data", "_catalog.db")
	for _, f := range []string{cat, cat + "-wal", cat + "-shm"} {
		_ = os.Remove(f)
	}
	if err := os.Mkdir(cat, 0o755); err != nil {
		t.Fatal(err)
	}
	w := mustOK(t, swampjIn(t, dir, []byte(`{"v":2}`), "data", "write", addr), "write with an unwritable catalog")
	if !strings.Contains(w.stderr, "catalog could not follow") || strings.Contains(w.stderr, "nothing half-written") {
		t.Fatalf("the warning does not say what happened: %s", w.stderr)
	}
	if got := mustOK(t, swampj(t, dir, "data", "get", addr), "data get"); got.stdout != `{"v":2}` {
		t.Fatalf("latest content = %q", got.stdout)
	}
	mustOK(t, swampj(t, dir, "recover"), "recover")
	mustOK(t, swampj(t, dir, "recover", "--rollback"), "recover --rollback")
	mustOK(t, swampjIn(t, dir, []byte(`{"v":3}`), "data", "write", addr), "second write")
	doc := swampj(t, dir, "doctor", "--json")
	// The catalog cannot be opened yet: a person's action comes first (exit 3).
	if doc.code != exitManual || !strings.Contains(doc.stdout, "catalog_stale") {
		t.Fatalf("doctor does not report the stale catalog: %d %s %s", doc.code, doc.stdout, doc.stderr)
	}
	if err := os.Remove(cat); err != nil {
		t.Fatal(err)
	}
	mustOK(t, swampj(t, dir, "catalog", "rebuild", "--confirm"), "rebuild")
	mustOK(t, swampj(t, dir, "doctor"), "doctor after rebuild")
	mustOK(t, swampj(t, dir, "catalog", "verify"), "verify after rebuild")
}

// TestEmptyInputIsRefused: an empty stdin (/dev/null, as cron gives) or an
// empty file is refused before anything is written — swampj must not make
// #3955's zero-byte latest version itself — unless --allow-empty.
func TestEmptyInputIsRefused(t *testing.T) {
	dir := newRepo(t)
	addr := "command/shell/" + dataModel + "/result"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "first write")
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	run := func(stdin *os.File, args ...string) result {
		cmd := exec.Command(binary, args...)
		cmd.Dir, cmd.Stdin = dir, stdin
		return runResult(t, cmd)
	}
	for name, r := range map[string]result{
		"stdin /dev/null": run(devnull, "data", "write", addr, "--json"),
		"--file empty":    run(nil, "data", "write", addr, "--file", empty, "--json"),
		"empty pipe":      swampjIn(t, dir, []byte{}, "data", "write", addr, "--json"),
	} {
		if code, _ := errCode(t, r); r.code != 1 || code != "empty_input" {
			t.Errorf("%s: want exit 1 code empty_input, got %d %s", name, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".swamp", "data", "command", "shell", dataModel, "result", "2")); !os.IsNotExist(err) {
		t.Fatalf("a version 2 exists after refused writes: %v", err)
	}
	if got := mustOK(t, swampj(t, dir, "data", "get", addr), "get"); got.stdout != `{"v":1}` {
		t.Fatalf("latest content = %q", got.stdout)
	}
	mustOK(t, run(devnull, "data", "write", addr, "--allow-empty"), "--allow-empty")
	if got := mustOK(t, swampj(t, dir, "data", "get", addr), "get"); got.stdout != "" {
		t.Fatalf("latest content after --allow-empty = %q", got.stdout)
	}
	mustOK(t, swampj(t, dir, "doctor"), "doctor (a deliberate size-0 version is readable)")
}

// TestCtrlCInterruptsABlockedRead: `data write --file FIFO` whose writer
// stays silent, a FIFO nobody opens, and a silent stdin pipe all end on
// SIGINT with exit 130, nothing written and no intent left open.
func TestCtrlCInterruptsABlockedRead(t *testing.T) {
	dir := newRepo(t)
	addr := "command/shell/" + dataModel + "/result"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "first write")
	tmp := t.TempDir()
	for _, mode := range []string{"fifo-silent-writer", "fifo-no-writer", "stdin-silent-pipe", "stdin-stalls-midway"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(binary, "data", "write", addr)
			cmd.Dir = dir
			var se bytes.Buffer
			cmd.Stderr = &se
			switch mode {
			case "fifo-silent-writer", "fifo-no-writer":
				fifo := filepath.Join(tmp, mode)
				if err := exec.Command("mkfifo", fifo).Run(); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
				cmd.Args = append(cmd.Args, "--file", fifo)
				if mode == "fifo-silent-writer" {
					// Opens the FIFO for writing and says nothing.
					w := exec.Command("sh", "-c", "exec 3>\"$1\"; sleep 30", "sh", fifo)
					if err := w.Start(); err != nil {
						t.Fatal(err)
					}
					defer func() { _ = w.Process.Kill(); _ = w.Wait() }()
				}
			case "stdin-silent-pipe", "stdin-stalls-midway":
				pr, pw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer pw.Close()
				defer pr.Close()
				cmd.Stdin = pr
				if mode == "stdin-stalls-midway" {
					// The write starts (its intent is journaled, raw is
					// being staged), then the source goes quiet.
					go func() { _, _ = pw.Write(bytes.Repeat([]byte("z"), 300<<10)) }()
				}
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitSignalHandled(t, cmd.Process.Pid, 2) // SIGINT caught: the runtime is up
			// No fixed sleep: SIGINT goes when the process is where the
			// case says it is (waitBlocked), or the case tests nothing.
			waitBlocked(t, cmd.Process.Pid, mode, dir)
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("still running 5 s after SIGINT; stderr: %s", se.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != 130 {
				t.Fatalf("exit %d, want 130; stderr: %s", code, se.String())
			}
			if l := mustOK(t, swampj(t, dir, "journal", "list"), "journal list"); strings.Contains(l.stdout, " open ") {
				t.Fatalf("intent left open:\n%s", l.stdout)
			}
			if got := mustOK(t, swampj(t, dir, "data", "get", addr), "get"); got.stdout != `{"v":1}` {
				t.Fatalf("latest content = %q", got.stdout)
			}
		})
	}
}

// TestCatalogOwnedByAnotherUser: a repo once used with sudo — .swamp/data
// and the catalog belong to root, the rest to the user — so the user cannot
// open the catalog for writing (its -wal cannot be created). The user's
// write finishes its data part and says the catalog is stale (exit 0);
// recover and doctor work for the user; root's rebuild heals the catalog.
func TestCatalogOwnedByAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run swampj as another user through setpriv (CI runs as root)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed")
	}
	dir := newRepo(t)
	addr := "command/shell/" + dataModel + "/result"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "first write (as root)")
	mustOK(t, swampj(t, dir, "catalog", "verify"), "verify")
	// Everything to nobody, except the catalog's directory and files.
	if out, err := exec.Command("chown", "-R", "65534:65534", dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	data := filepath.Join(dir, ".swamp", "data")
	matches, _ := filepath.Glob(filepath.Join(data, "_catalog.db*"))
	for _, p := range append(matches, data) {
		if err := os.Chown(p, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Every ancestor of the repo must be traversable by nobody.
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			_ = os.Chmod(d, fi.Mode().Perm()|0o001)
		}
	}
	asNobody := func(stdin []byte, args ...string) result {
		cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", binary}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		return runResult(t, cmd)
	}
	w := asNobody([]byte(`{"v":2}`), "data", "write", addr)
	if w.code != 0 || !strings.Contains(w.stderr, "catalog could not follow") {
		t.Fatalf("write as another user: exit %d\n%s%s", w.code, w.stdout, w.stderr)
	}
	if got := asNobody(nil, "data", "get", addr); got.code != 0 || got.stdout != `{"v":2}` {
		t.Fatalf("get as the user: %+v", got)
	}
	if r := asNobody(nil, "recover"); r.code != 0 {
		t.Fatalf("recover as the user: %+v", r)
	}
	// The catalog's -wal and -shm, kept between processes, are root's
	// too: SQLite opens them read-only, and the doctor still says that this
	// user's changes cannot reach the catalog.
	if r := asNobody(nil, "doctor", "--json"); r.code != exitManual || !strings.Contains(r.stdout, "catalog_stale") ||
		!strings.Contains(r.stdout, "cannot follow this user's changes") {
		t.Fatalf("doctor as the user must report the stale catalog and that it cannot follow: %+v", r)
	}
	mustOK(t, swampj(t, dir, "catalog", "rebuild", "--confirm"), "rebuild (as root, who can write the catalog)")
	mustOK(t, swampj(t, dir, "doctor"), "doctor after the rebuild")
	mustOK(t, swampj(t, dir, "catalog", "verify"), "verify after the rebuild")
}

// waitSignalHandled waits (up to 10 s) until process pid catches signal
// sig (/proc/PID/status SigCgt), so a signal sent next reaches its handler
// rather than killing a process that is still starting on a loaded machine.
// waitBlocked polls (30 s deadline) until process pid is blocked where
// mode says (Linux /proc; elsewhere the test is skipped):
//
//   - fifo-no-writer: in open(2) of the FIFO, waiting for a writer (a
//     thread's wchan is wait_for_partner);
//   - fifo-silent-writer: the FIFO opened (an fd links to it; the read then
//     waits in the poller);
//   - stdin-silent-pipe: a thread in read(2) of fd 0;
//   - stdin-stalls-midway: the same, after staging has begun (a staging
//     directory holds a non-empty raw: the write took the bytes it got).
func waitBlocked(t *testing.T, pid int, mode, repo string) {
	t.Helper()
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc: cannot see where the process is blocked")
	}
	readingFd0 := func() bool {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
		for _, task := range tasks {
			b, err := os.ReadFile(filepath.Join(task, "syscall"))
			if f := strings.Fields(string(b)); err == nil && len(f) > 1 && f[0] == "0" && f[1] == "0x0" {
				return true
			}
		}
		return false
	}
	there := func() bool {
		switch mode {
		case "fifo-no-writer":
			tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
			for _, task := range tasks {
				if b, err := os.ReadFile(filepath.Join(task, "wchan")); err == nil && strings.TrimSpace(string(b)) == "wait_for_partner" {
					return true
				}
			}
		case "fifo-silent-writer":
			fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
			for _, fd := range fds {
				if l, err := os.Readlink(fd); err == nil && strings.HasSuffix(l, "/"+mode) {
					return true
				}
			}
		case "stdin-silent-pipe":
			return readingFd0()
		case "stdin-stalls-midway":
			raws, _ := filepath.Glob(filepath.Join(repo, ".swamp", "data", "command", "shell", dataModel, "result", ".swampj-stage-*", "raw"))
			for _, raw := range raws {
				if fi, err := os.Stat(raw); err == nil && fi.Size() > 0 {
					return readingFd0()
				}
			}
		}
		return false
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if there() {
			return
		}
	}
	t.Fatalf("%s: the process never got blocked where the case needs it (30 s)", mode)
}

func waitSignalHandled(t *testing.T, pid, sig int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return // not Linux, or gone: send anyway
		}
		for _, line := range strings.Split(string(b), "\n") {
			if hex, ok := strings.CutPrefix(line, "SigCgt:"); ok {
				if mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64); err == nil && mask&(1<<(sig-1)) != 0 {
					return
				}
			}
		}
	}
}
