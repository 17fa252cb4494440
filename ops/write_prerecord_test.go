package ops_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
	"github.com/swampj/swampj/recover"
)

// stageNameRE is an attributable staging directory of version 2:
// .swampj-stage-{N}-{pid}-{host}-{random}.
var stageNameRE = regexp.MustCompile(`^\.swampj-stage-2-([0-9]+)-[0-9a-f]{8}-[0-9a-f]{8}$`)

// latestTempRE is the attributable temp file of a `latest` replace.
var latestTempRE = regexp.MustCompile(`^\.swampj-latest-[0-9]+-[0-9a-f]{8}-[0-9a-f]{8}\.tmp$`)

// TestWriteCrashBeforeIntentCommitLeavesOnlyAnAttributableStage: the
// write stages while its intent is being committed, so a crash in that
// window leaves a staging directory no journal record names. It must be
// the only trace (no intent, `latest` and the versions untouched), its
// name must say which process made it, and once that process is gone
// `recover` removes it and `doctor` reports it and its repair moves it
// away. The crash is the journal commit's own, on the real (concurrent)
// disk, once the staging has begun (commitCrashFS).
func TestWriteCrashBeforeIntentCommitLeavesOnlyAnAttributableStage(t *testing.T) {
	ctx := context.Background()
	sc := &crashScenario{existing: true}
	initial := crashTree(t, sc.setup(t))
	crashed := func() (*repo.Repo, string) {
		r := sc.setup(t)
		if err := sc.write(r, newCommitCrashFS()); !fsx.IsCrash(err) {
			t.Fatalf("want the journal commit to crash, got %v", err)
		}
		itemDir := filepath.Join(r.DataRoot, "command", "shell", crashModel, "result")
		ents, err := os.ReadDir(itemDir)
		if err != nil {
			t.Fatal(err)
		}
		var stages, others []string
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".swampj-") {
				stages = append(stages, e.Name())
			} else {
				others = append(others, e.Name())
			}
		}
		// The staging directory, and the `latest` temp file written
		// ahead beside it, both named after this process.
		var stage string
		for _, name := range stages {
			if m := stageNameRE.FindStringSubmatch(name); m != nil && m[1] == strconv.Itoa(os.Getpid()) {
				stage = name
			} else if !latestTempRE.MatchString(name) || !strings.Contains(name, "-"+strconv.Itoa(os.Getpid())+"-") {
				t.Fatalf("%q left by the crash does not name its writer (pid %d)", name, os.Getpid())
			}
			if !ops.StageOwnerGone(name) {
				t.Fatalf("%s: its write has returned (crashed), but its owner counts as alive", name)
			}
		}
		if stage == "" || strings.Join(others, ",") != "1,latest" {
			t.Fatalf("after the crash the item holds %v and %v, want a staging directory beside 1 and latest", stages, others)
		}
		for _, d := range fsxtest.Diff(initial, crashTree(t, r)) {
			if !strings.Contains(d, "/.swampj-stage-2-") && !strings.Contains(d, "/.swampj-latest-") {
				t.Fatalf("the crash left more than its staging: %s", d)
			}
		}
		if n := openIntentCount(t, r); n != 0 {
			t.Fatalf("%d intents open: the write's intent was not committed, none may be", n)
		}
		return r, filepath.Join(itemDir, stage)
	}

	t.Run("recover removes it", func(t *testing.T) {
		r, stage := crashed()
		rep, err := recover.Run(ctx, r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.RemovedStages) == 0 || !slices.Contains(rep.RemovedStages, stage) {
			t.Fatalf("recover removed %v, want %s among them", rep.RemovedStages, stage)
		}
		if d := fsxtest.Diff(initial, crashTree(t, r)); len(d) > 0 {
			t.Fatalf("after recover the tree is not the old one:\n%s", strings.Join(d, "\n"))
		}
		checkOutcome(t, "after recover", sc, r, false)
		if rep, err := recover.Run(ctx, r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}}); err != nil || len(rep.RemovedStages) > 0 {
			t.Fatalf("second recover: %+v %v", rep, err)
		}
	})

	t.Run("doctor reports it and its repair moves it away", func(t *testing.T) {
		r, stage := crashed()
		rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}})
		if err != nil {
			t.Fatal(err)
		}
		// Beside swamp's lock the crashed writer held (lock_dead), the
		// staging directory is the finding.
		var stages []string
		for _, f := range rep.Findings {
			switch f.Code {
			case doctor.CodeStagingLeftover:
				stages = append(stages, f.Path)
			case doctor.CodeLockDead:
			default:
				t.Errorf("unexpected finding %+v", f)
			}
		}
		if len(stages) != 1 || stages[0] != stage {
			t.Fatalf("doctor found staging leftovers %v, want [%s]", stages, stage)
		}
		rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Repair: true, Confirm: true})
		if err != nil || !rep.Clean() {
			t.Fatalf("doctor --repair --confirm: %+v %v", rep, err)
		}
		if ok, _ := fsx.Exists(fsx.Real(), stage); ok {
			t.Fatalf("%s is still there after the repair", stage)
		}
		checkOutcome(t, "after doctor --repair", sc, r, false)
		if rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}}); err != nil || !rep.Clean() {
			t.Fatalf("doctor after the repair: %+v %v", rep, err)
		}
	})
}

// TestStageOfALiveWriterIsLeftAlone: a staging directory whose writer is
// alive (it may commit its intent any moment) is neither removed by
// recover, even after a crash of the journal's previous holder, nor a
// doctor finding.
func TestStageOfALiveWriterIsLeftAlone(t *testing.T) {
	ctx := context.Background()
	sc := &crashScenario{existing: true}
	r := sc.setup(t)
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()

	// The name a live write in another process gives its stage: take the
	// host tag from one this process makes.
	probe := sc.setup(t)
	if err := sc.write(probe, fsx.NewFault(fsx.Real()).CrashAfter(firstStageMkdir(t, sc))); !fsx.IsCrash(err) {
		t.Fatal(err)
	}
	var own string
	itemDir := filepath.Join(probe.DataRoot, "command", "shell", crashModel, "result")
	ents, _ := os.ReadDir(itemDir)
	for _, e := range ents {
		if stageNameRE.MatchString(e.Name()) {
			own = e.Name()
		}
	}
	parts := strings.Split(own, "-")
	if len(parts) != 6 {
		t.Fatalf("no staging directory made to copy the name of: %v", ents)
	}
	live := strings.Join([]string{parts[0], parts[1], parts[2], strconv.Itoa(sleeper.Process.Pid), parts[4], "0badc0de"}, "-")
	stage := filepath.Join(r.DataRoot, "command", "shell", crashModel, "result", live)
	if err := os.Mkdir(stage, 0o755); err != nil {
		t.Fatal(err)
	}
	// The journal's previous holder crashed (its record is still there),
	// so recover looks for leftovers.
	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.Abandon()

	rep, err := recover.Run(ctx, r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}})
	if err != nil || len(rep.RemovedStages) > 0 {
		t.Fatalf("recover: %+v %v", rep, err)
	}
	if ok, _ := fsx.Exists(fsx.Real(), stage); !ok {
		t.Fatalf("recover removed the stage of a live writer")
	}
	drep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}})
	if err != nil || !drep.Clean() || len(drep.InFlight) != 1 || drep.InFlight[0].Path != stage {
		t.Fatalf("doctor on a live writer's stage: findings %+v, in flight %+v, %v", drep.Findings, drep.InFlight, err)
	}
}

// firstStageMkdir is the op number of the first staging mkdir of sc's write.
func firstStageMkdir(t *testing.T, sc *crashScenario) int {
	t.Helper()
	f := fsx.NewFault(fsx.Real())
	if err := sc.write(sc.setup(t), f); err != nil {
		t.Fatal(err)
	}
	for _, op := range f.Trace() {
		if op.Kind == "mkdir" && strings.Contains(op.Path, ".swampj-stage-") {
			return op.N
		}
	}
	t.Fatal("no staging mkdir in the trace")
	return 0
}

// commitCrashFS is the real disk, concurrent as fsx.Real, on which the
// journal's intent commit crashes — the process dies there — but only once
// a staging directory has been created beside it: the window the overlap
// of commit and staging opens, made certain.
type commitCrashFS struct {
	fsx.OS
	staged chan struct{}
	once   *sync.Once
}

func newCommitCrashFS() commitCrashFS {
	return commitCrashFS{staged: make(chan struct{}), once: &sync.Once{}}
}

func (c commitCrashFS) Mkdir(name string, perm fs.FileMode) error {
	err := c.OS.Mkdir(name, perm)
	if strings.HasPrefix(filepath.Base(name), ".swampj-stage-") {
		c.once.Do(func() { close(c.staged) })
	}
	return err
}

func (c commitCrashFS) Failpoint(name string) error {
	if name != "journal.begin" {
		return c.OS.Failpoint(name)
	}
	select {
	case <-c.staged:
	case <-time.After(10 * time.Second):
	}
	return fsx.ErrCrashed
}

// plantLeftovers puts in the crash scenario's item what a write of version
// 2 by process pid leaves when it dies before its intent is durable: a
// staging directory holding part of raw, and its `latest` temp file. No
// intent names them, and the journal holds no crash mark: the state a
// writer killed while a writer of another model swept (its pid not yet
// reaped, so "alive") leaves behind.
func plantLeftovers(t *testing.T, r *repo.Repo, pid int) (stage, temp string) {
	t.Helper()
	itemDir := filepath.Join(r.DataRoot, "command", "shell", crashModel, "result")
	s, l := ops.LeftoverNames(pid, 2)
	stage, temp = filepath.Join(itemDir, s), filepath.Join(itemDir, l)
	if err := os.Mkdir(stage, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stage, "raw"), []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(temp, []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	return stage, temp
}

// TestNextWriteSweepsADeadWritersStaging: a staging directory and a
// `latest` temp file whose writer is dead and that no intent names go to
// quarantine with the next ordinary write of their item (nothing deleted),
// which then succeeds; the doctor is clean afterwards.
func TestNextWriteSweepsADeadWritersStaging(t *testing.T) {
	ctx := context.Background()
	sc := &crashScenario{existing: true}
	r := sc.setup(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("no process to outlive: %v", err)
	}
	if fsx.ProcessExists(gone.Process.Pid) {
		t.Skipf("pid %d was reused", gone.Process.Pid)
	}
	stage, temp := plantLeftovers(t, r, gone.Process.Pid)
	dopts := doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}}
	if rep, err := doctor.Run(ctx, r, dopts); err != nil || len(rep.Findings) != 1 || rep.Findings[0].Code != doctor.CodeStagingLeftover {
		t.Fatalf("doctor before the write: findings %+v, %v; want the staging leftover", rep.Findings, err)
	}

	if err := sc.write(r, fsx.Real()); err != nil {
		t.Fatalf("the next write of the item: %v", err)
	}
	checkOutcome(t, "after the next write", sc, r, true)
	for p, want := range map[string]string{filepath.Join(stage, "raw"): "torn", temp: "2"} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still in the item after the next write (%v)", p, err)
		}
		rel, _ := filepath.Rel(r.DataRoot, p)
		moved, _ := filepath.Glob(filepath.Join(r.Base, ".swampj-quarantine", "*-write-*", "_solo", rel))
		if len(moved) != 1 {
			t.Errorf("%s is not in quarantine once (found %v)", rel, moved)
			continue
		}
		if got, err := os.ReadFile(moved[0]); err != nil || string(got) != want {
			t.Errorf("%s in quarantine holds %q (%v), want %q", moved[0], got, err, want)
		}
	}
	if n := openIntentCount(t, r); n != 0 {
		t.Fatalf("%d intents left open", n)
	}
	if rep, err := doctor.Run(ctx, r, dopts); err != nil || !rep.Clean() {
		t.Fatalf("doctor after the next write: findings %+v, %v", rep.Findings, err)
	}
}

// TestNextWriteLeavesALiveWritersStaging: what a writer that is alive
// staged is never touched by another write of the item (that writer may
// commit its intent any moment), and the doctor notes it as in flight.
func TestNextWriteLeavesALiveWritersStaging(t *testing.T) {
	ctx := context.Background()
	sc, r, _, stage, temp := liveWritersLeftovers(t)
	before := fsxtest.Snapshot(t, stage, nil)

	if err := sc.write(r, fsx.Real()); err != nil {
		t.Fatalf("the next write of the item: %v", err)
	}
	if d := fsxtest.Diff(before, fsxtest.Snapshot(t, stage, nil)); len(d) > 0 {
		t.Fatalf("the live writer's stage changed: %v", d)
	}
	if got, err := os.ReadFile(temp); err != nil || string(got) != "2" {
		t.Fatalf("the live writer's latest temp: %q, %v", got, err)
	}
	if ok, _ := fsx.Exists(fsx.Real(), filepath.Join(r.Base, ".swampj-quarantine")); ok {
		t.Fatal("the write made a quarantine, with only a live writer's staging in its item")
	}
	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}})
	if err != nil || !rep.Clean() || len(rep.InFlight) != 1 || rep.InFlight[0].Path != stage {
		t.Fatalf("doctor beside the live writer: findings %+v, in flight %+v, %v", rep.Findings, rep.InFlight, err)
	}
}

// TestDoctorStagingOfAWriterThatFinishedMeanwhileIsNoFinding: the doctor
// lists an item while a live writer's stage is in it, and the writer
// finishes — its stage gone, its process exited — before the doctor
// judges the stage. What it then finds is a writer that is gone and no
// stage: nothing is left over, and a doctor beside writers stays clean.
func TestDoctorStagingOfAWriterThatFinishedMeanwhileIsNoFinding(t *testing.T) {
	ctx := context.Background()
	_, r, sleeper, stage, temp := liveWritersLeftovers(t)
	finished := false
	fsys := finishingWriterFS{itemDir: filepath.Dir(stage), first: new([]fs.DirEntry), finish: func() {
		if err := os.RemoveAll(stage); err != nil {
			t.Error(err)
		}
		if err := os.Remove(temp); err != nil {
			t.Error(err)
		}
		_ = sleeper.Process.Kill()
		_ = sleeper.Wait()
		finished = true
	}}
	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}})
	if !finished {
		t.Fatal("the doctor never listed the item")
	}
	if err != nil || !rep.Clean() {
		t.Fatalf("doctor beside a writer that finished: findings %+v, %v", rep.Findings, err)
	}
}

// finishingWriterFS is the real disk on which finish runs right after the
// first listing of itemDir, and every listing of itemDir is that first
// one: what a writer does after the doctor has listed its item (the walk
// and the scan) and before the doctor judges what the listing held.
type finishingWriterFS struct {
	fsx.OS
	itemDir string
	finish  func()
	first   *[]fs.DirEntry
}

func (f finishingWriterFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if filepath.Clean(name) != f.itemDir {
		return f.OS.ReadDir(name)
	}
	if *f.first == nil {
		ents, err := f.OS.ReadDir(name)
		if err != nil {
			return nil, err
		}
		*f.first = ents
		f.finish()
	}
	return *f.first, nil
}

// TestStagingOfAWriterReapedAfterTheSweepGoesWithTheNextWrite: a writer
// killed with SIGKILL lets go of the journal when it dies, but its pid
// exists until its parent reaps it. A writer of another model that takes
// the journal in that window sees the crash, sweeps, finds the stage's
// writer "alive", leaves the stage and clears the crash mark; once the
// killed writer is reaped, the doctor finds staging_leftover
// (TestKillRandomConcurrentWriters under load). The next write of the
// stage's item moves it into quarantine.
func TestStagingOfAWriterReapedAfterTheSweepGoesWithTheNextWrite(t *testing.T) {
	ctx := context.Background()
	sc := &crashScenario{existing: true}
	r := sc.setup(t)
	killed := exec.Command("true")
	if err := killed.Start(); err != nil {
		t.Skipf("no process to outlive: %v", err)
	}
	reaped := false
	defer func() {
		if !reaped {
			_ = killed.Wait()
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); !isZombie(killed.Process.Pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Skip("the child never became a zombie (no /proc?)")
		}
	}
	stage, _ := plantLeftovers(t, r, killed.Process.Pid)
	// It died holding the journal: its holder record is left.
	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.Abandon()

	other := repo.Address{Type: "command/shell", ModelID: "4a0d3c8f-6b2e-4f9a-8c7d-1e3f5a7b9c2d", DataName: "result"}
	o := write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}}
	if _, err := write.WriteVersions(ctx, r, []write.VersionWrite{{Address: other, Content: strings.NewReader("other model")}}, o); err != nil {
		t.Fatalf("the write of another model: %v", err)
	}
	if _, err := os.Stat(stage); err != nil {
		t.Fatalf("the sweep after the crash took the stage of a writer not yet reaped (%v): this test no longer shows the window", err)
	}
	if err := killed.Wait(); err != nil {
		t.Fatal(err)
	}
	reaped = true
	dopts := doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}}
	if rep, err := doctor.Run(ctx, r, dopts); err != nil || len(rep.Findings) != 1 || rep.Findings[0].Code != doctor.CodeStagingLeftover {
		t.Fatalf("doctor once the writer is reaped: findings %+v, %v; want the staging leftover", rep.Findings, err)
	}

	if err := sc.write(r, fsx.Real()); err != nil {
		t.Fatalf("the next write of the item: %v", err)
	}
	if _, err := os.Lstat(stage); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s is still in the item after its next write (%v)", stage, err)
	}
	if rep, err := doctor.Run(ctx, r, dopts); err != nil || !rep.Clean() {
		t.Fatalf("doctor after the next write: findings %+v, %v", rep.Findings, err)
	}
}

// isZombie reports whether pid has exited and waits to be reaped.
func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// liveWritersLeftovers sets up an existing item and plants in it the stage
// and latest temp of a writer that is alive (a sleep process, ended when
// the test ends).
func liveWritersLeftovers(t *testing.T) (sc *crashScenario, r *repo.Repo, sleeper *exec.Cmd, stage, temp string) {
	t.Helper()
	sc = &crashScenario{existing: true}
	r = sc.setup(t)
	sleeper = exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	stage, temp = plantLeftovers(t, r, sleeper.Process.Pid)
	return sc, r, sleeper, stage, temp
}
