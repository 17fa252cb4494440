package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/store"
)

// Shape of the generated tree: 20 models × 100 items × 5 versions.
const (
	benchModels   = 20
	benchItems    = 100
	benchVersions = 5
)

func benchTree(b *testing.B) string {
	b.Helper()
	root := b.TempDir()
	for m := 0; m < benchModels; m++ {
		for i := 0; i < benchItems; i++ {
			item := filepath.Join(root, "bench", "type", fmt.Sprintf("model-%03d", m), fmt.Sprintf("item-%03d", i))
			for v := int64(1); v <= benchVersions; v++ {
				writeVersion(b, item, v, content(v))
			}
			writeLatest(b, item, benchVersions)
		}
	}
	return root
}

// BenchmarkScan is what catalog rebuild and the doctor do: Walk plus
// ScanItem of every item, default options (no hashing).
func BenchmarkScan(b *testing.B) {
	root := benchTree(b)
	fsys := fsx.Real()
	for b.Loop() {
		n := 0
		err := store.Walk(context.Background(), fsys, root, func(it store.Item) error {
			st, err := store.ScanItem(fsys, it, store.CheckOptions{})
			if err != nil {
				return err
			}
			if st.LatestReadable == nil {
				return fmt.Errorf("%s: %v", it.Key(), st.Problems)
			}
			n += len(st.Versions)
			return nil
		})
		if err != nil || n != benchModels*benchItems*benchVersions {
			b.Fatal(err, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchModels*benchItems*benchVersions), "ns/version")
}

// BenchmarkBareWalk is the floor: list every directory and read every
// metadata.yaml, nothing else.
func BenchmarkBareWalk(b *testing.B) {
	root := benchTree(b)
	fsys := fsx.Real()
	var walk func(dir string) (int, error)
	walk = func(dir string) (int, error) {
		entries, err := fsys.ReadDir(dir)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir():
				k, err := walk(p)
				if err != nil {
					return 0, err
				}
				n += k
			case e.Name() == "metadata.yaml":
				if _, err := fsys.ReadFile(p); err != nil {
					return 0, err
				}
				n++
			}
		}
		return n, nil
	}
	for b.Loop() {
		if n, err := walk(root); err != nil || n != benchModels*benchItems*benchVersions {
			b.Fatal(err, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchModels*benchItems*benchVersions), "ns/version")
}

// BenchmarkScanLargeItem is one item with many versions: ScanItem alone.
func BenchmarkScanLargeItem(b *testing.B) {
	const n = 10000
	item := filepath.Join(b.TempDir(), "result")
	for v := int64(1); v <= n; v++ {
		writeVersion(b, item, v, content(v))
	}
	writeLatest(b, item, n)
	fsys := fsx.Real()
	for b.Loop() {
		st, err := store.ScanItem(fsys, store.Item{Dir: item, DataName: "result"}, store.CheckOptions{})
		if err != nil || len(st.Versions) != n || st.LatestReadable == nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/version")
}
