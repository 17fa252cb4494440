package main

// Real-kernel power cuts of a command that never ends: `swampj run --
// swamp serve` running a workflow every 2 s (opt-in: root, loop devices,
// SWAMPJ_CRASH_IMAGES=1 and SWAMP_BIN). The whole process group — wrapper,
// swamp, the shells it starts — is stopped at a moment spread over the
// serve's life, the loop device's image is copied with the dirty pages
// still in memory (the power cut) and mounted again (the reboot). Then:
//   - every workflow run serve had reported completed is on the image, its
//     record readable, its data versions there;
//   - the next ordinary wrapped command serves: `swampj run -- swamp data
//     get` returns content (settling the dead run first), a new method run
//     works, and the doctor is clean;
//   - no byte of the synced baseline is lost.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/wrapped"
)

// lockedBuffer is a bytes.Buffer the child writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var completedRun = regexp.MustCompile(`Scheduled run completed for workflow "wf1" \(run: "([0-9a-f-]+)"\)`)

// groupStopped reports whether every process of group pgid is stopped.
func groupStopped(pgid int) bool {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		var state byte
		var ppid, pg int
		if _, err := fmt.Sscanf(s[i+2:], "%c %d %d", &state, &ppid, &pg); err != nil || pg != pgid {
			continue
		}
		var pid int
		fmt.Sscanf(p.Name(), "%d", &pid)
		if !allStopped(pid) {
			return false
		}
	}
	return true
}

// serveWorkflow is a workflow swamp serve runs every 2 s: one method run of
// m1, which writes its versions and run records.
const serveWorkflow = `id: 0f5e2d3c-4b6a-4798-8a1b-2c3d4e5f6a7b
name: wf1
tags: {}
trigger:
  schedule: "*/2 * * * * *"
jobs:
  - name: main
    description: every two seconds
    steps:
      - name: tick
        description: one method run
        task:
          type: model_method
          modelIdOrName: m1
          methodName: execute
          inputs:
            run: echo tick
        dependsOn: []
        weight: 0
        allowFailure: false
    dependsOn: []
    weight: 0
version: 1
`

func TestCrashImageWrappedServe(t *testing.T) {
	bin := os.Getenv("SWAMP_BIN")
	if bin == "" {
		t.Skip("SWAMP_BIN is not set: the power cuts of a wrapped swamp serve need the real swamp")
	}
	if err := wrapped.Supported(); err != nil {
		t.Skipf("the write barrier cannot run here: %v", err)
	}
	c, base, baseline := wrappedImageBase(t, bin)

	count := fsxtest.Count(t, "wrapped-run", "image")
	// Six cuts, each about 40 s with the reboot's swamp commands: the
	// target's minimum, kept there for the recipe's time.
	cuts := 6
	acked, stoppedAt := 0, []string{}
	for i := 0; i < cuts; i++ {
		count.Check()
		// A run every 2 s once serve is up. Cuts from 4 s to 24 s after
		// that: the runs completed by then are all younger than the 30 s
		// the kernel keeps dirty pages before writing them back.
		delay := 4*time.Second + time.Duration(i)*20*time.Second/time.Duration(cuts)
		out, img := cutWrapped(t, c, base, i, delay, "Startup complete", "SWAMP_ALLOW_NET=127.0.0.1",
			"run", "--", bin, "serve", "--port", fmt.Sprint(9470+i))
		var ids []string
		for _, m := range completedRun.FindAllStringSubmatch(out, -1) {
			ids = append(ids, m[1])
		}
		acked += len(ids)
		stoppedAt = append(stoppedAt, fmt.Sprintf("%s:%d", delay.Round(time.Second), len(ids)))
		r, mp := c.open(img, i)
		sr := filepath.Join(r, "..", "swamprepo")
		label := fmt.Sprintf("cut %d (%s, %d completed run(s))", i, delay, len(ids))
		ok := checkServeImage(t, sr, bin, label, ids, len(ids), baseline)
		c.close(img, mp)
		if ok {
			count.Recovered()
		}
	}
	t.Logf("%d power cuts of a wrapped swamp serve (stop time:completed runs %v): %d completed workflow runs, every one on its image", cuts, stoppedAt, acked)
}

// cutWrapped starts swampj with args in the repo of a copy of base, waits
// for ready in its output (none: at once), stops its whole process group
// after delay, copies the image (the power cut) and returns what the
// command had printed by then.
func cutWrapped(t *testing.T, c *crashImg, base string, n int, delay time.Duration, ready, env string, args ...string) (string, string) {
	t.Helper()
	live := filepath.Join(c.dir, fmt.Sprintf("wrapped-live%d.img", n))
	img := filepath.Join(c.dir, fmt.Sprintf("wrapped-cut%d.img", n))
	if _, err := c.sh("cp", "--sparse=always", base, live); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(live)
	mp := c.mp()
	if err := c.mount(live, mp); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = filepath.Join(mp, "swamprepo")
	cmd.Env = append(os.Environ(), env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	stopped := false
	defer func() {
		if !stopped {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	}()
	// The delay counts from ready (seconds of deno start-up on a loaded
	// machine are not part of the moment chosen).
	deadline := time.Now().Add(3 * time.Minute)
	for ready != "" && !strings.Contains(out.String(), ready) {
		if time.Now().After(deadline) {
			t.Fatalf("%v did not print %q in 3 minutes:\n%s", args, ready, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(delay)
	_ = syscall.Kill(-pgid, syscall.SIGSTOP)
	deadline = time.Now().Add(10 * time.Second)
	for !groupStopped(pgid) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d did not stop", pgid)
		}
		time.Sleep(time.Millisecond)
	}
	printed := out.String()
	if _, err := c.sh("cp", "--sparse=always", live, img); err != nil { // the power cut
		t.Fatal(err)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	_ = cmd.Wait()
	stopped = true
	c.umount(mp)
	return printed, img
}

// checkServeImage is the reboot: the next ordinary wrapped commands, then
// what must be on the image.
func checkServeImage(t *testing.T, sr, bin, label string, ids []string, runs int, baseline map[string]string) bool {
	t.Helper()
	failed := false
	fail := func(format string, args ...any) {
		failed = true
		t.Errorf(label+": "+format, args...)
	}
	// A reboot takes longer than the doctor's window for files that may
	// still be being written: age what the cut left, as a boot would.
	past := time.Now().Add(-time.Minute)
	_ = filepath.WalkDir(filepath.Join(sr, ".swamp"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			_ = os.Chtimes(p, past, past)
		}
		return nil
	})
	// Every completed run's record is there and readable, before anything
	// settles (settling never deletes: it could only quarantine).
	for _, id := range ids {
		matches, _ := filepath.Glob(filepath.Join(sr, ".swamp", "workflow-runs", "*", "workflow-run-"+id+".yaml"))
		if len(matches) != 1 {
			fail("completed workflow run %s is not on the image", id)
			continue
		}
		if b, err := os.ReadFile(matches[0]); err != nil || len(b) == 0 {
			fail("completed workflow run %s has an empty record (%v)", id, err)
		}
	}
	get := swampj(t, sr, "run", "--", bin, "data", "get", "m1", "result", "--json")
	for _, l := range strings.Split(get.stderr, "\n") {
		if strings.Contains(l, "wrapped run") {
			t.Logf("%s: %s", label, l)
		}
	}
	if get.code != 0 || !strings.Contains(get.stdout, `"content"`) && !strings.Contains(get.stdout, "tick") && !strings.Contains(get.stdout, "base") {
		fail("the next wrapped 'swamp data get' exit %d\n%s%s", get.code, get.stdout, get.stderr)
	}
	var versions struct {
		Total int `json:"total"`
	}
	vres := swamp(t, sr, bin, "data", "versions", "m1", "result", "--json")
	if err := json.Unmarshal([]byte(vres.stdout), &versions); err != nil {
		fail("swamp data versions: %v\n%s%s", err, vres.stdout, vres.stderr)
	} else if versions.Total < 1+runs {
		fail("m1's result has %d version(s) after %d completed run(s) and the baseline's one", versions.Total, runs)
	}
	if res := swampj(t, sr, "run", "--", bin, "model", "method", "run", "m1", "execute", "--input", "run=echo after"); res.code != 0 {
		fail("a new wrapped method run after the reboot exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res := swampj(t, sr, "doctor"); res.code != 0 {
		fail("doctor after the reboot exit %d\n%s%s\n(the first wrapped command said:\n%s)", res.code, res.stdout, res.stderr, get.stderr)
	}
	now := treeSums(t, filepath.Join(sr, ".swamp", "data"))
	for rel, sum := range baseline {
		if strings.HasPrefix(rel, "_catalog") || strings.HasSuffix(rel, "/latest") {
			continue // derived, or moved on by later runs
		}
		if now[rel] != sum {
			fail("synced baseline file %s lost or changed", rel)
		}
	}
	return !failed
}

func swamp(t *testing.T, dir, bin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	return runResult(t, cmd)
}

// wrappedImageBase makes the base image: a swamp repo with m1, one synced
// method run (the baseline) and the workflow serve runs every 2 s.
func wrappedImageBase(t *testing.T, bin string) (*crashImg, string, map[string]string) {
	t.Helper()
	c := newCrashImg(t)
	repo := filepath.Join(c.mp(), "swamprepo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init"}, {"model", "create", "command/shell", "m1"},
		{"model", "method", "run", "m1", "execute", "--input", "run=echo base"}} {
		mustOK(t, swamp(t, repo, bin, args...), "swamp "+strings.Join(args, " "))
	}
	if err := os.WriteFile(filepath.Join(repo, "workflows", "workflow-wf1.yaml"), []byte(serveWorkflow), 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Sync()
	baseline := treeSums(t, filepath.Join(repo, ".swamp", "data"))
	return c, c.finishBase(), baseline
}

var loopRunExited = regexp.MustCompile(`(?m)^method run (\d+) exited 0$`)

// The same power cuts with `swampj run` wrapping a shell loop of `swamp
// model method run`: every run that exited 0 before the cut is on the
// image (its version there), and the next wrapped commands serve.
func TestCrashImageWrappedMethodRunLoop(t *testing.T) {
	bin := os.Getenv("SWAMP_BIN")
	if bin == "" {
		t.Skip("SWAMP_BIN is not set: the power cuts of wrapped swamp method runs need the real swamp")
	}
	if err := wrapped.Supported(); err != nil {
		t.Skipf("the write barrier cannot run here: %v", err)
	}
	c, base, baseline := wrappedImageBase(t, bin)
	count := fsxtest.Count(t, "wrapped-run", "image")
	loop := `i=0; while :; do i=$((i+1)); "$SWAMP" model method run m1 execute --input run="echo loop$i" >/dev/null 2>&1 && echo "method run $i exited 0"; done`
	const cuts = 3
	acked := 0
	for i := 0; i < cuts; i++ {
		count.Check()
		delay := 8*time.Second + time.Duration(i)*12*time.Second
		out, img := cutWrapped(t, c, base, 10+i, delay, "", "SWAMP="+bin, "run", "--", "sh", "-c", loop)
		n := len(loopRunExited.FindAllString(out, -1))
		acked += n
		r, mp := c.open(img, i)
		sr := filepath.Join(r, "..", "swamprepo")
		label := fmt.Sprintf("loop cut %d (%s, %d method run(s) exited 0)", i, delay, n)
		if checkServeImage(t, sr, bin, label, nil, n, baseline) {
			count.Recovered()
		}
		c.close(img, mp)
	}
	t.Logf("%d power cuts of a wrapped loop of swamp method runs: %d runs exited 0, every one on its image", cuts, acked)
}
