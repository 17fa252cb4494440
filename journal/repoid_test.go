package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
)

// journalWithOpenIntent makes {repo}/.swamp/_journal.db with one intent
// left open (a crash) and returns its path.
func journalWithOpenIntent(t *testing.T, repo string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(repo, ".swamp"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(repo, ".swamp", "_journal.db")
	j := openT(t, path)
	if _, err := j.Begin(&Intent{Kind: "test", Summary: "open"}); err != nil {
		t.Fatal(err)
	}
	j.Abandon()
	return path
}

func TestAJournalCopiedIntoAnotherRepoIsRefused(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	src := journalWithOpenIntent(t, a)
	if err := os.MkdirAll(filepath.Join(b, ".swamp"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(b, ".swamp", "_journal.db")
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}

	// An inspection only reads: it may list what the copy holds.
	r, err := OpenReadOnly(fsx.Real(), dst, Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("inspecting a copied journal: %v", err)
	}
	r.Close()
	_, err = Open(fsx.Real(), dst, Options{LockTimeout: time.Second})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.MovedTo == "" || !strings.Contains(err.Error(), "another repo") {
		t.Fatalf("opening a copied journal: %v", err)
	}
	if _, err := os.Stat(ce.MovedTo); err != nil {
		t.Fatalf("the copied journal was not set aside: %v", err)
	}
	// The next command starts afresh, with nothing of the other repo's.
	j, err := Open(fsx.Real(), dst, Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if open, err := j.OpenIntents(); err != nil || len(open) != 0 {
		t.Fatalf("open intents after the copy was set aside: %v %v", open, err)
	}
}

// A repo that moved keeps its journal: its .swamp directory is the same.
func TestAMovedRepoKeepsItsJournal(t *testing.T) {
	base := t.TempDir()
	a, moved := filepath.Join(base, "a"), filepath.Join(base, "moved")
	journalWithOpenIntent(t, a)
	if err := os.Rename(a, moved); err != nil {
		t.Fatal(err)
	}
	j, err := Open(fsx.Real(), filepath.Join(moved, ".swamp", "_journal.db"), Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("opening the journal of a moved repo: %v", err)
	}
	defer j.Close()
	if open, err := j.OpenIntents(); err != nil || len(open) != 1 {
		t.Fatalf("open intents of the moved repo: %v %v", open, err)
	}
}

// A repo copied while nothing was open keeps a usable journal: it becomes
// the copy's at its first writing open, and what it records from then on
// is recovered there.
func TestAJournalCopiedWhileIdleBecomesTheCopys(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	if err := os.MkdirAll(filepath.Join(a, ".swamp"), 0o755); err != nil {
		t.Fatal(err)
	}
	j := openT(t, filepath.Join(a, ".swamp", "_journal.db"))
	j.Close()
	if err := os.MkdirAll(filepath.Join(b, ".swamp"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(a, ".swamp", "_journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(b, ".swamp", "_journal.db")
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	journalWithOpenIntent(t, b) // opens the copy, records an intent, crashes
	j, err = Open(fsx.Real(), dst, Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("the copy's own interrupted intent: %v", err)
	}
	defer j.Close()
	if open, err := j.OpenIntents(); err != nil || len(open) != 1 {
		t.Fatalf("open intents: %v %v", open, err)
	}
}
