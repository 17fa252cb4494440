package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/remote/buckettest"
	"github.com/swampj/swampj/ops/wrapped"
)

// binary is the real swampj, built once for the end-to-end tests as
// production builds it (justfile build: with buildTags).
var binary string

// buildTags are the tags of every production build of swampj (the
// justfile's build recipe), both for start-up: urfave_cli_no_docs
// leaves urfave/cli's Markdown man page generator, and the blackfriday
// package init it drags into every process, out of the binary (man.go);
// netgo and osusergo make the binary static (net's pure-Go resolver, Go's
// default on Linux anyway; os/user's pure-Go lookup, which the AWS SDK's
// shared-config defaults import), so no process loads libc through ld.so
// or starts its threads through cgo.
const buildTags = "urfave_cli_no_docs,netgo,osusergo"

func TestMain(m *testing.M) {
	// In-process runs of `swampj run` start their command through this
	// test binary (the write barrier's trampoline).
	wrapped.MaybeExec()
	dir, err := os.MkdirTemp("", "swampj-bin-")
	if err != nil {
		panic(err)
	}
	// The tests name their repo by working directory (or --repo-dir): an
	// inherited SWAMP_REPO_DIR would point every one of them elsewhere.
	os.Unsetenv("SWAMP_REPO_DIR")
	binary = filepath.Join(dir, "swampj")
	out, err := exec.Command("go", "build", "-tags", buildTags, "-o", binary, ".").CombinedOutput()
	if err != nil {
		panic("building swampj: " + err.Error() + "\n" + string(out))
	}
	// swampj-bucket beside swampj, as installed; the variable reaches it
	// from the tests' own processes (whose executable is elsewhere).
	if _, err := buckettest.Install(dir); err != nil {
		panic(err)
	}
	code := m.Run()
	remote.CloseBucketAgents()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// swampj runs the real binary in dir.
func swampj(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return swampjIn(t, dir, nil, args...)
}

func swampjIn(t *testing.T, dir string, stdin []byte, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return runResult(t, cmd)
}

// runResult runs cmd (stdin, dir and environment already set) and returns
// its exit code and output; a command that cannot be run fails the test.
func runResult(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: so.String(), stderr: se.String()}
}

func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("swampVersion: test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRecoverOnCleanRepoCreatesNothing(t *testing.T) {
	dir := newRepo(t)
	r := swampj(t, dir, "recover")
	if r.code != 0 || !strings.Contains(r.stdout, "Nothing to recover") {
		t.Fatalf("%+v", r)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("recover created files: %v", ents)
	}
}

func TestSecondProcessTimesOutWith75NamingHolder(t *testing.T) {
	dir := newRepo(t)
	holder := exec.Command(binary, "journal", "hold", "--for", "20s")
	holder.Dir = dir
	stdout, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	buf := make([]byte, 16)
	if n, _ := stdout.Read(buf); !strings.Contains(string(buf[:n]), "holding") {
		t.Fatalf("holder did not start: %q", buf[:n])
	}
	start := time.Now()
	// Flags after the command name and after positionals both work.
	r := swampj(t, dir, "recover", "--lock-timeout", "500ms", "--json")
	waited := time.Since(start)
	if r.code != 75 {
		t.Fatalf("want exit 75, got %+v", r)
	}
	if waited < 400*time.Millisecond || waited > 10*time.Second {
		t.Fatalf("waited %s, want about the lock timeout", waited)
	}
	code, msg := errCode(t, r)
	if code != "lock_timeout" || !strings.Contains(msg, "pid "+itoa(holder.Process.Pid)) {
		t.Fatalf("error must name the holder pid %d: %+v", holder.Process.Pid, r)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	dir := newRepo(t)
	for _, args := range [][]string{{"no-such-command"}, {"recover", "--no-such-flag"}, {"journal", "show", "x"}} {
		if r := swampj(t, dir, args...); r.code != 2 {
			t.Fatalf("%v: want exit 2, got %+v", args, r)
		}
	}
}

func TestDamagedJournalGivesClearMessage(t *testing.T) {
	for name, content := range map[string][]byte{"empty": {}, "garbage": bytes.Repeat([]byte("not a database "), 1000)} {
		t.Run(name, func(t *testing.T) {
			dir := newRepo(t)
			os.MkdirAll(filepath.Join(dir, ".swamp"), 0o755)
			os.WriteFile(filepath.Join(dir, ".swamp", "_journal.db"), content, 0o600)
			r := swampj(t, dir, "recover")
			if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine") {
				t.Fatalf("panicked: %s", r.stderr)
			}
			if name == "empty" {
				if r.code != 0 || !strings.Contains(r.stderr, "was empty") {
					t.Fatalf("%+v", r)
				}
			} else if r.code != 0 || !strings.Contains(r.stdout, "was damaged") || !strings.Contains(r.stdout, "moved it to") {
				// Setting the damaged journal aside is what recovery
				// does about it: done, it exits 0 and says what it did.
				t.Fatalf("%+v", r)
			}
			aside, _ := filepath.Glob(filepath.Join(dir, ".swamp", "_journal.db.corrupt-*"))
			if len(aside) != 1 {
				t.Fatalf("damaged journal must be kept aside: %v", aside)
			}
			if r := swampj(t, dir, "recover"); r.code != 0 {
				t.Fatalf("second run must start a fresh journal: %+v", r)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
