package catalog_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
)

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
	if err := c.CloseWAL(); err != nil {
		t.Fatal(err)
	}
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
	mp := fsxtest.ReadOnlyMount(t, filepath.Dir(path))
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
