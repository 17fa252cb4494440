package journal

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
)

func openT(t *testing.T, path string) *Journal {
	t.Helper()
	j, err := Open(fsx.Real(), path, Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestBeginFinishAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".swamp", "_journal.db")
	j := openT(t, path)
	id, err := j.Begin(&Intent{Kind: "test", Steps: []Step{{Kind: "mkdir", Path: "/x"}}})
	if err != nil {
		t.Fatal(err)
	}
	id2, err := j.Begin(&Intent{Kind: "test"})
	if err != nil || id2 != id+1 {
		t.Fatalf("second id %d err %v", id2, err)
	}
	j.Finish(id, StatusDone)
	open, err := j.OpenIntents()
	if err != nil || len(open) != 1 || open[0].ID != id2 {
		t.Fatalf("open intents %v %v", open, err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(HolderPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("holder record left behind: %v", err)
	}
	j = openT(t, path)
	defer j.Close()
	in, err := j.Get(id)
	if err != nil || in.Status != StatusDone || in.Steps[0].Path != "/x" {
		t.Fatalf("after reopen: %+v %v", in, err)
	}
	open, _ = j.OpenIntents()
	if len(open) != 1 {
		t.Fatalf("want 1 open, got %d", len(open))
	}
}

func TestLostFinishMarkLeavesIntentOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "_journal.db")
	j := openT(t, path)
	id, _ := j.Begin(&Intent{Kind: "test"})
	j.Finish(id, StatusDone)
	j.Abandon() // crash: the lazy mark never reaches the disk
	j = openT(t, path)
	defer j.Close()
	open, _ := j.OpenIntents()
	if len(open) != 1 || open[0].ID != id {
		t.Fatalf("intent whose mark was lost must stay open, got %v", open)
	}
}

func TestCrashBeforeBeginCommitRecordsNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "_journal.db")
	openT(t, path).Close()
	f := fsx.NewFault(fsx.Real()).FailKind("failpoint:journal.begin", fsx.ErrCrashed)
	j, err := Open(f, path, Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Begin(&Intent{Kind: "test"}); !fsx.IsCrash(err) {
		t.Fatalf("want crash, got %v", err)
	}
	j.Abandon()
	j = openT(t, path)
	defer j.Close()
	all, _ := j.List(true)
	if len(all) != 0 {
		t.Fatalf("nothing may be recorded, got %d", len(all))
	}
}

func TestZeroLengthJournalIsSetAsideAndRecreated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "_journal.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var warned string
	j, err := Open(fsx.Real(), path, Options{LockTimeout: time.Second, Warn: func(s string) { warned = s }})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if !strings.Contains(warned, "was empty") {
		t.Fatalf("no warning: %q", warned)
	}
	m, _ := filepath.Glob(path + ".corrupt-*")
	if len(m) != 1 {
		t.Fatalf("the empty file must be kept aside, found %v", m)
	}
	if _, err := j.Begin(&Intent{Kind: "test"}); err != nil {
		t.Fatal(err)
	}
}

func TestGarbageJournalIsMovedAsideWithClearError(t *testing.T) {
	for _, size := range []int{100, 4096, 32768} {
		dir := t.TempDir()
		path := filepath.Join(dir, "_journal.db")
		junk := make([]byte, size)
		_, _ = rand.Read(junk)
		if err := os.WriteFile(path, junk, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(fsx.Real(), path, Options{LockTimeout: time.Second})
		var ce *CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("size %d: want CorruptError, got %v", size, err)
		}
		if ce.MovedTo == "" || !strings.Contains(err.Error(), "re-run the interrupted operation") {
			t.Fatalf("message must say where it went and what to do: %v", err)
		}
		got, rerr := os.ReadFile(ce.MovedTo)
		if rerr != nil || len(got) != size {
			t.Fatalf("garbage must be kept byte for byte: %v", rerr)
		}
		// The next run starts a fresh journal.
		j := openT(t, path)
		j.Close()
	}
}

func TestSecondOpenTimesOutNamingHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "_journal.db")
	j, err := Open(fsx.Real(), path, Options{LockTimeout: time.Second, Command: []string{"swampj", "test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	start := time.Now()
	_, err = Open(fsx.Real(), path, Options{LockTimeout: 300 * time.Millisecond})
	var le *LockTimeoutError
	if !errors.As(err, &le) || !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("want lock timeout, got %v", err)
	}
	// Measured: about the 300 ms timeout (260–310 ms). The bound is ten
	// times that, well under DefaultLockTimeout (10 s), which an open that
	// ignored the option would wait.
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("open returned after %v for a 300 ms timeout", took)
	}
	if le.Holder == nil || le.Holder.PID != os.Getpid() || !strings.Contains(err.Error(), "swampj test") {
		t.Fatalf("holder not named: %v", err)
	}
}

func TestPruneKeepsOpenIntents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "_journal.db")
	j := openT(t, path)
	defer j.Close()
	first, _ := j.Begin(&Intent{Kind: "test"}) // stays open
	for i := 0; i < KeepFinished+5; i++ {
		id, err := j.Begin(&Intent{Kind: "test"})
		if err != nil {
			t.Fatal(err)
		}
		j.Finish(id, StatusDone)
	}
	if _, err := j.Begin(&Intent{Kind: "test"}); err != nil {
		t.Fatal(err)
	}
	all, _ := j.List(true)
	finished := 0
	for _, in := range all {
		if !in.Open() {
			finished++
		}
	}
	if finished != KeepFinished {
		t.Fatalf("finished kept = %d", finished)
	}
	if all[0].ID != first || !all[0].Open() {
		t.Fatal("open intent was pruned")
	}
}

// A journal torn at any 512-byte boundary (a power cut during bbolt's own
// write) either opens, keeping every intent bbolt considers committed, or is
// moved aside with a CorruptError — never a panic, never silently dropped.
func TestTornJournalNeverPanics(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	j := openT(t, src)
	for i := 0; i < 20; i++ {
		if _, err := j.Begin(&Intent{Kind: "test", Steps: []Step{{Kind: "mkdir", Path: strings.Repeat("x", 300)}}}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	full, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	opened, refused := 0, 0
	for cut := 512; cut < len(full); cut += 512 {
		p := filepath.Join(t.TempDir(), "_journal.db")
		if err := os.WriteFile(p, full[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		j, err := Open(fsx.Real(), p, Options{LockTimeout: time.Second})
		switch {
		case err == nil:
			if _, lerr := j.List(true); lerr != nil && !errors.Is(lerr, ErrCorrupt) {
				t.Fatalf("cut %d: list: %v", cut, lerr)
			}
			j.Close()
			opened++
		case errors.Is(err, ErrCorrupt):
			if m, _ := filepath.Glob(p + ".corrupt-*"); len(m) != 1 {
				t.Fatalf("cut %d: the torn file must be kept aside", cut)
			}
			refused++
		default:
			t.Fatalf("cut %d: %v", cut, err)
		}
	}
	t.Logf("%d torn lengths: %d opened, %d moved aside", opened+refused, opened, refused)
}

// TestOpenRemovesCreationLeftovers: a creation temp left beside an existing
// journal (its publish rename left both names) is removed by the next
// writer's Open; one whose creator is alive stays.
func TestOpenRemovesCreationLeftovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".swamp", "_journal.db")
	if err := openT(t, path).Close(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(filepath.Dir(path), creatingPrefix(path)+"999999999-abc")
	live := filepath.Join(filepath.Dir(path), creatingPrefix(path)+strconv.Itoa(os.Getppid())+"-def")
	for _, p := range []string{dead, live} {
		if err := os.WriteFile(p, []byte("bolt"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := openT(t, path).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dead creator's leftover is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("a live creator's temp was removed: %v", err)
	}
}
