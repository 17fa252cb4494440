package catalog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
)

// A new catalog is built under a temp name and linked in complete: cut at
// every operation of an Open that has to create it (no catalog; a torn one
// moved aside first), as a process crash and as a power cut, the catalog's
// name is absent or names a complete catalog (schema, never zero bytes),
// the next Open moves nothing aside, and once it is closed only the
// catalog (and what was moved aside) is left in the directory.
func TestFreshCatalogIsLinkedInComplete(t *testing.T) {
	for _, sc := range []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"missing", func(*testing.T, string) {}},
		{"torn one moved aside", func(t *testing.T, path string) {
			writeFile(t, path, nil)
			writeFile(t, path+"-journal", nil)
		}},
	} {
		for _, power := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/power=%v", sc.name, power), func(t *testing.T) {
				links := 0
				for k := 0; ; k++ {
					path := catalogPath(t)
					sc.setup(t, path)
					fault := fsx.NewFault(fsx.Real()).CrashAfter(k)
					if power {
						fault.TrackDurability()
					}
					c, err := catalog.Open(ctx, fault, path, catalog.Options{})
					if err == nil {
						c.Close()
					} else if !fsx.IsCrash(err) {
						t.Fatalf("cut %d: %v", k, err)
					}
					if power {
						if _, err := fault.PowerCut(); err != nil {
							t.Fatal(err)
						}
					}
					// The torn file itself is at the name until its move
					// aside is done (and, after a power cut, durable).
					movedOriginal, _ := filepath.Glob(path + ".corrupt-*Z")
					if fi, err := os.Stat(path); err == nil && (sc.name == "missing" || len(movedOriginal) > 0) {
						if fi.Size() == 0 {
							t.Fatalf("cut %d: a zero-byte catalog (trace %v)", k, fault.Trace())
						}
						rc, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{Mode: catalog.ModeReport})
						if err != nil {
							t.Fatalf("cut %d: the catalog's name is there but not a complete catalog: %v (trace %v)", k, err, fault.Trace())
						}
						rc.Close()
					}
					c, err = catalog.Open(ctx, fsx.Real(), path, catalog.Options{})
					if err != nil {
						t.Fatalf("cut %d: reopen: %v", k, err)
					}
					if m := c.MovedAside(); m != nil && sc.name == "missing" {
						t.Fatalf("cut %d: reopen moved files aside: %+v", k, m)
					}
					c.Close()
					for name := range dirListing(t, filepath.Dir(path)) {
						if name != "_catalog.db" && !keptSidecar(name) && !strings.HasPrefix(name, "_catalog.db.corrupt-") {
							t.Fatalf("cut %d: %s left beside the catalog", k, name)
						}
					}
					for _, op := range fault.Trace() {
						if op.Kind == "link" && op.N <= k {
							links++
						}
					}
					if !fault.Crashed() {
						if links == 0 {
							t.Fatalf("the catalog was never linked in: %v", fault.Trace())
						}
						t.Logf("%d cut points", k)
						return
					}
				}
			})
		}
	}
}

// The temp catalog of a creator that died is removed by the next
// read-write Open, sidecars included; a live creator's is left alone, and
// an inspection removes nothing.
func TestCreationLeftoversOfDeadProcessesAreRemoved(t *testing.T) {
	path := catalogPath(t)
	dir := filepath.Dir(path)
	dead := 1 << 22
	for fsx.ProcessExists(dead) {
		dead++
	}
	prefix := catalog.CreationPrefix("_catalog.db")
	deadTemp := filepath.Join(dir, fmt.Sprintf("%s%d-0123abcd", prefix, dead))
	liveTemp := filepath.Join(dir, fmt.Sprintf("%s%d-4567ef01", prefix, os.Getppid()))
	for _, p := range []string{deadTemp, deadTemp + "-journal", deadTemp + "-wal", liveTemp} {
		writeFile(t, p, []byte("half a schema"))
	}
	c := openRW(t, path)
	c.Close()
	// A second Open (the catalog exists now) finds nothing more to do.
	c = openRW(t, path)
	c.Close()
	got := sortedKeys(dirListing(t, dir))
	want := []string{filepath.Base(liveTemp), "_catalog.db", "_catalog.db-shm", "_catalog.db-wal"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("directory after Open: %v, want %v", got, want)
	}

	writeFile(t, deadTemp, []byte("left again"))
	rc, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if _, err := os.Stat(deadTemp); err != nil {
		t.Fatalf("an inspection removed a leftover: %v", err)
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("the -wal kept between processes is gone after an inspection: %v", err)
	}
}
