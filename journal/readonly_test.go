package journal

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
)

func names(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range ents {
		n = append(n, e.Name())
	}
	return strings.Join(n, ",")
}

func TestOpenReadOnlyOnReadOnlyMedia(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "_journal.db")
	j := openT(t, path)
	done, _ := j.Begin(&Intent{Kind: "test", Summary: "finished"})
	j.Finish(done, StatusDone)
	open, _ := j.Begin(&Intent{Kind: "test", Summary: "open"})
	j.Abandon() // a crash: the holder record is left too
	before, _ := os.ReadFile(path)
	list := names(t, dir)
	mp := fsxtest.ReadOnlyMount(t, dir)
	rpath := filepath.Join(mp, "_journal.db")

	// Writing is refused as media, not damage, and nothing is moved.
	_, err := Open(fsx.Real(), rpath, Options{LockTimeout: time.Second})
	var me *MediaError
	if !errors.As(err, &me) || !errors.Is(err, syscall.EROFS) || errors.Is(err, ErrCorrupt) || !me.ReadOnly() ||
		!strings.Contains(err.Error(), "read-only (EROFS)") || !strings.Contains(err.Error(), "not damaged") {
		t.Fatalf("Open on read-only media: %v", err)
	}

	r, err := OpenReadOnly(fsx.Real(), rpath, Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("OpenReadOnly: %v", err)
	}
	all, err := r.List(true)
	if err != nil || len(all) != 2 {
		t.Fatalf("list: %v %v", all, err)
	}
	ops, err := r.OpenIntents()
	if err != nil || len(ops) != 1 || ops[0].ID != open {
		t.Fatalf("open intents: %v %v", ops, err)
	}
	if _, err := r.Begin(&Intent{Kind: "test"}); err == nil {
		t.Fatal("Begin on a read-only journal must fail")
	}
	// Readers share: a second read-only open does not wait.
	r2, err := OpenReadOnly(fsx.Real(), rpath, Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("second reader: %v", err)
	}
	r2.Close()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(before) || names(t, dir) != list {
		t.Fatalf("read-only inspection changed the directory: %s -> %s", list, names(t, dir))
	}
}

func TestOpenReadOnlyTakesTheSharedLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "_journal.db")
	w := openT(t, path)
	_, err := OpenReadOnly(fsx.Real(), path, Options{LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("a reader must wait for the writer: %v", err)
	}
	w.Close()
	r, err := OpenReadOnly(fsx.Real(), path, Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := Open(fsx.Real(), path, Options{LockTimeout: 200 * time.Millisecond}); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("a writer must wait for the reader: %v", err)
	}
	if _, err := os.Stat(HolderPath(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a reader must write no holder record: %v", err)
	}
}

func TestOpenReadOnlyLeavesDamageInPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "_journal.db")
	os.WriteFile(path, []byte(strings.Repeat("not a database ", 1000)), 0o600)
	_, err := OpenReadOnly(fsx.Real(), path, Options{})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.MovedTo != "" || !strings.Contains(err.Error(), "left in place") {
		t.Fatalf("%v", err)
	}
	if names(t, dir) != "_journal.db" {
		t.Fatalf("moved: %s", names(t, dir))
	}
	// An empty file is an empty journal, left as it is.
	os.WriteFile(path, nil, 0o600)
	j, err := OpenReadOnly(fsx.Real(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l, err := j.List(true); err != nil || len(l) != 0 {
		t.Fatalf("%v %v", l, err)
	}
	// Every reader doctor and catalog verify call answers "nothing" (a
	// panic here once crashed `swampj doctor` after an interrupted
	// journal creation).
	if cs, err := j.CatalogStale(); cs != nil || err != nil {
		t.Fatalf("CatalogStale of an empty journal: %+v %v", cs, err)
	}
	if in, err := j.OpenIntents(); len(in) != 0 || err != nil {
		t.Fatalf("OpenIntents of an empty journal: %v %v", in, err)
	}
	j.Close()
	if names(t, dir) != "_journal.db" {
		t.Fatalf("moved: %s", names(t, dir))
	}
}

func TestJournalPathIsADirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "_journal.db")
	os.Mkdir(path, 0o755)
	for name, open := range map[string]func() error{
		"Open":         func() error { _, err := Open(fsx.Real(), path, Options{}); return err },
		"OpenReadOnly": func() error { _, err := OpenReadOnly(fsx.Real(), path, Options{}); return err },
	} {
		err := open()
		var nf *NotAFileError
		if !errors.As(err, &nf) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "is a directory") ||
			!strings.Contains(err.Error(), "mv "+path) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if names(t, dir) != "_journal.db" {
		t.Fatalf("the directory was moved: %s", names(t, dir))
	}
}
