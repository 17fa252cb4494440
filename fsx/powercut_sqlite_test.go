package fsx_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/swampj/swampj/fsx"
)

// The model's bookkeeping on plain files standing in for a database and
// its log: a power cut puts back what the files held at the first unsynced
// commit since the last sync, and removes the -shm; a sync in between
// makes everything so far stay.
func TestPowerCutLosesUnsyncedSQLiteCommits(t *testing.T) {
	write := func(t *testing.T, p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(t *testing.T, p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	for _, tc := range []struct {
		name        string
		syncBetween bool
		wantDB      string
		wantWAL     string
	}{
		{"lost", false, "db0", "wal0"},
		{"synced", true, "db1", "wal2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "_catalog.db")
			write(t, db, "db0")
			write(t, db+"-wal", "wal0")
			write(t, db+"-shm", "shm")
			f := fsx.NewFault(fsx.Real()).TrackDurability()
			fsx.NoteSQLiteUnsynced(f, db)
			write(t, db+"-wal", "wal1")
			write(t, db, "db1")
			if tc.syncBetween {
				fsx.NoteSQLiteSynced(f, db)
			}
			fsx.NoteSQLiteUnsynced(f, db) // a second commit: the first copy stands
			write(t, db+"-wal", "wal2")
			if tc.syncBetween {
				fsx.NoteSQLiteSynced(f, db)
			}
			want := 0
			if !tc.syncBetween {
				want = 1
			}
			if got := len(f.UnsyncedSQLite()); got != want {
				t.Fatalf("%d databases with unsynced commits, want %d", got, want)
			}
			gone, err := f.PowerCut()
			if err != nil {
				t.Fatal(err)
			}
			if len(gone) != want {
				t.Fatalf("power cut reported %q", gone)
			}
			if got := read(t, db); got != tc.wantDB {
				t.Errorf("database holds %q, want %q", got, tc.wantDB)
			}
			if got := read(t, db+"-wal"); got != tc.wantWAL {
				t.Errorf("-wal holds %q, want %q", got, tc.wantWAL)
			}
			_, err = os.Stat(db + "-shm")
			if removed := os.IsNotExist(err); removed != !tc.syncBetween {
				t.Errorf("-shm removed: %v, want %v", removed, !tc.syncBetween)
			}
		})
	}
}

// Without the model (a Fault not tracking durability, or the real disk)
// the notes change nothing.
func TestSQLiteNotesWithoutTheModel(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	fsx.NoteSQLiteUnsynced(fsx.Real(), db)
	f := fsx.NewFault(fsx.Real())
	fsx.NoteSQLiteUnsynced(f, db)
	if got := f.UnsyncedSQLite(); got != nil {
		t.Fatalf("a Fault without TrackDurability keeps %v", got)
	}
}
