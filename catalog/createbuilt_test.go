package catalog_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
)

// builtRows is a rebuild's worth of rows: enough for the bulk path (the
// indexes created after the inserts), scrambled creation times so write
// order is not key order, and workflow steps sharing a data name so the
// flags follow swamp-format §3.5's step-scoped groups.
func builtRows() []catalog.Row {
	var all []catalog.Row
	for i := range 1500 {
		r := row("", "aws/ec2/vpc", fmt.Sprintf("m%04d", i/3), "state", int64(i%3+1))
		s := (i * 7919) % 1500
		r.CreatedAt = fmt.Sprintf("2026-08-01T%02d:%02d:%02d.000Z", s/3600, s/60%60, s%60)
		all = append(all, r)
	}
	for v := int64(1); v <= 4; v++ {
		all = append(all, stepRow("", "out", v, "wf", "job", fmt.Sprintf("step-%d", v%2)))
	}
	catalog.MarkLatest(all, false)
	return all
}

// fileFacts is everything of a catalog file a reader could tell apart:
// sqlite_master in rowid order, every row with its rowid, catalog_meta,
// the journal mode and the header settings, and the integrity check.
func fileFacts(t *testing.T, path string) []string {
	t.Helper()
	db := rawDB(t, path)
	defer db.Close()
	out := schemaText(t, path)
	q := func(query string) {
		rs, err := db.Query(query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		defer rs.Close()
		cols, _ := rs.Columns()
		for rs.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(query, " ", vals))
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
	}
	q(`SELECT rowid, * FROM catalog ORDER BY rowid`)
	q(`SELECT key, value FROM catalog_meta ORDER BY key`)
	for _, p := range []string{"journal_mode", "page_size", "auto_vacuum", "encoding", "user_version", "application_id", "integrity_check"} {
		q(`PRAGMA ` + p)
	}
	return out
}

// TestCreateBuiltIsWhatCreateAndRebuildLeave: a catalog built aside holds
// exactly what creating an empty catalog and rebuilding it leaves — the
// same schema text in the same order, the same rows with the same rowids,
// the same meta keys, WAL mode, the same header settings — and nothing is
// left beside it.
func TestCreateBuiltIsWhatCreateAndRebuildLeave(t *testing.T) {
	in := builtRows()

	inPlace := catalogPath(t)
	c := openRW(t, inPlace)
	if _, applied, err := c.Rebuild(ctx, "", in, nil); err != nil || !applied {
		t.Fatalf("Rebuild: %v applied=%v", err, applied)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	aside := catalogPath(t)
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		t.Fatal(err)
	}
	var tm catalog.RebuildTimings
	d, err := catalog.CreateBuilt(ctx, fsx.Real(), aside, "", in, &tm)
	if err != nil {
		t.Fatalf("CreateBuilt: %v", err)
	}
	if len(d.Missing) != len(in) || len(d.Stale)+len(d.FlagsWrong)+len(d.FieldsWrong)+len(d.WrongNamespace) != 0 {
		t.Fatalf("CreateBuilt's diff: %d missing (want %d), %d stale, %d flags, %d fields, %d namespace",
			len(d.Missing), len(in), len(d.Stale), len(d.FlagsWrong), len(d.FieldsWrong), len(d.WrongNamespace))
	}
	if tm.Publish <= 0 || tm.Write <= 0 {
		t.Fatalf("timings not filled: %+v", tm)
	}
	if got := sortedKeys(dirListing(t, filepath.Dir(aside))); strings.Join(got, " ") != "_catalog.db" {
		t.Fatalf("beside the built catalog: %v", got)
	}
	hdr, err := os.ReadFile(aside)
	if err != nil {
		t.Fatal(err)
	}
	if hdr[18] != 2 || hdr[19] != 2 {
		t.Fatalf("header read/write versions %d/%d, want 2/2 (WAL)", hdr[18], hdr[19])
	}

	want, got := fileFacts(t, inPlace), fileFacts(t, aside)
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("built aside differs at fact %d:\n got  %s\n want %s", i, got[i], want[i])
			}
		}
		t.Fatalf("built aside: %d facts, created and rebuilt: %d", len(got), len(want))
	}

	// Opened the ordinary way, it is a populated catalog of these rows.
	c = openRW(t, aside)
	if pop, err := c.Populated(ctx); err != nil || !pop {
		t.Fatalf("Populated: %v %v", pop, err)
	}
	if d, applied, err := c.Rebuild(ctx, "", in, nil); err != nil || applied || !d.Empty() {
		t.Fatalf("a rebuild of the built catalog changes something: %v applied=%v", err, applied)
	}
}

// TestCreateBuiltCutEverywhere cuts CreateBuilt at every operation, as a
// process crash and as a power cut: the catalog's name is absent or names
// the complete catalog (every row, populated) — never an empty, zero-byte
// or half-filled one — and the next read-write Open leaves nothing but
// the catalog in the directory.
func TestCreateBuiltCutEverywhere(t *testing.T) {
	in := builtRows()
	for _, power := range []bool{false, true} {
		t.Run(fmt.Sprintf("power=%v", power), func(t *testing.T) {
			for k := 0; ; k++ {
				path := catalogPath(t)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				fault := fsx.NewFault(fsx.Real()).CrashAfter(k)
				if power {
					fault.TrackDurability()
				}
				if _, err := catalog.CreateBuilt(ctx, fault, path, "", in, nil); err != nil && !fsx.IsCrash(err) {
					t.Fatalf("cut %d: %v", k, err)
				}
				if power {
					if _, err := fault.PowerCut(); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := os.Stat(path); err == nil {
					rc, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{Mode: catalog.ModeReport})
					if err != nil {
						t.Fatalf("cut %d: the catalog's name is there but not a complete catalog: %v (trace %v)", k, err, fault.Trace())
					}
					n, err := rc.CountStamped(ctx, "")
					pop, perr := rc.Populated(ctx)
					rc.Close()
					if err != nil || perr != nil || n != int64(len(in)) || !pop {
						t.Fatalf("cut %d: the catalog's name holds %d rows (want %d), populated %v (%v %v; trace %v)",
							k, n, len(in), pop, err, perr, fault.Trace())
					}
				} else if !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
				c := openRW(t, path)
				c.Close()
				if got := sortedKeys(dirListing(t, filepath.Dir(path))); strings.Join(got, " ") != "_catalog.db _catalog.db-shm _catalog.db-wal" {
					t.Fatalf("cut %d: after a read-write Open the directory holds %v", k, got)
				}
				if !fault.Crashed() {
					t.Logf("%d cut points", k)
					return
				}
			}
		})
	}
}

// TestCreateBuiltLeavesAnExistingCatalogAlone: with a catalog at the name
// (swamp created one meanwhile), CreateBuilt changes nothing, says so with
// fs.ErrExist, and leaves no temp behind.
func TestCreateBuiltLeavesAnExistingCatalogAlone(t *testing.T) {
	path := catalogPath(t)
	c := openRW(t, path)
	if err := c.UpsertNewVersion(ctx, row("", "aws/ec2/vpc", "swamps", "own", 1)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.CreateBuilt(ctx, fsx.Real(), path, "", builtRows(), nil); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateBuilt over an existing catalog: %v, want fs.ErrExist", err)
	}
	if got := sortedKeys(dirListing(t, filepath.Dir(path))); strings.Join(got, " ") != "_catalog.db _catalog.db-shm _catalog.db-wal" {
		t.Fatalf("beside the catalog: %v", got)
	}
	if after, err := os.ReadFile(path); err != nil || string(after) != string(before) {
		t.Fatalf("CreateBuilt changed the existing catalog (%v)", err)
	}
}

// TestOpenNoCreate: with Options.NoCreate a read-write Open creates no
// catalog: a missing one is reported missing, a damaged one is moved aside
// (the error says what moved) and not replaced.
func TestOpenNoCreate(t *testing.T) {
	path := catalogPath(t)
	var missing *catalog.MissingError
	if _, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{NoCreate: true}); !errors.As(err, &missing) || missing.MovedAside != nil {
		t.Fatalf("Open(NoCreate) of a missing catalog: %v, want *MissingError without a move", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(NoCreate) created the catalog: %v", err)
	}

	for _, damage := range []struct {
		name string
		data []byte
	}{
		{"not sqlite", []byte("this is not a database, and it is long enough to have a header")},
		{"sqlite header, garbage after", append([]byte("SQLite format 3\x00"), make([]byte, 4080)...)},
	} {
		t.Run(damage.name, func(t *testing.T) {
			path := catalogPath(t)
			writeFile(t, path, damage.data)
			_, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{NoCreate: true})
			if !errors.As(err, &missing) || missing.MovedAside == nil || len(missing.MovedAside.Files) == 0 {
				t.Fatalf("Open(NoCreate) of a damaged catalog: %v, want *MissingError saying what moved", err)
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Open(NoCreate) left or created a catalog at the name: %v", err)
			}
			moved, _ := filepath.Glob(path + ".corrupt-*")
			if len(moved) == 0 {
				t.Fatal("nothing moved aside")
			}
		})
	}
}
