package ops_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// benchSize is 10,000 items × 10 versions = 100,000 versions, or
// SWAMPJ_BENCH_ITEMS × SWAMPJ_BENCH_VERSIONS for a quick run.
func csBenchSize() (items, versions int) {
	items, versions = 10000, 10
	if n, err := strconv.Atoi(os.Getenv("SWAMPJ_BENCH_ITEMS")); err == nil && n > 0 {
		items = n
	}
	if n, err := strconv.Atoi(os.Getenv("SWAMPJ_BENCH_VERSIONS")); err == nil && n > 0 {
		versions = n
	}
	return items, versions
}

// bareWalk is the baseline: the same walk, and one read of every
// metadata.yaml — the I/O any rebuild must do, with no parsing, no checks
// and no SQLite. It returns the number of files read.
func csBareWalk(b *testing.B, fsys fsx.FS, dataRoot string) int {
	n := 0
	err := store.Walk(csCtx, fsys, dataRoot, func(it store.Item) error {
		ents, err := fsys.ReadDir(it.Dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			if _, err := fsys.ReadFile(filepath.Join(it.Dir, e.Name(), "metadata.yaml")); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func csRemoveCatalog(b *testing.B, r *repo.Repo) {
	for _, suf := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(r.CatalogPath + suf); err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
	}
}

// BenchmarkCatalogRebuild measures, in the same run and alternating so that
// machine noise hits all alike, over one generated tree:
//
//   - walk:     bareWalk (every metadata.yaml read once);
//   - rebuild:  `catalog rebuild --confirm` through the Go API into an empty
//     catalog (the file is removed before each round, untimed): walk, scan,
//     rows, diff, and every row inserted in one transaction;
//   - rebuild1: the same with one scanning worker (as sequential as the
//     baseline);
//   - rebuild-populated: the same on the catalog the rebuild left (in sync:
//     walk, scan, every row read and compared, nothing written);
//   - verify:   `catalog verify` of the catalog the rebuild left.
//
// The phases of the rebuild from empty (catalogsync.Timings) are reported
// too, each per round, so the table says where the time goes; and the
// flushes of one rebuild (fsx's fsyncs plus one per synced SQLite commit).
// From empty the catalog is built aside (catalog.CreateBuilt): its commits
// are not synced, the one fsync of the finished file is fsx's, and
// phase-publish is its WAL switch, close, fsync and link.
//
// Targets: rebuild/walk ≤ 2.5, rebuild-populated/walk ≤ 2 and
// verify/rebuild ≤ 1.
func BenchmarkCatalogRebuild(b *testing.B) {
	items, versions := csBenchSize()
	dir := filepath.Join(b.TempDir(), "repo")
	b.StopTimer()
	st, err := example.Synthetic(fsx.Real(), dir, example.SyntheticOptions{Items: items, Versions: versions, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	fsys := fsx.Real()
	csBareWalk(b, fsys, r.DataRoot) // warm the page cache for every contender

	var walk, rebuild, rebuild1, populated, verify time.Duration
	var phases, popPhases catalogsync.Timings
	timed := func(d *time.Duration, fn func()) {
		b.StartTimer()
		start := time.Now()
		fn()
		*d += time.Since(start)
		b.StopTimer()
	}
	for i := 0; i < b.N; i++ {
		timed(&walk, func() {
			if n := csBareWalk(b, fsys, r.DataRoot); n != st.Versions {
				b.Fatalf("walk read %d files, want %d", n, st.Versions)
			}
		})
		for _, c := range []struct {
			d       *time.Duration
			workers int
		}{{&rebuild1, 1}, {&rebuild, 0}} {
			csRemoveCatalog(b, r)
			timed(c.d, func() {
				rep, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsys}, Confirm: true, Workers: c.workers})
				if err != nil || !rep.Applied || rep.Counts.RowsMissing != st.Versions {
					b.Fatalf("rebuild: %v %+v", err, rep)
				}
				if c.workers == 0 {
					addTimings(&phases, rep.Timings)
				}
			})
		}
		timed(&populated, func() {
			rep, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsys}, Confirm: true})
			if err != nil || rep.Applied || !rep.InSync || rep.Counts.ExpectedRows != st.Versions {
				b.Fatalf("rebuild of a populated catalog: %v %+v", err, rep)
			}
			addTimings(&popPhases, rep.Timings)
		})
		timed(&verify, func() {
			rep, err := catalogsync.Verify(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsys}})
			if err != nil || !rep.InSync || rep.Counts.ExpectedRows != st.Versions {
				b.Fatalf("verify: %v %+v", err, rep)
			}
		})
	}
	// The flushes of one rebuild from empty, counted apart (untimed).
	csRemoveCatalog(b, r)
	counter := fsx.NewFault(fsx.Real())
	if _, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: counter}, Confirm: true}); err != nil {
		b.Fatal(err)
	}
	flushes := 0
	building := false // inside a catalog built aside: created, not yet linked in
	for _, op := range counter.Trace() {
		switch {
		case op.Kind == "create" && strings.HasPrefix(filepath.Base(op.Path), catalog.CreationPrefix(filepath.Base(r.CatalogPath))):
			building = true
		case op.Kind == "link" && op.To == r.CatalogPath:
			building = false
		}
		switch {
		case op.Kind == "sync" || op.Kind == "syncdir":
			flushes++
		case strings.HasPrefix(op.Kind, "failpoint:catalog.") && !building:
			flushes++ // a SQLite commit: one fsync of the WAL (synchronous=FULL)
		case strings.HasPrefix(op.Kind, "failpoint:journal."):
			flushes += 2 // a bbolt commit: two fdatasyncs
		}
	}

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(float64(st.Versions), "versions")
	b.ReportMetric(ms(walk), "walk-ms")
	b.ReportMetric(ms(rebuild), "rebuild-ms")
	b.ReportMetric(ms(rebuild1), "rebuild-1worker-ms")
	b.ReportMetric(ms(populated), "rebuild-populated-ms")
	b.ReportMetric(ms(verify), "verify-ms")
	b.ReportMetric(float64(rebuild)/float64(walk), "rebuild/walk")
	b.ReportMetric(float64(rebuild1)/float64(walk), "rebuild-1worker/walk")
	b.ReportMetric(float64(populated)/float64(walk), "rebuild-populated/walk")
	b.ReportMetric(float64(verify)/float64(rebuild), "verify/rebuild")
	b.ReportMetric(float64(flushes), "rebuild-fsyncs")
	for _, p := range []struct {
		name string
		d    time.Duration
	}{
		{"lock", phases.Lock}, {"open", phases.Open}, {"scan", phases.Scan}, {"other", phases.Other},
		{"read", phases.Read}, {"diff", phases.Diff}, {"insert", phases.Write}, {"indexes", phases.Indexes},
		{"commit", phases.Commit}, {"publish", phases.Publish}, {"close", phases.Close},
	} {
		b.ReportMetric(ms(p.d), "phase-"+p.name+"-ms")
	}
	for _, p := range []struct {
		name string
		d    time.Duration
	}{
		{"open", popPhases.Open}, {"scan", popPhases.Scan}, {"other", popPhases.Other},
		{"read", popPhases.Read}, {"diff", popPhases.Diff}, {"close", popPhases.Close},
	} {
		b.ReportMetric(ms(p.d), "populated-phase-"+p.name+"-ms")
	}
	b.Logf("target: rebuild/walk ≤ 2.5 and rebuild-populated/walk ≤ 2; verify/rebuild ≤ 1")
}

// addTimings adds one rebuild's phases to sum.
func addTimings(sum *catalogsync.Timings, t *catalogsync.Timings) {
	if t == nil {
		return
	}
	sum.Lock += t.Lock
	sum.Open += t.Open
	sum.Scan += t.Scan
	sum.Other += t.Other
	sum.Read += t.Read
	sum.Diff += t.Diff
	sum.Write += t.Write
	sum.Indexes += t.Indexes
	sum.Commit += t.Commit
	sum.Publish += t.Publish
	sum.Close += t.Close
}
