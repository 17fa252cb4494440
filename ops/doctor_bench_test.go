package ops_test

import (
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/swampj/swampj/cmd/mkswamp/gen"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// hashEveryRaw is the --verify-checksums baseline: the same walk and one
// SHA-256 of every raw, nothing else.
func hashEveryRaw(b *testing.B, fsys fsx.FS, dataRoot string) int {
	n := 0
	buf := make([]byte, 256<<10)
	err := store.Walk(csCtx, fsys, dataRoot, func(it store.Item) error {
		ents, err := fsys.ReadDir(it.Dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			f, err := os.Open(filepath.Join(it.Dir, e.Name(), "raw"))
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.CopyBuffer(h, f, buf)
			f.Close()
			if err != nil {
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

// BenchmarkDoctor measures, in the same run and alternating, over one
// generated tree with its catalog (10,000 items × 10 versions by default;
// SWAMPJ_BENCH_ITEMS / SWAMPJ_BENCH_VERSIONS for a quick run):
//
//   - walk:     every metadata.yaml read once (the catalog benchmark's baseline);
//   - doctor:   `swampj doctor` through the Go API (check mode);
//   - hash:     one SHA-256 of every raw;
//   - checksums: `swampj doctor --verify-checksums`.
//
// Targets (issue #11): doctor/walk ≤ 2, checksums/hash ≤ 1.3.
func BenchmarkDoctor(b *testing.B) {
	items, versions := csBenchSize()
	dir := filepath.Join(b.TempDir(), "repo")
	b.StopTimer()
	st, err := gen.Synthetic(fsx.Real(), dir, gen.SyntheticOptions{Items: items, Versions: versions, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	fsys := fsx.Real()
	if _, err := ops.RebuildCatalog(csCtx, fsys, r, ops.CatalogOptions{Confirm: true}); err != nil {
		b.Fatal(err)
	}
	csBareWalk(b, fsys, r.DataRoot)
	hashEveryRaw(b, fsys, r.DataRoot)

	var walk, doctor, hash, checksums time.Duration
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
		timed(&doctor, func() {
			rep, err := ops.Doctor(csCtx, fsys, r, ops.DoctorOptions{})
			if err != nil || !rep.Clean() || rep.Versions != st.Versions {
				b.Fatalf("doctor: %v %+v", err, rep)
			}
		})
		timed(&hash, func() {
			if n := hashEveryRaw(b, fsys, r.DataRoot); n != st.Versions {
				b.Fatalf("hash read %d raws, want %d", n, st.Versions)
			}
		})
		timed(&checksums, func() {
			rep, err := ops.Doctor(csCtx, fsys, r, ops.DoctorOptions{VerifyChecksum: true})
			if err != nil || !rep.Clean() {
				b.Fatalf("doctor --verify-checksums: %v %+v", err, rep)
			}
		})
	}
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
	b.ReportMetric(float64(st.Versions), "versions")
	b.ReportMetric(ms(walk), "walk-ms")
	b.ReportMetric(ms(doctor), "doctor-ms")
	b.ReportMetric(ms(hash), "hash-ms")
	b.ReportMetric(ms(checksums), "checksums-ms")
	b.ReportMetric(float64(doctor)/float64(walk), "doctor/walk(target≤2)")
	b.ReportMetric(float64(checksums)/float64(hash), "checksums/hash(target≤1.3)")
}
