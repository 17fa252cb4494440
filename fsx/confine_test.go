//go:build linux

package fsx_test

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
)

// confinedRepo is a repo-like root with a canary directory beside it,
// outside: the canary must never be read, created in or changed.
func confinedRepo(t *testing.T) (c *fsx.Confined, root, canary string) {
	t.Helper()
	base := t.TempDir()
	root, canary = filepath.Join(base, "repo"), filepath.Join(base, "canary")
	for _, d := range []string{filepath.Join(root, ".swamp", "data", "item"), canary} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(canary, "secret.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".swamp", "data", "item", "1"), []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := fsx.NewConfined(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, root, canary
}

func wantOutside(t *testing.T, what string, err error, link string) {
	t.Helper()
	var oe *fsx.OutsideError
	if !errors.As(err, &oe) {
		t.Fatalf("%s: got %v (%T), want an *fsx.OutsideError", what, err, err)
	}
	if oe.Code() != "path_outside_repo" {
		t.Fatalf("%s: code %q", what, oe.Code())
	}
	if link != "" && oe.Link != link {
		t.Fatalf("%s: the error names link %q, want %q (%v)", what, oe.Link, link, err)
	}
}

func TestConfinedRefusesASymlinkLeavingTheRoot(t *testing.T) {
	for _, relative := range []bool{false, true} {
		c, root, canary := confinedRepo(t)
		audit := filepath.Join(root, ".swamp", "audit")
		target := canary
		if relative {
			target = filepath.Join("..", "..", "canary")
		}
		if err := os.Symlink(target, audit); err != nil {
			t.Fatal(err)
		}
		inside := filepath.Join(audit, "secret.json")
		_, err := c.ReadDir(audit)
		wantOutside(t, "ReadDir", err, audit)
		if !strings.Contains(err.Error(), audit) || !strings.Contains(err.Error(), target) {
			t.Fatalf("the error must name the link and its target: %v", err)
		}
		_, err = c.ReadFile(inside)
		wantOutside(t, "ReadFile", err, audit)
		_, err = c.Stat(inside)
		wantOutside(t, "Stat", err, audit)
		_, err = c.Open(inside)
		wantOutside(t, "Open", err, audit)
		err = c.Rename(inside, filepath.Join(root, ".swamp", "taken.json"))
		wantOutside(t, "Rename", err, audit)
		err = c.Remove(inside)
		wantOutside(t, "Remove", err, audit)
		err = c.Mkdir(filepath.Join(audit, "new"), fsx.DirMode)
		wantOutside(t, "Mkdir", err, audit)
		_, err = c.Create(filepath.Join(audit, "new.json"), fsx.FileMode)
		wantOutside(t, "Create", err, audit)
		err = c.Link(inside, filepath.Join(root, ".swamp", "hard"))
		wantOutside(t, "Link", err, audit)
		// The link itself is inside: it can be looked at and moved aside.
		if fi, err := c.Lstat(audit); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("Lstat of the link itself: %v %v", fi, err)
		}
		if got, err := c.Readlink(audit); err != nil || got != target {
			t.Fatalf("Readlink: %q %v", got, err)
		}
		ents, _ := os.ReadDir(canary)
		if len(ents) != 1 {
			t.Fatalf("the canary changed: %v", ents)
		}
	}
}

func TestConfinedFollowsLinksThatStayInside(t *testing.T) {
	c, root, _ := confinedRepo(t)
	item := filepath.Join(root, ".swamp", "data", "item")
	// swamp's legacy `latest -> 1`.
	if err := os.Symlink("1", filepath.Join(item, "latest")); err != nil {
		t.Fatal(err)
	}
	if b, err := c.ReadFile(filepath.Join(item, "latest")); err != nil || string(b) != "one" {
		t.Fatalf("ReadFile through an inside link: %q %v", b, err)
	}
	if err := os.Symlink("data", filepath.Join(root, ".swamp", "alias")); err != nil {
		t.Fatal(err)
	}
	if ents, err := c.ReadDir(filepath.Join(root, ".swamp", "alias", "item")); err != nil || len(ents) != 2 {
		t.Fatalf("ReadDir through an inside link: %v %v", ents, err)
	}
	dir, err := fsx.OpenDir(c, item)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if b, err := dir.ReadFile("latest"); err != nil || string(b) != "one" {
		t.Fatalf("Dir.ReadFile through an inside link: %q %v", b, err)
	}
}

func TestConfinedRefusesPathsUnderNoRoot(t *testing.T) {
	c, _, canary := confinedRepo(t)
	_, err := c.ReadFile(filepath.Join(canary, "secret.json"))
	wantOutside(t, "ReadFile", err, "")
	err = c.Remove(filepath.Join(canary, "secret.json"))
	wantOutside(t, "Remove", err, "")
}

// A link planted where swampj creates a file (a lock, a gate) never
// creates anything at its target.
func TestConfinedCreateNeverFollowsALink(t *testing.T) {
	c, root, canary := confinedRepo(t)
	gate := filepath.Join(root, ".swamp", "gate")
	if err := os.Symlink(filepath.Join(canary, "created"), gate); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(gate, fsx.FileMode); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over a dangling link: %v, want it to exist already", err)
	}
	if _, err := c.OpenAppend(gate); err == nil {
		t.Fatal("OpenAppend followed a link")
	}
	if _, err := os.Lstat(filepath.Join(canary, "created")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file was created outside the root: %v", err)
	}
}

func TestReadsNeverBlockOnAFIFO(t *testing.T) {
	c, root, _ := confinedRepo(t)
	fifo := filepath.Join(root, ".swamp", "data", "item", "latest")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for name, fsys := range map[string]fsx.FS{"confined": c, "plain": fsx.Real()} {
			var nr *fsx.NotRegularError
			if _, err := fsys.ReadFile(fifo); !errors.As(err, &nr) {
				t.Errorf("%s ReadFile of a FIFO: %v, want *NotRegularError", name, err)
			}
			if _, err := fsys.Open(fifo); !errors.As(err, &nr) {
				t.Errorf("%s Open of a FIFO: %v, want *NotRegularError", name, err)
			}
			dir, err := fsx.OpenDir(fsys, filepath.Dir(fifo))
			if err != nil {
				t.Error(err)
				continue
			}
			if _, err := dir.ReadFile("latest"); !errors.As(err, &nr) {
				t.Errorf("%s Dir.ReadFile of a FIFO: %v, want *NotRegularError", name, err)
			}
			dir.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a read of a FIFO blocked")
	}
}

func TestReadFileIsBounded(t *testing.T) {
	c, root, _ := confinedRepo(t)
	big := filepath.Join(root, ".swamp", "data", "item", "latest")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil { // sparse: 3 GB that take no disk
		t.Fatal(err)
	}
	f.Close()
	for name, fsys := range map[string]fsx.FS{"confined": c, "plain": fsx.Real()} {
		var tl *fsx.TooLargeError
		if _, err := fsys.ReadFile(big); !errors.As(err, &tl) {
			t.Errorf("%s ReadFile of 3 GB: %v, want *TooLargeError", name, err)
		}
		dir, err := fsx.OpenDir(fsys, filepath.Dir(big))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dir.ReadFile("latest"); !errors.As(err, &tl) {
			t.Errorf("%s Dir.ReadFile of 3 GB: %v, want *TooLargeError", name, err)
		}
		dir.Close()
	}
	var nr *fsx.NotRegularError
	if _, err := fsx.Real().ReadFile("/dev/zero"); !errors.As(err, &nr) {
		t.Errorf("ReadFile of /dev/zero: %v, want *NotRegularError", err)
	}
}

// Run as root on a repo that belongs to someone else, what swampj creates
// is the repo owner's.
func TestConfinedGivesCreatedFilesToTheRepoOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root can create files for another user")
	}
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(root, 4242, 4243); err != nil {
		t.Fatal(err)
	}
	c, err := fsx.NewConfined(root)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Mkdir(filepath.Join(root, "d"), fsx.DirMode); err != nil {
		t.Fatal(err)
	}
	f, err := c.Create(filepath.Join(root, "d", "f"), fsx.FileMode)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, p := range []string{filepath.Join(root, "d"), filepath.Join(root, "d", "f")} {
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if s := st.Sys().(*syscall.Stat_t); s.Uid != 4242 || s.Gid != 4243 {
			t.Errorf("%s is owned by %d:%d, want the repo owner's 4242:4243", p, s.Uid, s.Gid)
		}
	}
}
