package doctor_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
)

// swampRun runs the real swamp (SWAMP_BIN) in dir and returns its stdout
// and exit code.
func swampRun(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Getenv("SWAMP_BIN"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "SWAMP_NO_TELEMETRY=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("swamp %v: %v", args, err)
	}
	return out.String(), 0
}

func swampMust(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, code := swampRun(t, dir, args...)
	if code != 0 {
		t.Fatalf("swamp %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// swampGet is what `swamp data get MODEL NAME --json` says of an item.
type swampGet struct {
	Version  int64  `json:"version"`
	Checksum string `json:"checksum"`
	Content  struct {
		Command string `json:"command"`
	} `json:"content"`
}

// The real swamp is the judge of a repair: on a repo swamp made (its own
// files and its own catalog) whose latest version a crash emptied, swamp
// cannot read the item; after the confirmed repair it reads the last good
// version, with its bytes, and its next run writes on top of it.
func TestRepairLeavesWhatTheRealSwampReads(t *testing.T) {
	if os.Getenv("SWAMP_BIN") == "" {
		t.Skip("real-swamp judge skipped: SWAMP_BIN is not set; enable it with SWAMP_BIN=/path/to/swamp go test ./ops/doctor -run RealSwamp")
	}
	dir := t.TempDir()
	swampMust(t, dir, "init")
	swampMust(t, dir, "model", "create", "command/shell", "m1")
	swampMust(t, dir, "model", "method", "run", "m1", "execute", "--input", "run=echo one")
	var good swampGet
	if err := json.Unmarshal([]byte(swampMust(t, dir, "data", "get", "m1", "result", "--json")), &good); err != nil {
		t.Fatal(err)
	}
	swampMust(t, dir, "model", "method", "run", "m1", "execute", "--input", "run=echo two")

	r := load(t, dir)
	items, err := filepath.Glob(filepath.Join(r.DataRoot, "command", "shell", "*", "result"))
	if err != nil || len(items) != 1 {
		t.Fatalf("swamp's result item: %v, %v", items, err)
	}
	for _, f := range []string{"raw", "metadata.yaml"} {
		if err := os.Truncate(filepath.Join(items[0], "2", f), 0); err != nil {
			t.Fatal(err)
		}
	}
	if out, code := swampRun(t, dir, "data", "get", "m1", "result", "--json"); code == 0 && strings.Contains(out, `"version": 2`) {
		t.Fatalf("swamp reads the emptied version: %s", out)
	}

	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Repair: true, Confirm: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Remaining != 0 || rep.IntentID == 0 {
		t.Fatalf("repair: intent %d, remaining %d, findings %+v", rep.IntentID, rep.Remaining, rep.Findings)
	}

	var got swampGet
	if err := json.Unmarshal([]byte(swampMust(t, dir, "data", "get", "m1", "result", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 || got.Checksum != good.Checksum || got.Content.Command != "echo one" {
		t.Fatalf("swamp reads v%d %q (sha %s) after the repair; want the last good v1 %q (sha %s)",
			got.Version, got.Content.Command, got.Checksum, "echo one", good.Checksum)
	}
	swampMust(t, dir, "model", "method", "run", "m1", "execute", "--input", "run=echo three")
	if err := json.Unmarshal([]byte(swampMust(t, dir, "data", "get", "m1", "result", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Version < 2 || got.Content.Command != "echo three" {
		t.Fatalf("swamp's next run: v%d %q, want a new latest of %q", got.Version, got.Content.Command, "echo three")
	}
	if after := run(t, r, doctor.Options{}); !after.Clean() {
		t.Fatalf("the doctor after swamp's next run: %+v", after.Findings)
	}
}
