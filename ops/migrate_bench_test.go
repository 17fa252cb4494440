package ops_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/migrate"
)

// BenchmarkMigrate measures `migrate --confirm` (Go API, real disk, real
// journal and catalog) on a synthetic default-layout datastore against a
// bare directory walk (filepath.WalkDir) of the same tree, in the same run
// and alternating, so the page cache and machine noise treat both alike.
//
//	ratio      migrate time / walk time (target ≤ 1.5)
//	dirFsyncs  directory fsyncs of one migration: it must not grow with
//	           the number of files, so it is reported for two tree sizes
//
// Each iteration migrates forward (timed) and back (untimed), so every
// iteration starts from the same tree. Run with
//
//	go test ./ops/ -run '^$' -bench Migrate -benchtime 5x
func BenchmarkMigrate(b *testing.B) {
	for _, items := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("items=%d", items), func(b *testing.B) { benchMigrate(b, items) })
	}
}

// migBenchTree writes items data items (latest + 3 versions of raw and
// metadata.yaml: 7 files in one item directory each), one output run of two
// files and one workflow-run file per item: 10 files per item, 100,000 for
// 10,000 items.
func migBenchTree(b *testing.B, dir string, items int) int {
	write := func(rel, content string) error {
		p := filepath.Join(dir, ".swamp", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(content), 0o644)
	}
	item := func(i int) error {
		dir := fmt.Sprintf("data/command/shell/model-%03d/item-%05d", i%100, i)
		for v := 1; v <= 3; v++ {
			if err := write(fmt.Sprintf("%s/%d/raw", dir, v), fmt.Sprintf("payload %d of %d\n", v, i)); err != nil {
				return err
			}
			if err := write(fmt.Sprintf("%s/%d/metadata.yaml", dir, v), fmt.Sprintf("version: %d\n", v)); err != nil {
				return err
			}
		}
		for rel, content := range map[string]string{
			dir + "/latest": "3",
			fmt.Sprintf("outputs/run-%05d/output.json", i):              `{"exitCode":0}`,
			fmt.Sprintf("outputs/run-%05d/log.txt", i):                  "ok\n",
			fmt.Sprintf("workflow-runs/wf-%02d/run-%05d.yaml", i%50, i): "status: done\n",
		} {
			if err := write(rel, content); err != nil {
				return err
			}
		}
		return nil
	}
	// Writing 100,000 files is most of the benchmark's wall time: spread it.
	const writers = 4
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func(w int) {
			for i := w; i < items; i += writers {
				if err := item(i); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < writers; w++ {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	return items * 10
}

func benchMigrate(b *testing.B, items int) {
	b.StopTimer()
	dir := b.TempDir()
	migFixture{catalogStamp: "", manifest: true, extra: map[string]string{}}.buildAt(b, dir)
	// Replace the small fixture's data by the synthetic tree.
	for _, sub := range []string{"data/command", "outputs", "workflow-runs", "audit"} {
		if err := os.RemoveAll(filepath.Join(dir, ".swamp", sub)); err != nil {
			b.Fatal(err)
		}
	}
	files := migBenchTree(b, dir, items)
	base := filepath.Join(dir, ".swamp")

	var walkTime, migrateTime time.Duration
	var fsyncs int
	b.StartTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		start := time.Now()
		entries := 0
		if err := filepath.WalkDir(base, func(string, fs.DirEntry, error) error { entries++; return nil }); err != nil {
			b.Fatal(err)
		}
		walkTime += time.Since(start)
		b.StartTimer()

		start = time.Now()
		res, err := runMigrate(b, dir, nil, migrate.MigrateOptions{Confirm: true})
		migrateTime += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if got := res.Completed.TotalFiles; got != int64(files) {
			b.Fatalf("migrated %d files, the tree has %d", got, files)
		}
		fsyncs = res.Completed.DirFsyncs

		b.StopTimer()
		if _, err := runMigrate(b, dir, nil, migrate.MigrateOptions{Reverse: true, Confirm: true}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(files), "files")
	b.ReportMetric(float64(fsyncs), "dirFsyncs")
	b.ReportMetric(float64(walkTime.Microseconds())/float64(b.N)/1000, "walk-ms")
	b.ReportMetric(float64(migrateTime.Microseconds())/float64(b.N)/1000, "migrate-ms")
	b.ReportMetric(float64(migrateTime)/float64(walkTime), "ratio")
}
