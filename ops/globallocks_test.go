package ops_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
	swampjrecover "github.com/swampj/swampj/recover"
)

// Both global locks of a namespace (swamp-format §13.2): 06b6147's
// {base}/.locks/{ns}.lock and newer swamp's {base}/{ns}/.datastore.lock.
// Either one held by another live process keeps swampj's migration, its
// writes and its recovery of a migration waiting, then timing out (exit
// 75 in the CLI), and the doctor judges both.

// glPlantLive writes a lock record at path held by a live process of this
// host other than this one.
func glPlantLive(t *testing.T, path string) int {
	t.Helper()
	pid := dlLive(t)
	fsxtest.WriteFiles(t, filepath.Dir(path), map[string]string{filepath.Base(path): string(dlRecord(pid))})
	return pid
}

func glTimeoutOn(t *testing.T, what string, err error, path string, pid int) {
	t.Helper()
	var te *lock.TimeoutError
	if !errors.As(err, &te) || te.Path != path || te.Holder == nil || te.Holder.Pid != pid {
		t.Fatalf("%s: want a lock timeout on %s naming pid %d, got %v", what, path, pid, err)
	}
}

func TestMigrateWaitsOnEitherGlobalLock(t *testing.T) {
	for _, newer := range []bool{false, true} {
		name := "06b6147's"
		if newer {
			name = "newer swamp's"
		}
		t.Run(name, func(t *testing.T) {
			dir := migFixture{catalogStamp: "-", manifest: true}.build(t)
			base := filepath.Join(dir, ".swamp")
			held := lock.GlobalPath(base, migNS)
			if newer {
				held = lock.NewerGlobalPath(base, migNS)
			}
			pid := glPlantLive(t, held)
			before := fsxtest.Snapshot(t, dir, nil)
			start := time.Now()
			_, err := runMigrate(t, dir, nil, migrate.MigrateOptions{Common: host.Common{SwampLockTimeout: 300 * time.Millisecond}, Confirm: true})
			glTimeoutOn(t, "migrate", err, held, pid)
			if time.Since(start) > 5*time.Second {
				t.Fatal("the wait must be bounded by the lock timeout")
			}
			if d := fsxtest.Diff(before, fsxtest.Snapshot(t, dir, nil)); len(d) > 0 {
				t.Fatalf("a migration that could not take both global locks changed the tree: %v", d)
			}
		})
	}
}

// The migration's intent names both global locks, in GlobalPaths' order:
// recovery takes them as the migration did.
func TestMigrateIntentNamesBothGlobalLocks(t *testing.T) {
	dir := migFixture{catalogStamp: "-", manifest: true}.build(t)
	mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true})
	j, err := journal.Open(fsx.Real(), filepath.Join(dir, ".swamp", "_journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	all, err := j.List(true)
	if err != nil || len(all) == 0 {
		t.Fatalf("journal: %v %v", all, err)
	}
	in := all[len(all)-1]
	want := lock.GlobalPaths(filepath.Join(dir, ".swamp"), migNS)
	if strings.Join(in.Locks, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the migration's intent names locks %v, want %v", in.Locks, want)
	}
}

func TestWriteWaitsOnEitherGlobalLock(t *testing.T) {
	for _, newer := range []bool{false, true} {
		name := "06b6147's"
		if newer {
			name = "newer swamp's"
		}
		t.Run(name, func(t *testing.T) {
			dir := migFixture{catalogStamp: "-", manifest: true}.build(t)
			mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true})
			r := migLoad(t, dir)
			held := lock.GlobalPath(r.Base, r.Namespace)
			if newer {
				held = lock.NewerGlobalPath(r.Base, r.Namespace)
			}
			pid := glPlantLive(t, held)
			a, _ := repo.ParseAddress("command/shell/m1/result")
			_, err := write.WriteVersions(migCtx, r, []write.VersionWrite{{Address: a, Content: strings.NewReader("{}")}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: 300 * time.Millisecond}})
			glTimeoutOn(t, "write", err, held, pid)
		})
	}
}

// A migration interrupted after its intent was journaled is finished by
// recovery only under both global locks: newer swamp's held by a live
// process keeps it waiting, then it times out with the intent still open.
func TestRecoveryOfMigrationTakesBothGlobalLocks(t *testing.T) {
	dir := migFixture{catalogStamp: "-", manifest: true}.build(t)
	clean := fsx.NewFault(fsx.Real())
	probe := migFixture{catalogStamp: "-", manifest: true}.build(t)
	mustRunMigrate(t, probe, clean, migrate.MigrateOptions{Confirm: true})
	cut := migOpIndex(clean, "failpoint:journal.begin") + 3
	if _, err := runMigrate(t, dir, fsx.NewFault(fsx.Real()).CrashAfter(cut), migrate.MigrateOptions{Confirm: true}); !fsx.IsCrash(err) {
		t.Fatalf("want a crash at cut %d, got %v", cut, err)
	}
	base := filepath.Join(dir, ".swamp")
	for _, p := range lock.GlobalPaths(base, migNS) {
		_ = os.Remove(p) // the crashed run's own, left behind
	}
	held := lock.NewerGlobalPath(base, migNS)
	pid := glPlantLive(t, held)
	_, err := swampjrecover.Run(migCtx, dir, swampjrecover.Options{Common: host.Common{JournalLockTimeout: time.Second, SwampLockTimeout: 300 * time.Millisecond}})
	if !errors.Is(err, lock.ErrTimeout) || !strings.Contains(err.Error(), held) {
		t.Fatalf("recovery: want a timeout on %s (pid %d), got %v", held, pid, err)
	}
	if st := migOpenIntents(t, dir); st != 1 {
		t.Fatalf("the migration's intent must stay open, %d open", st)
	}
}

func migOpenIntents(t *testing.T, dir string) int {
	t.Helper()
	j, err := journal.Open(fsx.Real(), filepath.Join(dir, ".swamp", "_journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	open, err := j.OpenIntents()
	if err != nil {
		t.Fatal(err)
	}
	return len(open)
}

// The doctor judges newer swamp's global lock as it judges 06b6147's: one
// left by a process that is gone is dead, and the repair moves it.
func TestDoctorJudgesBothGlobalLocks(t *testing.T) {
	dir := migFixture{catalogStamp: "-", manifest: true}.build(t)
	mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true})
	r := migLoad(t, dir)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	paths := lock.GlobalPaths(r.Base, r.Namespace)
	for _, p := range paths {
		fsxtest.WriteFiles(t, filepath.Dir(p), map[string]string{filepath.Base(p): string(dlRecord(cmd.Process.Pid))})
	}
	rep, err := doctor.Run(migCtx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		found := false
		for _, f := range rep.Findings {
			found = found || f.Code == doctor.CodeLockDead && f.Path == p
		}
		if !found {
			t.Errorf("no lock_dead finding for %s: %+v", p, rep.Findings)
		}
	}
}
