package ops_test

import (
	"context"
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
