package main

// A namespace change and the commands `swampj run` wraps: a wrapped
// command does not start while the namespace is set over data not migrated
// into it, and a namespace change does not run while a wrapped command
// does (it keeps the datastore path it started with).

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/wrapped"
)

func needBarrier(t *testing.T) {
	t.Helper()
	if err := wrapped.Supported(); err != nil {
		t.Skipf("the write barrier cannot run here: %v", err)
	}
}

// jsonErrorCode is the code of swampj's --json error line on stderr.
func jsonErrorCode(t *testing.T, r result) string {
	t.Helper()
	var doc struct {
		Code string `json:"code"`
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &doc); err != nil {
		t.Fatalf("no JSON error on stderr: %v\n%+v", err, r)
	}
	return doc.Code
}

// filesUnder lists the regular files under dir (none when it is missing).
func filesUnder(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// With a namespace set over unmigrated data, `swampj run` refuses to start
// any command, swamp or not (unmigrated_data, exit 1, the command not
// run), and points at the migration; once migrated, the command runs.
func TestRunRefusedWhileNamespaceSetOverUnmigratedData(t *testing.T) {
	needBarrier(t)
	dir := exampleRepo(t)
	if r := swampj(t, dir, "datastore", "namespace", "set", "ns1"); r.code != 0 {
		t.Fatalf("namespace set: %+v", r)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	r := swampj(t, dir, "--json", "run", "--", "sh", "-c", "touch "+marker)
	if r.code != 1 || jsonErrorCode(t, r) != "unmigrated_data" || !strings.Contains(r.stderr, "swampj datastore namespace migrate --confirm") {
		t.Fatalf("want unmigrated_data, exit 1, naming the migration: %+v", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although the run was refused")
	}
	if r := swampj(t, dir, "run", "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "not migrated yet") {
		t.Fatalf("swampj run -- true: want refused: %+v", r)
	}
	if r := swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"); r.code != 0 {
		t.Fatalf("migrate: %+v", r)
	}
	if r := swampj(t, dir, "run", "--", "sh", "-c", "touch "+marker); r.code != 0 {
		t.Fatalf("after the migration the command must run: %+v", r)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the command did not run after the migration: %v", err)
	}
}

// The report's case with the real swamp: history of m3 at .swamp/data,
// namespace set, then a wrapped `swamp model method run m3` is refused and
// writes nothing under .swamp/ns1/data, so the migration still succeeds.
func TestRunRefusesRealSwampOverUnmigratedData(t *testing.T) {
	needSwamp(t)
	needBarrier(t)
	dir := t.TempDir()
	method := []string{"model", "method", "run", "m3", "execute", "--input", "run=echo hi"}
	for _, args := range [][]string{{"init"}, {"model", "create", "command/shell", "m3"}, method} {
		if _, ok := swampOK(t, dir, args...); !ok {
			t.FailNow()
		}
	}
	if r := swampj(t, dir, "datastore", "namespace", "set", "ns1"); r.code != 0 {
		t.Fatalf("namespace set: %+v", r)
	}
	r := swampj(t, dir, append([]string{"--json", "run", "--", os.Getenv("SWAMP_BIN")}, method...)...)
	if r.code != 1 || jsonErrorCode(t, r) != "unmigrated_data" {
		t.Fatalf("want the wrapped swamp refused with unmigrated_data: %+v", r)
	}
	if got := filesUnder(filepath.Join(dir, ".swamp", "ns1", "data")); len(got) > 0 {
		t.Fatalf("swamp wrote under the namespace although refused: %v", got)
	}
	if r := swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"); r.code != 0 {
		t.Fatalf("migrate after the refused run: %+v", r)
	}
	if r := swampj(t, dir, append([]string{"run", "--", os.Getenv("SWAMP_BIN")}, method...)...); r.code != 0 {
		t.Fatalf("the wrapped swamp after the migration: %+v", r)
	}
}

// While `swampj run -- sleep 30` runs, `namespace set` is refused
// (wrapped_run_live, exit 75) naming the run; once it has ended, it works.
func TestNamespaceChangeRefusedWhileWrappedRunLives(t *testing.T) {
	needBarrier(t)
	dir := exampleRepo(t)
	marker := filepath.Join(t.TempDir(), "child.pid")
	cmd := exec.Command(binary, "run", "--", "sh", "-c", "echo $$ > "+marker+"; exec sleep 30")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.Create(filepath.Join(t.TempDir(), "run.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	// The command started: its run was recorded before it.
	var child int
	for deadline := time.Now().Add(20 * time.Second); child == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(marker); err == nil && strings.HasSuffix(string(b), "\n") {
			child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if child == 0 {
		b, _ := os.ReadFile(out.Name())
		t.Fatalf("swampj run did not start its command: %s", b)
	}
	r := swampj(t, dir, "--json", "datastore", "namespace", "set", "ns1")
	if r.code != 75 || jsonErrorCode(t, r) != "wrapped_run_live" ||
		!strings.Contains(r.stderr, "pid "+strconv.Itoa(cmd.Process.Pid)) || !strings.Contains(r.stderr, "sleep 30") {
		t.Fatalf("want wrapped_run_live, exit 75, naming the run: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".swamp.yaml")); strings.Contains(string(b), "ns1") {
		t.Fatalf("the refused set changed .swamp.yaml:\n%s", b)
	}
	_ = syscall.Kill(child, syscall.SIGTERM)
	_ = cmd.Wait()
	if r := swampj(t, dir, "datastore", "namespace", "set", "ns1"); r.code != 0 {
		t.Fatalf("namespace set after the run ended: %+v", r)
	}
}
