package ops_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
)

// Benchmarks of the versioned write against the bare durable file work it
// cannot avoid. They run on the default temp directory (a real disk: fsync
// latency is what is measured), each ratio measured in the same run.
//
//	go test ./ops/ -run '^$' -bench Write -benchtime 100x
//
// Each iteration adds a version to the same item, so the item directory
// a write lists to allocate its number grows with -benchtime (the
// baselines do not list): compare runs with the same -benchtime.

var benchPayload = bytes.Repeat([]byte("swampj-benchmark"), 64<<10/16) // 64 KiB

func benchRepo(b testing.TB) *repo.Repo {
	b.Helper()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("swampVersion: bench\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// baseline is the durable file work of one version and nothing else — no
// journal, no catalog, no lock — in two layouts:
//
//   - min: the layout swampj itself uses, the least a crash-safe version
//     can cost (5 flushes): raw and metadata.yaml each written and fsynced
//     in a new directory, that directory fsynced, renamed into place,
//     `latest` replaced through a fsynced temp file, the item directory
//     fsynced;
//   - recipe: swamp's own write path (swamp-format §2.6.2: mkdir N, then metadata.yaml,
//     raw and `latest` each by atomic write) made durable file by file with
//     the recipe of design §2.2 (7 flushes: each temp file, the
//     directory after each rename, the item directory after the mkdir).
type baseline struct {
	fsys   fsx.FS
	dir    string
	n      int
	md     []byte
	recipe bool
}

func newBaseline(b testing.TB, fsys fsx.FS, recipe bool) *baseline {
	dir := filepath.Join(b.TempDir(), "item")
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return &baseline{fsys: fsys, dir: dir, md: bytes.Repeat([]byte("m"), 420), recipe: recipe}
}

func (bl *baseline) write(payload []byte) error {
	bl.n++
	if bl.recipe {
		vdir := filepath.Join(bl.dir, strconv.Itoa(bl.n))
		if err := fsx.MkdirDurable(bl.fsys, vdir, 0o755); err != nil {
			return err
		}
		if err := fsx.WriteFileAtomic(bl.fsys, filepath.Join(vdir, "metadata.yaml"), bl.md, 0o644); err != nil {
			return err
		}
		if _, _, err := fsx.WriteStreamAtomic(bl.fsys, filepath.Join(vdir, "raw"), bytes.NewReader(payload), 0o644, nil); err != nil {
			return err
		}
		return fsx.WriteFileAtomic(bl.fsys, filepath.Join(bl.dir, "latest"), []byte(strconv.Itoa(bl.n)), 0o644)
	}
	stage := filepath.Join(bl.dir, ".stage-"+strconv.Itoa(bl.n))
	if err := bl.fsys.Mkdir(stage, 0o755); err != nil {
		return err
	}
	if _, err := fsx.WriteNew(bl.fsys, filepath.Join(stage, "raw"), bytes.NewReader(payload), 0o644, nil); err != nil {
		return err
	}
	if _, err := fsx.WriteNew(bl.fsys, filepath.Join(stage, "metadata.yaml"), bytes.NewReader(bl.md), 0o644, nil); err != nil {
		return err
	}
	if err := bl.fsys.SyncDir(stage); err != nil {
		return err
	}
	if err := bl.fsys.Rename(stage, filepath.Join(bl.dir, strconv.Itoa(bl.n))); err != nil {
		return err
	}
	tmp := filepath.Join(bl.dir, ".latest.tmp")
	if _, err := fsx.WriteNew(bl.fsys, tmp, strings.NewReader(strconv.Itoa(bl.n)), 0o644, nil); err != nil {
		return err
	}
	if err := bl.fsys.Rename(tmp, filepath.Join(bl.dir, "latest")); err != nil {
		return err
	}
	return bl.fsys.SyncDir(bl.dir)
}

// library holds the journal and the catalog open across writes, as a
// long-lived tool does (completion marks then ride the next commit).
type library struct {
	r   *repo.Repo
	j   *journal.Journal
	cat *catalogsync.Handle
}

func openLibrary(b testing.TB, r *repo.Repo, fsys fsx.FS) *library {
	j, err := journal.Open(fsys, r.JournalPath, journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	l := &library{r: r, j: j, cat: catalogsync.OpenHandle(fsys, r.Dir)}
	b.Cleanup(func() { l.cat.Close(); j.Close() })
	return l
}

func (l *library) opts() write.WriteOptions {
	return write.WriteOptions{Common: host.Common{SwampLockTimeout: 5 * time.Second}, Journal: l.j, Catalog: l.cat}
}

// benchWriter is one 64 KiB write of benchAddr in a mode: "lib" lends
// the journal and the catalog, "handle" writes through a write.Handle,
// "cli" opens and closes them per write.
// benchWriter returns one write of mode and what ends the writer (a held
// handle's Close, with its last catalog sync and done marks; nothing for
// the others). The end runs at cleanup if the caller does not run it.
func benchWriter(b testing.TB, mode string, r *repo.Repo, fsys fsx.FS) (writeOne func(context.Context) error, end func()) {
	opts := write.WriteOptions{Common: host.Common{SwampLockTimeout: 5 * time.Second}}
	switch mode {
	case "lib":
		opts = openLibrary(b, r, fsys).opts()
		opts.FS = fsys
	case "handle":
		opts.FS = fsys
		h, err := write.Open(context.Background(), r, opts)
		if err != nil {
			b.Fatal(err)
		}
		end := func() {
			if err := h.Close(); err != nil {
				b.Error(err)
			}
		}
		b.Cleanup(end)
		return func(ctx context.Context) error {
			_, err := h.WriteVersions(ctx, []write.VersionWrite{{Address: benchAddr, Content: bytes.NewReader(benchPayload)}})
			return err
		}, end
	}
	opts.FS = fsys
	return func(ctx context.Context) error {
		_, err := write.WriteVersions(ctx, r, []write.VersionWrite{{Address: benchAddr, Content: bytes.NewReader(benchPayload)}}, opts)
		return err
	}, func() {}
}

var benchAddr = repo.Address{Type: "bench/model", ModelID: "3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c", DataName: "result"}

// BenchmarkWrite64KiB: one 64 KiB version per call, against both
// baselines, interleaved so all three see the same disk. "lib" holds the
// journal and the catalog open; "cli" opens and closes them per write, as
// `swampj data write` does. Target: lib ratio-min ≤ 1.0.
//
// serial-flush-depth is the median, over the writes, of the longest chain
// of flushes that ran one after another (each started after the previous
// ended; timingFS and the executor's flush observer); the minimal
// baseline's is 5 by construction, reported as measured the same way.
func BenchmarkWrite64KiB(b *testing.B) {
	for _, mode := range []string{"lib", "handle", "cli"} {
		b.Run(mode, func(b *testing.B) {
			r := benchRepo(b)
			flushes := &flushLog{}
			defer flushes.observeFlushes()()
			tfs := timingFS{log: flushes}
			minimal, recipe := newBaseline(b, tfs, false), newBaseline(b, fsx.Real(), true)
			ctx := context.Background()
			writeOne, _ := benchWriter(b, mode, r, tfs)
			var ours, baseMin, baseRecipe time.Duration
			var depths, baseDepths []int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				flushes.take()
				t0 := time.Now()
				if err := minimal.write(benchPayload); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				baseDepths = append(baseDepths, serialDepth(flushes.take()))
				if err := recipe.write(benchPayload); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if err := writeOne(ctx); err != nil {
					b.Fatal(err)
				}
				ours += time.Since(t2)
				depths = append(depths, serialDepth(flushes.take()))
				baseMin += t1.Sub(t0)
				baseRecipe += t2.Sub(t1)
			}
			b.ReportMetric(median(depths), "serial-flush-depth")
			b.ReportMetric(median(baseDepths), "baseline-min-serial-flush-depth")
			b.ReportMetric(float64(ours.Microseconds())/float64(b.N), "µs/write")
			b.ReportMetric(float64(baseMin.Microseconds())/float64(b.N), "µs/baseline-min")
			b.ReportMetric(float64(baseRecipe.Microseconds())/float64(b.N), "µs/baseline-recipe")
			b.ReportMetric(float64(ours)/float64(baseMin), "ratio-min")
			b.ReportMetric(float64(ours)/float64(baseRecipe), "ratio-recipe")
		})
	}
}

// BenchmarkWriteBatch100: 100 versions (64 KiB each, over 4 items) in one
// intent, per version, against the baseline per version. Target: ≤ 1.15.
func BenchmarkWriteBatch100(b *testing.B) {
	r := benchRepo(b)
	minimal, recipe := newBaseline(b, fsx.Real(), false), newBaseline(b, fsx.Real(), true)
	opts := openLibrary(b, r, fsx.Real()).opts()
	ctx := context.Background()
	writes := make([]write.VersionWrite, 100)
	var ours, base, baseRecipe time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		for k := 0; k < 100; k++ {
			if err := minimal.write(benchPayload); err != nil {
				b.Fatal(err)
			}
		}
		tr := time.Now()
		for k := 0; k < 100; k++ {
			if err := recipe.write(benchPayload); err != nil {
				b.Fatal(err)
			}
		}
		baseRecipe += time.Since(tr)
		t1 := time.Now()
		base += tr.Sub(t0)
		for k := range writes {
			a := benchAddr
			a.DataName = fmt.Sprintf("item-%d", k%4)
			writes[k] = write.VersionWrite{Address: a, Content: bytes.NewReader(benchPayload)}
		}
		res, err := write.WriteVersions(ctx, r, writes, opts)
		if err != nil || len(res) != 100 {
			b.Fatal(err)
		}
		ours += time.Since(t1)
	}
	n := float64(b.N * 100)
	b.ReportMetric(float64(ours.Microseconds())/n, "µs/version")
	b.ReportMetric(float64(base.Microseconds())/n, "µs/baseline-min-version")
	b.ReportMetric(float64(baseRecipe.Microseconds())/n, "µs/baseline-recipe-version")
	b.ReportMetric(float64(ours)/float64(base), "ratio-min")
	b.ReportMetric(float64(ours)/float64(baseRecipe), "ratio-recipe")
}

// BenchmarkWriteFsyncs counts the flushes of one write (fsx records every
// fsync of a file and of a directory; journal and catalog commits are
// counted at their failpoints): swamp's lock protocol, the data path, and
// the commits. A bbolt commit is 2 fdatasyncs, a SQLite WAL commit
// (synchronous=FULL) 1 fsync.
func BenchmarkWriteFsyncs(b *testing.B) {
	for _, mode := range []string{"lib", "handle", "cli"} {
		b.Run(mode, func(b *testing.B) {
			r := benchRepo(b)
			f := fsx.NewFault(fsx.Real())
			writeOne, end := benchWriter(b, mode, r, f)
			// One write first, so every measured write is into an existing
			// item of an existing repo (journal and catalog created).
			if err := writeOne(context.Background()); err != nil {
				b.Fatal(err)
			}
			start := len(f.Trace())
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := writeOne(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// A handle is closed inside the count: its last catalog sync
			// and done marks belong to the writes.
			end()
			c := countWriteFlushes(f.Trace()[start:], map[string]bool{r.ModelDir(benchAddr): true}, mode == "handle")
			per := func(n int) float64 { return float64(n) / float64(b.N) }
			b.ReportMetric(per(c.data), "data-fsyncs/write")
			b.ReportMetric(per(c.lock), "lock-fsyncs/write")
			b.ReportMetric(per(c.journal), "journal-commits/write")
			b.ReportMetric(per(c.catalog), "catalog-commits/write")
			b.ReportMetric(per(c.total()), "flushes/write")
		})
	}
}

// pattern is an endless cheap byte stream.
type pattern struct{ i byte }

func (p *pattern) Read(b []byte) (int, error) {
	for k := range b {
		b[k] = p.i
		p.i = p.i*31 + 7
	}
	return len(b), nil
}

// onlyReader hides every method but Read (a generator, as stdin would be).
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(b []byte) (int, error) { return o.r.Read(b) }

// TestWrite1GiBStreamsInBoundedMemory writes a 1 GiB version from a
// generator (never a file: the write must not need one) and checks that
// the process never held it: peak HeapInuse and peak Sys stay under 64 MiB.
func TestWrite1GiBStreamsInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and fsyncs 1 GiB (about 5-10 s); skipped with -short")
	}
	const size = 1 << 30
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("swampVersion: test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	// The expected checksum, from the same generator (streamed too).
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(&pattern{}, size)); err != nil {
		t.Fatal(err)
	}
	want := hex.EncodeToString(h.Sum(nil))

	runtime.GC()
	var peakHeap, peakSys uint64
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peakHeap, peakSys = max(peakHeap, ms.HeapInuse), max(peakSys, ms.Sys)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	res, err := write.WriteVersions(context.Background(), r, []write.VersionWrite{{Address: benchAddr, Content: onlyReader{io.LimitReader(&pattern{}, size)}}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: 5 * time.Second}})
	elapsed := time.Since(start)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	md := res[0].Metadata
	if *md.Size != size || md.Checksum != want {
		t.Fatalf("wrote %d bytes with sha256 %s, want %d and %s", *md.Size, md.Checksum, size, want)
	}
	if fi, err := os.Stat(filepath.Join(res[0].Dir, "raw")); err != nil || fi.Size() != size {
		t.Fatalf("raw on disk: %v %v", fi, err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("1 GiB written in %s (%.0f MiB/s); peak HeapInuse %.1f MiB, peak Sys %.1f MiB",
		elapsed.Round(time.Millisecond), float64(size)/(1<<20)/elapsed.Seconds(), float64(peakHeap)/(1<<20), float64(peakSys)/(1<<20))
	if peakHeap >= 64<<20 || peakSys >= 64<<20 {
		t.Fatalf("peak memory too high: HeapInuse %d, Sys %d (limit 64 MiB)", peakHeap, peakSys)
	}
}
