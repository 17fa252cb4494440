package main

// Faults never wedge the repo (issue #10): after a full disk, an
// unwritable catalog or bad input, the command says truthfully what is on
// disk, and the ordinary commands bring the repo to a clean doctor.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mountTmpfs mounts a tmpfs of the given size at a new directory (root
// only; skipped with a notice elsewhere).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (CI runs as root)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// noStagingDirs fails if a .swampj-stage-* directory is left under root.
func noStagingDirs(t *testing.T, root string) {
	t.Helper()
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), ".swampj-stage-") {
			t.Errorf("staging directory left: %s", p)
		}
		return nil
	})
}

// TestFullDiskWriteLeavesNothingAndRecoverWorks: a write larger than the
// free space fails, names the full disk, leaves no staged bytes and no
// open intent; recover, doctor and a small write afterwards all work.
func TestFullDiskWriteLeavesNothingAndRecoverWorks(t *testing.T) {
	dir := mountTmpfs(t, "3m")
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("swampVersion: test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "command/shell/" + dataModel + "/result"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "first write")

	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"file", "stdin"} {
		var r result
		if mode == "file" {
			r = swampj(t, dir, "data", "write", addr, "--file", big)
		} else {
			r = swampjIn(t, dir, bytes.Repeat([]byte("y"), 4<<20), "data", "write", addr)
		}
		if r.code != 1 || !strings.Contains(r.stderr, "no space left on device") {
			t.Fatalf("%s: want exit 1 naming the full disk, got %d: %s", mode, r.code, r.stderr)
		}
		noStagingDirs(t, dir)
		if l := mustOK(t, swampj(t, dir, "journal", "list"), "journal list"); strings.Contains(l.stdout, "open") {
			t.Fatalf("%s: an intent is left open:\n%s", mode, l.stdout)
		}
		got := mustOK(t, swampj(t, dir, "data", "get", addr), "data get")
		if got.stdout != `{"v":1}` {
			t.Fatalf("%s: latest content = %q", mode, got.stdout)
		}
	}
	mustOK(t, swampj(t, dir, "recover"), "recover")
	mustOK(t, swampj(t, dir, "doctor"), "doctor")
	mustOK(t, swampjIn(t, dir, []byte(`{"v":2}`), "data", "write", addr), "small write after the full disk")
}

// TestUnwritableCatalogWriteSucceedsAndRebuildHeals: _catalog.db is a
// directory. The write publishes its version and says the catalog is
// stale (exit 0); recover, a second write and doctor run (doctor reports
// the stale catalog); once the path is fixed a rebuild heals it.
func TestUnwritableCatalogWriteSucceedsAndRebuildHeals(t *testing.T) {
	dir := newRepo(t)
	addr := "command/shell/" + dataModel + "/result"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "first write")
	cat := filepath.Join(dir, ".swamp", "data", "_catalog.db")
	for _, f := range []string{cat, cat + "-wal", cat + "-shm"} {
		_ = os.Remove(f)
	}
	if err := os.Mkdir(cat, 0o755); err != nil {
		t.Fatal(err)
	}
	w := mustOK(t, swampjIn(t, dir, []byte(`{"v":2}`), "data", "write", addr), "write with an unwritable catalog")
	if !strings.Contains(w.stderr, "catalog could not follow") || strings.Contains(w.stderr, "nothing half-written") {
		t.Fatalf("the warning does not say what happened: %s", w.stderr)
	}
	if got := mustOK(t, swampj(t, dir, "data", "get", addr), "data get"); got.stdout != `{"v":2}` {
		t.Fatalf("latest content = %q", got.stdout)
	}
	mustOK(t, swampj(t, dir, "recover"), "recover")
	mustOK(t, swampj(t, dir, "recover", "--rollback"), "recover --rollback")
	mustOK(t, swampjIn(t, dir, []byte(`{"v":3}`), "data", "write", addr), "second write")
	doc := swampj(t, dir, "doctor", "--json")
	if doc.code != 1 || !strings.Contains(doc.stdout, "catalog_stale") {
		t.Fatalf("doctor does not report the stale catalog: %d %s %s", doc.code, doc.stdout, doc.stderr)
	}
	if err := os.Remove(cat); err != nil {
		t.Fatal(err)
	}
	mustOK(t, swampj(t, dir, "catalog", "rebuild", "--confirm"), "rebuild")
	mustOK(t, swampj(t, dir, "doctor"), "doctor after rebuild")
	mustOK(t, swampj(t, dir, "catalog", "verify"), "verify after rebuild")
}
