package ops_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
	"github.com/swampj/swampj/recover"
)

// A host tool writes through the Go API with its own journal; the write
// is acknowledged, but its lazy done mark rides the next journal commit,
// and the host dies before that. swamp then writes the same item (version
// 4 on top of swampj's 3), before anything recovers. The re-driven intent
// finds `latest` at neither of its two values. It used to stop with a
// conflict that no command could get past; forward, the intent's work is
// all on disk and a later write built on it, so it is finished as it
// stands. A rollback would hide swamp's version behind the one before
// swampj's, so it is refused before anything is undone.
func TestRecoveryAcceptsALatestThatMovedPastTheIntent(t *testing.T) {
	build := func(t *testing.T) (dir, item string) {
		dir = filepath.Join(fsxtest.ScratchDir(t), "repo")
		fmBaseRepo(t, dir)
		r := migLoad(t, dir)
		j, err := journal.Open(nil, r.JournalPath, journal.Options{LockTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		res, err := write.WriteVersions(fmCtx, r, []write.VersionWrite{{Address: fmAddr(fmM1, "out"), Content: strings.NewReader("version three")}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}, Journal: j})
		if err != nil {
			t.Fatal(err)
		}
		if v := res[0].Version; v != 3 {
			t.Fatalf("wrote version %d, want 3", v)
		}
		j.Abandon() // the host dies: the done mark was never committed
		if open := fmOpenIntents(t, dir); len(open) != 1 {
			t.Fatalf("%d open intents, want the write whose done mark was lost", len(open))
		}
		item = filepath.Join(r.DataRoot, fmType, fmM1, "out")
		swampWritesNext(t, item, 3, "swamp's version four")
		return dir, item
	}

	t.Run("forward", func(t *testing.T) {
		dir, item := build(t)
		rep, err := recover.Run(fmCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}})
		if err != nil {
			t.Fatalf("recover: %v", err)
		}
		if rep.Finished != 1 {
			t.Fatalf("recover finished %d intents, want 1: %+v", rep.Finished, rep)
		}
		if l := readFileT(t, filepath.Join(item, "latest")); l != "4" {
			t.Fatalf("latest is %q after recovery, want swamp's 4", l)
		}
		for v, want := range map[string]string{"3": "version three", "4": "swamp's version four"} {
			if got := readFileT(t, filepath.Join(item, v, "raw")); got != want {
				t.Fatalf("version %s holds %q, want %q", v, got, want)
			}
		}
		if open := fmOpenIntents(t, dir); len(open) != 0 {
			t.Fatalf("%d intents open after recovery", len(open))
		}
		again, err := recover.Run(fmCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}})
		if err != nil || again.Finished+again.RolledBack != 0 {
			t.Fatalf("second recover is not a no-op: %+v %v", again, err)
		}
	})

	t.Run("rollback", func(t *testing.T) {
		dir, item := build(t)
		before := fmState(t, dir)
		_, err := recover.Run(fmCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: true})
		if !errors.Is(err, swampj.ErrConflict) {
			t.Fatalf("rollback: got %v, want a conflict", err)
		}
		for _, want := range []string{"latest", "4", "later"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the conflict does not say %q: %v", want, err)
			}
		}
		if d := fmState(t, dir).diff(before); len(d) > 0 {
			t.Fatalf("the refused rollback changed the repo:\n%s", strings.Join(d, "\n"))
		}
		if l := readFileT(t, filepath.Join(item, "latest")); l != "4" {
			t.Fatalf("latest is %q, want 4", l)
		}
		// Forward still finishes it.
		if rep, err := recover.Run(fmCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}}); err != nil || rep.Finished != 1 {
			t.Fatalf("recover after the refused rollback: %+v %v", rep, err)
		}
	})
}

// The same, but the host died before its catalog commit: `latest` is
// published, the row is not. Recovery must not flag version 3 as latest
// in the catalog (swamp's 4 is); it leaves the catalog to be rebuilt,
// says so, and the rebuild agrees with the disk.
func TestRecoverySupersededBeforeTheCatalogCommit(t *testing.T) {
	write := func(fsys fsx.FS, r *repo.Repo) error {
		_, err := write.WriteVersions(fmCtx, r, []write.VersionWrite{{Address: fmAddr(fmM1, "out"), Content: strings.NewReader("version three")}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: fsys}})
		return err
	}
	tmpl := filepath.Join(fsxtest.ScratchDir(t), "tmpl")
	fmBaseRepo(t, tmpl)
	clean := fsx.NewFault(fsx.Real())
	if err := write(clean, migLoad(t, fmCopy(t, tmpl))); err != nil {
		t.Fatal(err)
	}
	commitAt := migOpIndex(clean, "failpoint:"+catalog.FailpointUpsert)

	dir := fmCopy(t, tmpl)
	r := migLoad(t, dir)
	if err := write(fsx.NewFault(fsx.Real()).CrashAfter(commitAt-1), r); !fsx.IsCrash(err) {
		t.Fatalf("the write was to crash at its catalog commit: %v", err)
	}
	fmProcessExits(t, dir)
	a := fmAddr(fmM1, "out")
	if l, c := fmLatest(r, a), fmCatalogLatest(t, r, a); l != "3" || c != 2 {
		t.Fatalf("before recovery: latest %q, catalog latest %d; want the crash between them (3, 2)", l, c)
	}
	item := filepath.Join(r.DataRoot, fmType, fmM1, "out")
	swampWritesNext(t, item, 3, "swamp's version four")

	rep, err := recover.Run(fmCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}})
	if err != nil || rep.Finished != 1 {
		t.Fatalf("recover: %+v %v", rep, err)
	}
	if rep.Intents[0].CatalogStale == "" {
		t.Fatalf("recovery does not say the catalog was left stale: %+v", rep.Intents[0])
	}
	if c := fmCatalogLatest(t, r, a); c == 3 {
		t.Fatal("recovery flagged version 3 as latest in the catalog; latest names swamp's 4")
	}
	if l := fmLatest(r, a); l != "4" {
		t.Fatalf("latest is %q, want 4", l)
	}
	if _, err := catalogsync.Rebuild(fmCtx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second}, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	if msg := fmInSync(t, r, false); msg != "" {
		t.Fatal(msg)
	}
	if c := fmCatalogLatest(t, r, a); c != 4 {
		t.Fatalf("after the rebuild the catalog names %d as latest, want 4", c)
	}
}

// swampWritesNext writes version prev+1 of the item the way swamp does
// (a version directory with raw and metadata.yaml, then `latest`, no
// newline), its metadata copied from version prev with the number, size
// and checksum of the new content.
func swampWritesNext(t *testing.T, item string, prev int, content string) {
	t.Helper()
	md := readFileT(t, filepath.Join(item, fmt.Sprint(prev), "metadata.yaml"))
	sum := sha256.Sum256([]byte(content))
	for re, repl := range map[string]string{
		`(?m)^version: \d+$`:   fmt.Sprintf("version: %d", prev+1),
		`(?m)^size: \d+$`:      fmt.Sprintf("size: %d", len(content)),
		`(?m)^checksum: \S+$`:  "checksum: " + hex.EncodeToString(sum[:]),
		`(?m)^createdAt: .*$`:  "createdAt: '2026-12-01T12:00:00.000Z'",
		`(?m)^ {0,2}id: \S+$`:  "id: 0b6c1d2e-3f40-4a5b-8c6d-7e8f9a0b1c2d",
		`(?m)^streaming: \S+$`: "streaming: false",
	} {
		md = regexp.MustCompile(re).ReplaceAllString(md, repl)
	}
	next := filepath.Join(item, fmt.Sprint(prev+1))
	if err := os.MkdirAll(next, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"raw": content, "metadata.yaml": md} {
		if err := os.WriteFile(filepath.Join(next, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(item, "latest"), []byte(fmt.Sprint(prev+1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFileT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
