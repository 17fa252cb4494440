package catalog_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
)

// roMount bind-mounts dir read-only and returns the mount point, or skips
// with a notice where that is not possible (not root, no mount).
func roMount(t *testing.T, dir string) string {
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

// populated writes two rows and closes cleanly (no -wal, no -shm), then,
// with hot, deletes one in a transaction left in the -wal (a crash image:
// the files are copied while the connection is open); keepShm keeps the
// -shm of that image.
func populated(t *testing.T, hot, keepShm bool) string {
	t.Helper()
	path := catalogPath(t)
	c, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for v := int64(1); v <= 2; v++ {
		if err := c.UpsertNewVersion(ctx, row("", "aws/ec2/vpc", "m1", "main", v)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if !hot {
		return path
	}
	db := rawDB(t, path)
	db.SetMaxOpenConns(1)
	mustExec(t, db, `PRAGMA wal_autocheckpoint=0`)
	mustExec(t, db, `DELETE FROM catalog WHERE version = 1`)
	saved := map[string][]byte{}
	for _, suf := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(path + suf)
		if err != nil {
			t.Fatal(err)
		}
		saved[suf] = b
	}
	db.Close()
	for suf, b := range saved {
		if suf == "-shm" && !keepShm {
			os.Remove(path + suf)
			continue
		}
		os.WriteFile(path+suf, b, 0o644)
	}
	return path
}

func reportOn(t *testing.T, path string) (*catalog.Catalog, error) {
	t.Helper()
	mp := roMount(t, filepath.Dir(path))
	return catalog.Open(ctx, fsx.Real(), filepath.Join(mp, filepath.Base(path)), catalog.Options{Mode: catalog.ModeReport})
}

func TestReportModeOnReadOnlyMedia(t *testing.T) {
	for _, tc := range []struct {
		name          string
		hot, keepShm  bool
		rows          int
		immutable     bool
		walUnreadable bool
	}{
		{name: "checkpointed, no sidecars", rows: 2, immutable: true},
		{name: "hot WAL with its -shm", hot: true, keepShm: true, rows: 1},
		{name: "hot WAL without -shm", hot: true, walUnreadable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := populated(t, tc.hot, tc.keepShm)
			before := dirListing(t, filepath.Dir(path))
			c, err := reportOn(t, path)
			var wu *catalog.WALUnreadableError
			switch {
			case tc.walUnreadable:
				if !errors.As(err, &wu) || catalog.ErrorCode(err) != catalog.CodeWALUnreadable ||
					!strings.Contains(err.Error(), "not damaged") || !strings.Contains(err.Error(), "-wal") {
					t.Fatalf("want WALUnreadableError, got %v", err)
				}
			case err != nil:
				t.Fatalf("Open: %v", err)
			default:
				if got := len(rows(t, c, "")); got != tc.rows || c.ReadOnlyMedia() != tc.immutable {
					t.Fatalf("rows %d (want %d), immutable %v", got, tc.rows, c.ReadOnlyMedia())
				}
				c.Close()
			}
			after := dirListing(t, filepath.Dir(path))
			if strings.Join(sortedKeys(before), ",") != strings.Join(sortedKeys(after), ",") {
				t.Fatalf("files changed: %v -> %v", sortedKeys(before), sortedKeys(after))
			}
			for k, v := range before {
				if after[k] != v {
					t.Fatalf("%s changed", k)
				}
			}
		})
	}
}
