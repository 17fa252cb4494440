package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkStartupVsBareWrite: `swampj --version` (the binary as
// production builds it, buildTags) against a whole bare durable-write
// process (testdata/barewrite, the baseline of BenchmarkDataWriteProcess:
// one 64 KiB version, 5 serial flushes), alternating the two so machine
// noise hits both alike. --version does nothing but start and exit, so it
// is what every command pays before its own work. Medians, not means: the
// bare write's flushes have a long tail on a shared disk, which would
// flatter the ratio. Target (#23): ≤ 0.8.
func BenchmarkStartupVsBareWrite(b *testing.B) {
	dir := b.TempDir()
	bare := filepath.Join(dir, "barewrite")
	if out, err := exec.Command("go", "build", "-o", bare, "./testdata/barewrite").CombinedOutput(); err != nil {
		b.Fatalf("building the baseline: %v %s", err, out)
	}
	itemDir := filepath.Join(dir, "bare-item")
	if err := os.Mkdir(itemDir, 0o755); err != nil {
		b.Fatal(err)
	}
	payload := filepath.Join(dir, "payload.bin")
	if err := os.WriteFile(payload, make([]byte, 64<<10), 0o644); err != nil {
		b.Fatal(err)
	}
	run := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v %s", name, args, err, out)
		}
		return time.Since(start)
	}
	run(binary, "--version") // the binary's pages are in the page cache from here on
	const rounds = 100
	var version, base []time.Duration
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			n++
			base = append(base, run(bare, itemDir, strconv.Itoa(n), payload))
			version = append(version, run(binary, "--version"))
		}
	}
	// A closure, not a package function: other benchmarks of this package
	// may well name theirs median.
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	v, w := median(version), median(base)
	b.ReportMetric(float64(v.Microseconds()), "version-µs")
	b.ReportMetric(float64(w.Microseconds()), "bare-process-µs")
	b.ReportMetric(float64(v)/float64(w), "version/bare(target≤0.8)")
}
