package ops_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/migrate"
)

// TestCrossDeviceRefusedUpFront: a subdirectory on another file system (a
// tmpfs mounted on .swamp/logs) is refused before anything — journal or lock
// file included — is created, with an error that is EXDEV.
func TestCrossDeviceRefusedUpFront(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := migFixture{catalogStamp: "-", manifest: true}.build(t)
	mnt := filepath.Join(dir, ".swamp", "logs")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, 0) })
	before := fsxtest.Snapshot(t, dir, nil)
	_, err := runMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true})
	var xe *migrate.CrossDeviceError
	if !errors.As(err, &xe) || !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("want a cross-device refusal, got %v", err)
	}
	migNoDiff(t, "a refused run must change nothing", before, fsxtest.Snapshot(t, dir, nil))
}
