package catalog_test

import (
	"context"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
)

// A lazy catalog's commit is in the catalog at once, for every reader,
// and lost to a power cut until Sync; Close syncs what is left. The power
// cut is fsx's model (powercut_sqlite.go), told of every commit by the
// catalog itself; the rows are read back by a fresh open.
func TestLazyCommitsAreDurableOnlyAfterSync(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		sync     bool // Sync after the second row
		close    bool // a clean Close before the cut
		wantRows int
	}{
		{"cut before any sync", false, false, 1},
		{"cut after a sync", true, false, 2},
		{"cut after close", false, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := catalogPath(t)
			c0 := openRW(t, path)
			if err := c0.UpsertNewVersion(ctx, row("", "t/x", "m1", "d", 1)); err != nil {
				t.Fatal(err)
			}
			if err := c0.Close(); err != nil {
				t.Fatal(err)
			}
			f := fsx.NewFault(fsx.Real()).TrackDurability()
			c, err := catalog.Open(ctx, f, path, catalog.Options{Lazy: true})
			if err != nil {
				t.Fatal(err)
			}
			if !c.Lazy() {
				t.Fatal("a catalog opened with Lazy says it is not")
			}
			p, err := c.PrepareUpsertVersions(ctx, []catalog.Row{row("", "t/x", "m1", "d", 2)})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Commit(); err != nil {
				t.Fatal(err)
			}
			if got := len(rows(t, c, "")); got != 2 {
				t.Fatalf("%d rows seen after the lazy commit, want 2", got)
			}
			if tc.sync {
				if err := c.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			if tc.close {
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.sync && !tc.close {
				if got := f.UnsyncedSQLite(); len(got) != 1 || got[0] != c.Path() {
					t.Fatalf("unsynced databases %v, want the catalog", got)
				}
			}
			f.CrashAfter(f.Ops()) // the power fails: nothing more reaches the disk
			_ = c.Close()
			if _, err := f.PowerCut(); err != nil {
				t.Fatal(err)
			}
			after := openRW(t, path)
			defer after.Close()
			if got := len(rows(t, after, "")); got != tc.wantRows {
				t.Fatalf("%d rows after the power cut, want %d", got, tc.wantRows)
			}
		})
	}
}
