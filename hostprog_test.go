package swampj_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
)

// TestHostProgram builds testdata/hostprog — a host program written from
// the README and go doc only — with `go build`, and runs it the three ways
// a host meets swampj at startup: on a repo (from a subdirectory), outside
// every repo (the typed ErrNotARepo path), and while another process holds
// the journal lock (ErrBusy, exit 75).
func TestHostProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "hostprog")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/hostprog").CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/hostprog: %v\n%s", err, out)
	}
	// It imports public packages only (what it uses may use internal ones).
	imports, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, "./testdata/hostprog").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(imports)) {
		if strings.Contains(p, "/internal") {
			t.Errorf("hostprog imports %s", p)
		}
	}

	run := func(dir string) (code int, stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(bin, dir)
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		return code, o.String(), e.String()
	}

	// A repo with one item, entered from a subdirectory.
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("repoId: 7f0c3a52-0d7e-4b5e-9a57-1d1f6f2d9c11\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Load(nil, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := repo.ParseAddress("command/shell/m1/result")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := write.WriteVersions(context.Background(), r, []write.VersionWrite{{Address: a, Content: strings.NewReader("{}")}}, write.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "models")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(sub); code != 0 || !strings.Contains(out, "command/shell/m1/result") || !strings.Contains(out, "1 data item(s)") {
		t.Fatalf("on a repo: exit %d\n%s%s", code, out, errOut)
	}

	// Outside every repo.
	if code, out, errOut := run(t.TempDir()); code != 3 || !strings.Contains(errOut, "is not inside a swamp repo") || out != "" {
		t.Fatalf("outside a repo: exit %d, want 3 (ErrNotARepo)\n%s%s", code, out, errOut)
	}

	// Another process holds the journal lock: this test binary, re-run as
	// TestHostProgramHoldsJournal.
	holder := exec.Command(os.Args[0], "-test.run=^TestHostProgramHoldsJournal$")
	holder.Env = append(os.Environ(), "SWAMPJ_TEST_HOLD_JOURNAL="+r.JournalPath)
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = holder.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("holder: %q %v", line, err)
	}
	start := time.Now()
	if code, out, errOut := run(dir); code != 75 || !strings.Contains(errOut, "busy") {
		t.Fatalf("while the journal is held: exit %d, want 75 (ErrBusy)\n%s%s", code, out, errOut)
	}
	if waited := time.Since(start); waited < 1500*time.Millisecond {
		t.Errorf("returned busy after %v, well before its 2 s lock timeout", waited)
	}
	_ = stdin.Close()
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	// Released: ready again.
	if code, out, errOut := run(dir); code != 0 {
		t.Fatalf("after the holder left: exit %d\n%s%s", code, out, errOut)
	}
}

// TestHostProgramHoldsJournal is TestHostProgram's other process: it holds
// the journal named by SWAMPJ_TEST_HOLD_JOURNAL until its stdin closes.
func TestHostProgramHoldsJournal(t *testing.T) {
	path := os.Getenv("SWAMPJ_TEST_HOLD_JOURNAL")
	if path == "" {
		t.Skip("helper process of TestHostProgram")
	}
	j, err := journal.Open(nil, path, journal.Options{Command: []string{"hostprog-test-holder"}})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("held\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}
