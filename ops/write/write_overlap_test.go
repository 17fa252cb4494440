package write

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/internal/session"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogrow"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
)

// The overlapped write (writeOverlapped): a caller that holds the journal
// open, on the real disk, journals its plan while swamp's lock is being
// taken. These tests pin what that must never change: the plan is checked
// again under the lock, a write that lost the race is planned again, and a
// lock that cannot be had leaves the item and the journal as they were.

func openLibJournal(t *testing.T, r *repo.Repo) (*journal.Journal, *catalogsync.Handle) {
	t.Helper()
	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := catalogsync.OpenHandle(fsx.Real(), r.Dir)
	t.Cleanup(func() { cat.Close(); j.Close() })
	return j, cat
}

func TestWriteOverlappedWritesAndReadsBack(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{}) // the item exists
	j, cat := openLibJournal(t, r)
	recorded := 0
	o := WriteOptions{Journal: j, Catalog: cat, recorded: func() { recorded++ }}
	for n := 2; n <= 4; n++ {
		got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v" + strconv.Itoa(n))}, o)
		if got.Version != int64(n) || got.PreviousLatest != int64(n-1) {
			t.Fatalf("wrote %d over %d, want %d over %d", got.Version, got.PreviousLatest, n, n-1)
		}
		if b := mustRead(t, filepath.Join(got.Dir, "raw")); string(b) != "v"+strconv.Itoa(n) {
			t.Fatalf("version %d holds %q", n, b)
		}
	}
	if recorded != 3 {
		t.Fatalf("the overlapped path ran %d times, want 3", recorded)
	}
	v := viewItem(t, r, a)
	if v.Latest != "4" || v.CatalogLatest != 4 || len(v.CatalogRows) != 4 {
		t.Fatalf("after three overlapped writes: %+v", v)
	}
	noStagingLeft(t, r)
	if open, err := j.OpenIntents(); err != nil || len(open) != 0 {
		t.Fatalf("open intents %v, %v", open, err)
	}
}

// TestWriteOverlappedReplansWhenSwampGotThereFirst: swamp holds the model
// lock and writes version 2 while our plan (version 2 over 1) is already
// journaled. Under the lock the plan no longer holds: it is rolled back
// untouched, and the write is planned again as version 3 over 2.
func TestWriteOverlappedReplansWhenSwampGotThereFirst(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	itemDir := filepath.Join(r.DataRoot, filepath.FromSlash(a.Type), a.ModelID, a.DataName)
	swampLock, err := lock.Acquire(context.Background(), fsx.Real(), lock.ModelPath(r.Base, r.Namespace, a.Type, a.ModelID), lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	j, cat := openLibJournal(t, r)
	swampWrite := func() {
		// What swamp does under its lock: version 2, then latest.
		if err := os.MkdirAll(filepath.Join(itemDir, "2"), 0o755); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(filepath.Join(itemDir, "2", "raw"), []byte("swamp's v2"), 0o644); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(filepath.Join(itemDir, "latest"), []byte("2"), 0o644); err != nil {
			t.Error(err)
		}
		if err := swampLock.Release(); err != nil {
			t.Error(err)
		}
	}
	o := WriteOptions{Journal: j, Catalog: cat, recorded: swampWrite}
	got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("ours")}, o)
	if got.Version != 3 || got.PreviousLatest != 2 {
		t.Fatalf("wrote %d over %d, want 3 over 2", got.Version, got.PreviousLatest)
	}
	if b := mustRead(t, filepath.Join(itemDir, "2", "raw")); string(b) != "swamp's v2" {
		t.Fatalf("swamp's version 2 was touched: %q", b)
	}
	if b := mustRead(t, filepath.Join(itemDir, "3", "raw")); string(b) != "ours" {
		t.Fatalf("version 3 holds %q", b)
	}
	if b := mustRead(t, filepath.Join(itemDir, "latest")); string(b) != "3" {
		t.Fatalf("latest = %q", b)
	}
	noStagingLeft(t, r)
	all, err := j.List(true)
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, in := range all {
		if in.Kind == IntentKindVersionWrite {
			statuses = append(statuses, string(in.Status))
		}
	}
	// v1, the stale plan (rolled back), the write that landed.
	if want := []string{"done", "rolled-back", "done"}; strings.Join(statuses, ",") != strings.Join(want, ",") {
		t.Fatalf("write intents %v, want %v", statuses, want)
	}
}

// TestWriteOverlappedLockTimeout: the plan was journaled, the lock never
// came: lock.ErrTimeout, the item unchanged, no intent left open.
func TestWriteOverlappedLockTimeout(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	held, err := lock.Acquire(context.Background(), fsx.Real(), lock.ModelPath(r.Base, r.Namespace, a.Type, a.ModelID), lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	before := viewItem(t, r, a)
	j, cat := openLibJournal(t, r)
	recorded := false
	_, err = WriteVersions(context.Background(), r, []VersionWrite{{Address: a, Content: bytes.NewReader([]byte("v2"))}},
		WriteOptions{Common: host.Common{SwampLockTimeout: 200 * time.Millisecond}, Journal: j, Catalog: cat, recorded: func() { recorded = true }})
	if !errors.Is(err, lock.ErrTimeout) || !recorded {
		t.Fatalf("want lock.ErrTimeout from the overlapped path, got %v (overlapped: %v)", err, recorded)
	}
	if after := viewItem(t, r, a); !sameView(before, after) {
		t.Fatalf("item changed: %v", after)
	}
	if open, err := j.OpenIntents(); err != nil || len(open) != 0 {
		t.Fatalf("open intents %v, %v", open, err)
	}
}

// TestWriteOverlappedNewItemTakesTheLockFirst: planning a new item creates
// directories, so it never runs before the lock.
func TestWriteOverlappedNewItemTakesTheLockFirst(t *testing.T) {
	r := newWriteRepo(t)
	j, cat := openLibJournal(t, r)
	recorded := false
	got := write1(t, r, VersionWrite{Address: writeAddr(t, "command/shell/m/fresh"), Content: strings.NewReader("v1")},
		WriteOptions{Journal: j, Catalog: cat, recorded: func() { recorded = true }})
	if recorded || got.Version != 1 {
		t.Fatalf("new item: overlapped %v, version %d", recorded, got.Version)
	}
}

// TestWriteOverlappedSweepsADeadWritersStageUnderTheLock: an item holding
// what a dead writer staged is not planned before the lock: the locked
// path moves the stage into quarantine first.
func TestWriteOverlappedSweepsADeadWritersStageUnderTheLock(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	first := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	gone := exec.Command("true")
	if err := gone.Run(); err != nil || fsx.ProcessExists(gone.Process.Pid) {
		t.Skipf("no process that is gone: %v", err)
	}
	token, release := session.NewOwnerToken()
	release()
	_, rest, _ := strings.Cut(token, "-")
	stage := filepath.Join(filepath.Dir(first.Dir), session.StageName(2, strconv.Itoa(gone.Process.Pid)+"-"+rest))
	if err := os.Mkdir(stage, 0o755); err != nil {
		t.Fatal(err)
	}
	j, cat := openLibJournal(t, r)
	recorded := false
	got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v2")},
		WriteOptions{Journal: j, Catalog: cat, recorded: func() { recorded = true }})
	if recorded || got.Version != 2 {
		t.Fatalf("overlapped %v, version %d; want the locked path, version 2", recorded, got.Version)
	}
	noStagingLeft(t, r)
	moved, _ := filepath.Glob(filepath.Join(r.Base, ".swampj-quarantine", "*-write-*", "_solo", "command", "shell", "m", "state", filepath.Base(stage)))
	if len(moved) != 1 {
		t.Fatalf("the dead writer's stage is not in quarantine: %v", moved)
	}
}

// TestRecoverLeavesSwampsVersionOfTheSameNumberAlone: a write crashed right
// after journaling version 2; its lock went stale, and swamp wrote its own
// version 2 (files, `latest`, catalog row). Recovery must not take that
// version for its own: going forward it stops with a conflict and changes
// nothing; rolled back on request it removes nothing of swamp's.
func TestRecoverLeavesSwampsVersionOfTheSameNumberAlone(t *testing.T) {
	for _, mode := range []string{"known", "stream"} {
		t.Run(mode, func(t *testing.T) { recoverOverForeignVersion(t, mode) })
	}
}

func recoverOverForeignVersion(t *testing.T, mode string) {
	content := func(s string) io.Reader {
		if mode == "stream" {
			return nonSeeker{strings.NewReader(s)} // journaled self-verifying
		}
		return strings.NewReader(s)
	}
	a := writeAddr(t, "command/shell/m/state")
	// Crash right after the intent's commit.
	r := crashSecondWrite(t, a, content, "failpoint:journal.begin")
	itemDir := filepath.Join(r.DataRoot, filepath.FromSlash(a.Type), a.ModelID, a.DataName)

	_ = os.Remove(lock.ModelPath(r.Base, r.Namespace, a.Type, a.ModelID)) // stale: its holder "died"

	// swamp's own version 2, with its own id, and its catalog row.
	swampV2 := "swamp's v2"
	swampWrite := VersionWrite{Address: a, Content: strings.NewReader(swampV2)}
	other := newWriteRepo(t)
	write1(t, other, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	theirs := write1(t, other, swampWrite, WriteOptions{})
	if err := os.Rename(theirs.Dir, filepath.Join(itemDir, "2")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(itemDir, "latest"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &engine.Env{FS: fsx.Real(), Catalog: protocol.RepoCatalog(fsx.Real(), r.Dir)}
	defer env.CloseCatalog()
	cat, err := protocol.OpenerOf(env).Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	row, err := catalogRowOf(r, a, theirs)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.UpsertNewVersion(context.Background(), row); err != nil {
		t.Fatal(err)
	}
	before := viewItem(t, r, a)

	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := session.RecoverOpen(context.Background(), env, j, false); err == nil {
		t.Fatal("recovering forward over swamp's version 2 must stop with a conflict")
	}
	if after := viewItem(t, r, a); !sameView(before, after) {
		t.Fatalf("forward recovery changed the item:\nbefore %v\nafter  %v", before, after)
	}
	outs, err := session.RecoverOpen(context.Background(), env, j, true)
	if err != nil || len(outs) != 1 || outs[0].Status != journal.StatusRolledBack {
		t.Fatalf("rollback: %+v, %v", outs, err)
	}
	if after := viewItem(t, r, a); !sameView(before, after) {
		t.Fatalf("the rollback changed swamp's version:\nbefore %v\nafter  %v", before, after)
	}
	if b := mustRead(t, filepath.Join(itemDir, "2", "raw")); string(b) != swampV2 {
		t.Fatalf("version 2 holds %q", b)
	}
	noStagingLeft(t, r)
}

func catalogRowOf(r *repo.Repo, a repo.Address, v WrittenVersion) (catalog.Row, error) {
	return catalogrow.FromMeta(r.Namespace, a.Type, a.ModelID, v.Metadata)
}

// TestWriteOverlappedSymlinkSwapIsRefused: after the plan is journaled and
// before the lock is held, the item directory is replaced by a symlink
// leaving the data root. The containment check under the lock catches it:
// the write is refused and nothing lands outside.
func TestWriteOverlappedSymlinkSwapIsRefused(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	itemDir := filepath.Join(r.DataRoot, filepath.FromSlash(a.Type), a.ModelID, a.DataName)
	// The symlink leads to an exact copy of the item, so that observing
	// the item alone finds the plan still holds.
	outside := filepath.Join(t.TempDir(), "state")
	fsxtest.CopyTree(t, itemDir, outside)
	copied, _ := os.ReadDir(outside)
	j, cat := openLibJournal(t, r)
	swap := func() {
		if err := os.Rename(itemDir, itemDir+".moved"); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(outside, itemDir); err != nil {
			t.Error(err)
		}
	}
	_, err := WriteVersions(context.Background(), r, []VersionWrite{{Address: a, Content: strings.NewReader("v2")}},
		WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}, Journal: j, Catalog: cat, recorded: swap})
	if !errors.Is(err, repo.ErrOutsideDataRoot) {
		t.Fatalf("want ErrOutsideDataRoot, got %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != len(copied) {
		t.Fatalf("the write landed outside the data root: %v", ents)
	}
	if open, err := j.OpenIntents(); err != nil || len(open) != 0 {
		t.Fatalf("open intents %v, %v", open, err)
	}
}

// TestRecoverWaitsForSwampsModelLock: a write cut short after staging
// would be finished by recovery (latest and the catalog move to version
// 2) — but not while swamp holds that model's lock: recovery waits, times
// out (lock.ErrTimeout), leaves the item and the intent as they were, and
// finishes the write once the lock is free.
func TestRecoverWaitsForSwampsModelLock(t *testing.T) {
	a := writeAddr(t, "command/shell/m/state")
	// Cut right after the version is published, before latest.
	r := crashSecondWrite(t, a, plainContent, "rename-noreplace")
	// swamp (a live process other than this one) now holds the model lock.
	lockPath, swamp := swampHoldsModelLock(t, r, a)
	before := viewItem(t, r, a)

	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	env := &engine.Env{FS: fsx.Real(), Catalog: protocol.RepoCatalog(fsx.Real(), r.Dir), SwampLockTimeout: 200 * time.Millisecond}
	defer env.CloseCatalog()
	if _, err := session.RecoverOpen(context.Background(), env, j, false); !errors.Is(err, lock.ErrTimeout) {
		t.Fatalf("want lock.ErrTimeout while swamp holds the model, got %v", err)
	}
	if after := viewItem(t, r, a); !sameView(before, after) {
		t.Fatalf("recovery changed the item under swamp's lock:\nbefore %v\nafter  %v", before, after)
	}
	if open, _ := j.OpenIntents(); len(open) != 1 {
		t.Fatalf("open intents: %d, want 1", len(open))
	}
	if b, _ := os.ReadFile(lockPath); !bytes.Equal(b, swamp.Encode()) {
		t.Fatal("swamp's lock was touched")
	}

	if err := os.Remove(lockPath); err != nil { // swamp is done
		t.Fatal(err)
	}
	outs, err := session.RecoverOpen(context.Background(), env, j, false)
	if err != nil || len(outs) != 1 || outs[0].Status != journal.StatusDone {
		t.Fatalf("recovery after the lock is free: %+v, %v", outs, err)
	}
	if v := viewItem(t, r, a); v.Latest != "2" || v.CatalogLatest != 2 {
		t.Fatalf("the interrupted write was not finished: %+v", v)
	}
	if _, err := os.Stat(lockPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("recovery left its lock behind: %v", err)
	}
}

// TestWriteOverlappedSkipsANumericFile: a plain file named like the next
// version is skipped at allocation, and the plan made before the lock
// still holds under it (no second plan, no second journal commit).
func TestWriteOverlappedSkipsANumericFile(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	itemDir := filepath.Join(r.DataRoot, filepath.FromSlash(a.Type), a.ModelID, a.DataName)
	if err := os.WriteFile(filepath.Join(itemDir, "2"), []byte("not a version"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, cat := openLibJournal(t, r)
	got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v3")}, WriteOptions{Journal: j, Catalog: cat})
	if got.Version != 3 {
		t.Fatalf("wrote version %d, want 3 (2 is taken by a file)", got.Version)
	}
	all, err := j.List(true)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(all); n != 2 { // v1's intent and this one: no abandoned plan
		t.Fatalf("%d intents, want 2 (the plan was made twice?)", n)
	}
}

// TestRecoverUsesALentLock: swamp runs recovery as a hook while it holds
// the model's lock itself and says so (SWAMP_LOCK_HOLDER_PID): recovery
// does not wait on it, finishes the write, and leaves swamp's lock alone.
func TestRecoverUsesALentLock(t *testing.T) {
	a := writeAddr(t, "command/shell/m/state")
	r := crashSecondWrite(t, a, plainContent, "rename-noreplace")
	lockPath, swamp := swampHoldsModelLock(t, r, a)
	t.Setenv(lock.EnvHolderPid, strconv.Itoa(os.Getppid()))

	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	env := &engine.Env{FS: fsx.Real(), Catalog: protocol.RepoCatalog(fsx.Real(), r.Dir), SwampLockTimeout: 200 * time.Millisecond}
	defer env.CloseCatalog()
	outs, err := session.RecoverOpen(context.Background(), env, j, false)
	if err != nil || len(outs) != 1 || outs[0].Status != journal.StatusDone {
		t.Fatalf("recovery under a lent lock: %+v, %v", outs, err)
	}
	if v := viewItem(t, r, a); v.Latest != "2" {
		t.Fatalf("latest = %q, want 2", v.Latest)
	}
	if b, _ := os.ReadFile(lockPath); !bytes.Equal(b, swamp.Encode()) {
		t.Fatal("the lent lock was touched")
	}
}

// crashSecondWrite writes version 1 of a, then a second version whose run
// is cut right after the first operation of kind it issues once its intent
// is journaled (found by an uncut probe run with the same history). It
// returns the repo, left as the crashed process left it.
func crashSecondWrite(t *testing.T, a repo.Address, content func(string) io.Reader, kind string) *repo.Repo {
	t.Helper()
	r := newWriteRepo(t)
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	probe := fsx.NewFault(fsx.Real())
	probeRepo := newWriteRepo(t)
	write1(t, probeRepo, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	write1(t, probeRepo, VersionWrite{Address: a, Content: content("v2")}, WriteOptions{fsys: probe})
	begun, cut := false, 0
	for _, op := range probe.Trace() {
		begun = begun || op.Kind == "failpoint:journal.begin"
		if begun && op.Kind == kind {
			cut = op.N
			break
		}
	}
	if cut == 0 {
		t.Fatalf("the probe run issued no %s after its intent", kind)
	}
	_, err := WriteVersions(context.Background(), r, []VersionWrite{{Address: a, Content: content("v2")}},
		WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: fsx.NewFault(fsx.Real()).CrashAfter(cut)}})
	if !fsx.IsCrash(err) {
		t.Fatalf("want a crash, got %v", err)
	}
	return r
}

func plainContent(s string) io.Reader { return strings.NewReader(s) }

// swampHoldsModelLock writes a's model lock as a live swamp process (this
// test's parent) would hold it, and returns its path and record.
func swampHoldsModelLock(t *testing.T, r *repo.Repo, a repo.Address) (string, lock.Info) {
	t.Helper()
	path := lock.ModelPath(r.Base, r.Namespace, a.Type, a.ModelID)
	host, _ := os.Hostname()
	swamp := lock.Info{Holder: "swamp@" + host, Hostname: host, Pid: os.Getppid(), AcquiredAt: time.Now().UTC(), TTLMs: 30000, Nonce: "swamp-nonce"}
	if err := os.WriteFile(path, swamp.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, swamp
}
