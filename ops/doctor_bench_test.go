package ops_test

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// The baselines run on as many workers as the doctor does (GOMAXPROCS, on
// the real file system): the walk goes on in one goroutine while workers
// read the items it finds, which is how the doctor scans. A sequential
// baseline against a parallel doctor would credit the doctor with the
// machine's second core instead of with its own work.

// parallelItems walks dataRoot and calls fn for every item on
// GOMAXPROCS workers; it returns the sum of fn's counts.
func parallelItems(b *testing.B, fsys fsx.FS, dataRoot string, fn func(it store.Item) (int, error)) int {
	var (
		total atomic.Int64
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
		jobs  = make(chan store.Item, 256)
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for it := range jobs {
				n, err := fn(it)
				if err != nil {
					errMu.Lock()
					first = cmp.Or(first, err)
					errMu.Unlock()
				}
				total.Add(int64(n))
			}
		})
	}
	err := store.Walk(csCtx, fsys, dataRoot, func(it store.Item) error {
		jobs <- it
		return nil
	})
	close(jobs)
	wg.Wait()
	if err = cmp.Or(err, first); err != nil {
		b.Fatal(err)
	}
	return int(total.Load())
}

// readEveryMetadata is the doctor's baseline: the same walk, one listing of
// every item and one read of every metadata.yaml — the I/O any check of
// the versions must do, with no parsing and no catalog.
func readEveryMetadata(b *testing.B, fsys fsx.FS, dataRoot string) int {
	return parallelItems(b, fsys, dataRoot, func(it store.Item) (int, error) {
		ents, err := fsys.ReadDir(it.Dir)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			if _, err := fsys.ReadFile(filepath.Join(it.Dir, e.Name(), "metadata.yaml")); err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	})
}

// hashEveryRaw is the --verify-checksums baseline: the same walk and one
// SHA-256 of every raw, nothing else, with the plainest fast loop (one
// buffer per worker, one hash state reset per file).
func hashEveryRaw(b *testing.B, fsys fsx.FS, dataRoot string) int {
	var pool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}
	return parallelItems(b, fsys, dataRoot, func(it store.Item) (int, error) {
		ents, err := fsys.ReadDir(it.Dir)
		if err != nil {
			return 0, err
		}
		bufp := pool.Get().(*[]byte)
		defer pool.Put(bufp)
		buf := *bufp
		h := sha256.New()
		n := 0
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			f, err := fsys.Open(filepath.Join(it.Dir, e.Name(), "raw"))
			if err != nil {
				return n, err
			}
			h.Reset()
			_, err = io.CopyBuffer(h, struct{ io.Reader }{f}, buf)
			f.Close()
			if err != nil {
				return n, err
			}
			h.Sum(nil)
			n++
		}
		return n, nil
	})
}

// readMetadataHashRaw is the second --verify-checksums baseline: per
// version, one read of metadata.yaml (where the expected checksum is) and
// one SHA-256 of raw, the same walk and workers. It is the least any
// verifier of these checksums can do on a tree: on the benchmark's tree
// (59-byte raws) the metadata read costs about as much as the hash, so
// this loop is itself about twice hashEveryRaw. Nothing is parsed or
// compared.
func readMetadataHashRaw(b *testing.B, fsys fsx.FS, dataRoot string) int {
	var pool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}
	return parallelItems(b, fsys, dataRoot, func(it store.Item) (int, error) {
		ents, err := fsys.ReadDir(it.Dir)
		if err != nil {
			return 0, err
		}
		bufp := pool.Get().(*[]byte)
		defer pool.Put(bufp)
		buf := *bufp
		h := sha256.New()
		n := 0
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			dir := filepath.Join(it.Dir, e.Name())
			if _, err := fsys.ReadFile(filepath.Join(dir, "metadata.yaml")); err != nil {
				return n, err
			}
			f, err := fsys.Open(filepath.Join(dir, "raw"))
			if err != nil {
				return n, err
			}
			h.Reset()
			_, err = io.CopyBuffer(h, struct{ io.Reader }{f}, buf)
			f.Close()
			if err != nil {
				return n, err
			}
			h.Sum(nil)
			n++
		}
		return n, nil
	})
}

// BenchmarkDoctor measures, in the same run and alternating, over one
// generated tree with its catalog (10,000 items × 10 versions by default;
// SWAMPJ_BENCH_ITEMS / SWAMPJ_BENCH_VERSIONS for a quick run):
//
//   - walk:     every item listed and every metadata.yaml read once, on as
//     many workers as the doctor uses (readEveryMetadata);
//   - doctor:   `swampj doctor` through the Go API (check mode);
//   - hash:     one SHA-256 of every raw, on as many workers (hashEveryRaw);
//   - mdhash:   one read of every metadata.yaml and one SHA-256 of every
//     raw (readMetadataHashRaw), the least a checksum verifier can do;
//   - checksums: `swampj doctor --verify-checksums`.
//
// Targets (on this tree of 59-byte raws): doctor/walk ≤ 2,
// checksums/mdhash ≤ 1.5; checksums/hash has no target here (the metadata
// reads are half of any verifier's work on raws this small), its target
// ≤ 1.3 is BenchmarkDoctorRaw256KiB's, where hashing dominates.
func BenchmarkDoctor(b *testing.B) {
	items, versions := csBenchSize()
	benchDoctor(b, items, versions, 0, "checksums/mdhash(target≤1.5)", "checksums/hash")
}

// BenchmarkDoctorRaw256KiB is BenchmarkDoctor on a tree whose raws are
// 256 KiB each (200 items × 10 versions, 500 MiB, by default;
// SWAMPJ_BENCH_RAW256_VERSIONS sets the versions, 10 per item), where
// hashing dominates. Target: checksums/hash ≤ 1.3.
func BenchmarkDoctorRaw256KiB(b *testing.B) {
	versions := 2000
	if n, err := strconv.Atoi(os.Getenv("SWAMPJ_BENCH_RAW256_VERSIONS")); err == nil && n > 0 {
		versions = n
	}
	benchDoctor(b, max(versions/10, 1), 10, 256<<10, "checksums/mdhash", "checksums/hash(target≤1.3)")
}

// benchDoctor generates the tree (rawSize > 0: every raw rewritten to that
// size, its metadata's size and checksum with it), builds its catalog and
// measures; mdhashRatio and hashRatio name the two --verify-checksums
// ratios, a target in the name of the one that has it.
func benchDoctor(b *testing.B, items, versions, rawSize int, mdhashRatio, hashRatio string) {
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
	if rawSize > 0 {
		growRaws(b, fsys, r.DataRoot, rawSize)
	}
	if _, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsys}, Confirm: true}); err != nil {
		b.Fatal(err)
	}
	readEveryMetadata(b, fsys, r.DataRoot)
	hashEveryRaw(b, fsys, r.DataRoot)
	readMetadataHashRaw(b, fsys, r.DataRoot)

	var walk, doctorTook, hash, mdhash, checksums time.Duration
	timed := func(d *time.Duration, fn func()) {
		b.StartTimer()
		start := time.Now()
		fn()
		*d += time.Since(start)
		b.StopTimer()
	}
	for i := 0; i < b.N; i++ {
		timed(&walk, func() {
			if n := readEveryMetadata(b, fsys, r.DataRoot); n != st.Versions {
				b.Fatalf("walk read %d files, want %d", n, st.Versions)
			}
		})
		timed(&doctorTook, func() {
			rep, err := doctor.Run(csCtx, r, doctor.Options{Common: host.Common{FS: fsys}})
			if err != nil || !rep.Clean() || rep.Versions != st.Versions {
				b.Fatalf("doctor: %v %+v", err, rep)
			}
		})
		timed(&hash, func() {
			if n := hashEveryRaw(b, fsys, r.DataRoot); n != st.Versions {
				b.Fatalf("hash read %d raws, want %d", n, st.Versions)
			}
		})
		timed(&mdhash, func() {
			if n := readMetadataHashRaw(b, fsys, r.DataRoot); n != st.Versions {
				b.Fatalf("metadata and hash read %d versions, want %d", n, st.Versions)
			}
		})
		timed(&checksums, func() {
			rep, err := doctor.Run(csCtx, r, doctor.Options{Common: host.Common{FS: fsys}, VerifyChecksum: true})
			if err != nil || !rep.Clean() {
				b.Fatalf("doctor --verify-checksums: %v %+v", err, rep)
			}
		})
	}
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
	b.ReportMetric(float64(st.Versions), "versions")
	b.ReportMetric(ms(walk), "walk-ms")
	b.ReportMetric(ms(doctorTook), "doctor-ms")
	b.ReportMetric(ms(hash), "hash-ms")
	b.ReportMetric(ms(mdhash), "mdhash-ms")
	b.ReportMetric(ms(checksums), "checksums-ms")
	b.ReportMetric(float64(doctorTook)/float64(walk), "doctor/walk(target≤2)")
	b.ReportMetric(float64(checksums)/float64(hash), hashRatio)
	b.ReportMetric(float64(checksums)/float64(mdhash), mdhashRatio)
	b.ReportMetric(float64(mdhash)/float64(hash), "mdhash/hash")
	if rawSize > 0 {
		b.ReportMetric(float64(rawSize), "raw-bytes")
	}
}

// growRaws rewrites every version's raw under dataRoot to size bytes
// (distinct per version) and its metadata.yaml's size and checksum to
// match, so the tree stays clean for the doctor.
func growRaws(b *testing.B, fsys fsx.FS, dataRoot string, size int) {
	buf := make([]byte, size)
	err := store.Walk(csCtx, fsys, dataRoot, func(it store.Item) error {
		ents, err := fsys.ReadDir(it.Dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			vdir := filepath.Join(it.Dir, e.Name())
			mdPath := filepath.Join(vdir, "metadata.yaml")
			data, err := fsys.ReadFile(mdPath)
			if err != nil {
				return err
			}
			m, err := meta.Decode(data)
			if err != nil {
				return err
			}
			p := pattern{i: byte(len(vdir))}
			p.Read(buf)
			copy(buf, vdir) // distinct content per version
			sum := sha256.Sum256(buf)
			n := int64(size)
			m.Size, m.Checksum = &n, hex.EncodeToString(sum[:])
			if data, err = meta.Encode(m); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(vdir, "raw"), buf, 0o644); err != nil {
				return err
			}
			if err := os.WriteFile(mdPath, data, 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
