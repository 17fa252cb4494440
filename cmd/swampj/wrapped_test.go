package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/wrapped"
)

// exampleItem is an item of the example repo with a latest, and the
// version it names.
func exampleItem(t *testing.T, dir string) (item, key, latest string) {
	t.Helper()
	data := filepath.Join(dir, ".swamp", "data")
	filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || item != "" || d.Name() != "latest" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil {
			item, latest = filepath.Dir(p), strings.TrimSpace(string(b))
		}
		return nil
	})
	if item == "" {
		t.Fatal("no item with a latest in the example repo")
	}
	rel, _ := filepath.Rel(data, item)
	return item, filepath.ToSlash(rel), latest
}

// tearAndDie is a wrapped command that writes a version the way swamp does
// (temp file and rename, `latest` deleted and re-created), leaves it
// zero-byte as a power cut does, and then kills its wrapper: the run ends
// without its final barrier or doctor.
func tearAndDie(item string) string {
	return `set -e
I='` + item + `'
mkdir "$I/99"
: > "$I/99/.raw.tmp"; mv "$I/99/.raw.tmp" "$I/99/raw"
: > "$I/99/.meta.tmp"; mv "$I/99/.meta.tmp" "$I/99/metadata.yaml"
rm "$I/latest"; printf 99 > "$I/latest"
kill -9 $PPID
sleep 1`
}

// A wrapped run killed before its final barrier (what a power cut or the
// OOM killer does to `swampj run -- swamp serve`) is settled by the next
// swampj command that needs a settled repo, before it does anything else:
// the torn version goes to quarantine, latest names the last readable
// version, and the doctor is clean. Each next command is one a restarted
// service or an operator runs.
func TestKilledWrappedRunIsSettledByTheNextCommand(t *testing.T) {
	if err := wrapped.Supported(); err != nil {
		t.Skipf("the write barrier cannot run here: %v", err)
	}
	for _, next := range [][]string{
		{"run", "--", "true"},
		{"recover"},
		{"data", "write", "OTHER", "--allow-empty"},
	} {
		t.Run(next[0], func(t *testing.T) {
			dir := exampleRepo(t)
			item, key, prev := exampleItem(t, dir)
			res := swampj(t, dir, "run", "--", "sh", "-c", tearAndDie(item))
			if res.code != -1 && res.code != 137 { // -1: ended by a signal
				t.Fatalf("the wrapper was not killed: exit %d\n%s", res.code, res.stderr)
			}
			jl := swampj(t, dir, "journal", "list", "--json")
			var listed struct {
				WrappedRuns []wrappedRunLine `json:"wrappedRuns"`
			}
			if err := json.Unmarshal([]byte(jl.stdout), &listed); err != nil || len(listed.WrappedRuns) != 1 || listed.WrappedRuns[0].State != "dead" {
				t.Fatalf("journal list does not show the dead run: %v %s", err, jl.stdout)
			}
			args := next
			if next[0] == "data" {
				// A write of another item: the settling comes first all the same.
				args = []string{"data", "write", strings.Replace(key, filepath.Base(key), "another-item", 1)}
			}
			r := swampjIn(t, dir, []byte(`{"x":1}`), args...)
			if r.code != 0 {
				t.Fatalf("%v: exit %d\n%s", args, r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "settled a wrapped run") {
				t.Fatalf("%v did not say it settled the dead run:\n%s", args, r.stderr)
			}
			if b, _ := os.ReadFile(filepath.Join(item, "latest")); strings.TrimSpace(string(b)) != prev {
				t.Fatalf("latest is %q after %v, want %s", b, args, prev)
			}
			if d := swampj(t, dir, "doctor"); d.code != 0 {
				t.Fatalf("doctor after settling: exit %d\n%s%s", d.code, d.stdout, d.stderr)
			}
			jl = swampj(t, dir, "journal", "list", "--json", "--all")
			if !strings.Contains(jl.stdout, `"state": "closed"`) && !strings.Contains(jl.stdout, `"state":"closed"`) {
				t.Fatalf("the run record is not closed: %s", jl.stdout)
			}
		})
	}
}

// countFS counts the reads a command makes of the disk.
type countFS struct {
	fsx.FS
	n atomic.Int64
}

func (c *countFS) Stat(name string) (fs.FileInfo, error) { c.n.Add(1); return c.FS.Stat(name) }
func (c *countFS) Lstat(name string) (fs.FileInfo, error) {
	c.n.Add(1)
	return c.FS.Lstat(name)
}
func (c *countFS) ReadDir(name string) ([]fs.DirEntry, error) {
	c.n.Add(1)
	return c.FS.ReadDir(name)
}
func (c *countFS) Open(name string) (fsx.File, error) { c.n.Add(1); return c.FS.Open(name) }

// What `swampj run` does around a command does not grow with the repo: it
// learns what the command changed from the barrier, never by walking the
// tree. The same wrapped command costs the same disk reads on a repo of
// 10 items and on one of 2,000.
func TestWrappedRunCostDoesNotGrowWithTheRepo(t *testing.T) {
	if err := wrapped.Supported(); err != nil {
		t.Skipf("the write barrier cannot run here: %v", err)
	}
	reads := func(items int) int64 {
		dir := t.TempDir()
		if _, err := example.Synthetic(fsx.Real(), dir, example.SyntheticOptions{Items: items, Versions: 1}); err != nil {
			t.Fatal(err)
		}
		c := &countFS{}
		wrapDiskFS = func(f fsx.FS) fsx.FS { c.FS = f; return c }
		defer func() { wrapDiskFS = nil }()
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"swampj", "--repo-dir", dir, "run", "--", "true"}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return c.n.Load()
	}
	small, big := reads(10), reads(2000)
	if big > small+10 {
		t.Fatalf("wrapping 'true' read the disk %d times on 2,000 items and %d times on 10: it grows with the repo", big, small)
	}
}

// A model and an item created while the command runs, in directories that
// did not exist when it started, are covered: the wrapper killed after
// the command wrote a zero-byte first version there, the next `swampj
// recover` settles exactly that new item.
func TestDirectoryCreatedDuringTheRunIsCovered(t *testing.T) {
	if err := wrapped.Supported(); err != nil {
		t.Skipf("the write barrier cannot run here: %v", err)
	}
	dir := exampleRepo(t)
	item := filepath.Join(dir, ".swamp", "data", "command", "shell", "born-during-the-run", "result")
	script := `set -e
I='` + item + `'
mkdir -p "$I/1"
: > "$I/1/.raw.tmp"; mv "$I/1/.raw.tmp" "$I/1/raw"
: > "$I/1/.meta.tmp"; mv "$I/1/.meta.tmp" "$I/1/metadata.yaml"
printf 1 > "$I/.latest.tmp"; mv "$I/.latest.tmp" "$I/latest"
kill -9 $PPID
sleep 1`
	if r := swampj(t, dir, "run", "--", "sh", "-c", script); r.code != -1 && r.code != 137 {
		t.Fatalf("the wrapper was not killed: exit %d\n%s", r.code, r.stderr)
	}
	r := swampj(t, dir, "recover")
	if r.code != 0 || !strings.Contains(r.stderr, "settled a wrapped run") || !strings.Contains(r.stderr, "quarantine") {
		t.Fatalf("recover did not settle the new item: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(item, "1")); !os.IsNotExist(err) {
		t.Fatalf("the zero-byte version in the new directory is still there (%v)", err)
	}
	if d := swampj(t, dir, "doctor"); d.code != 0 {
		t.Fatalf("doctor after settling: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
}
