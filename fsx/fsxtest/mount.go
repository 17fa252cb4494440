package fsxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ReadOnlyMount bind-mounts dir read-only and returns the mount point, or
// skips with a notice where that is not possible (not root, no mount): the
// real EROFS of read-only media, for the tests of every package.
func ReadOnlyMount(t *testing.T, dir string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a read-only bind mount; skipped")
	}
	mp := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "--bind", dir, mp).CombinedOutput(); err != nil {
		t.Skipf("mount --bind unavailable (%v: %s); skipped", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mp).Run() })
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", mp).CombinedOutput(); err != nil {
		t.Skipf("read-only remount unavailable (%v: %s); skipped", err, out)
	}
	return mp
}
