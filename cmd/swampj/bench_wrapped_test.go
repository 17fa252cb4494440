package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/wrapped"
)

// BenchmarkRunWrapperRepoSize: `swampj run -- true` on a repo of 20,000
// items against the same on a repo of 100, in interleaved pairs (small,
// big, big, small), medians of each. The wrapper learns what the command
// changed from its barrier, so nothing it does grows with the repo.
// Metrics: small-ms, big-ms, big/small (target ≤ 1.2).
func BenchmarkRunWrapperRepoSize(b *testing.B) {
	if err := wrapped.Supported(); err != nil {
		b.Skipf("the write barrier cannot run here: %v", err)
	}
	mk := func(items int) string {
		dir := filepath.Join(b.TempDir(), "repo")
		if _, err := example.Synthetic(fsx.Real(), dir, example.SyntheticOptions{Items: items, Versions: 1}); err != nil {
			b.Fatal(err)
		}
		return dir
	}
	small, big := mk(100), mk(20000)
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1) on PATH")
	}
	once := func(dir string) float64 {
		cmd := exec.Command(binary, "run", "--", truePath)
		cmd.Dir = dir
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("swampj run -- true: %v %s", err, out)
		}
		return float64(time.Since(start).Microseconds()) / 1000
	}
	once(small) // warm the page cache and the binary
	once(big)
	var s, g []float64
	for i := 0; i < b.N; i++ {
		for r := 0; r < 10; r++ {
			s = append(s, once(small))
			g = append(g, once(big), once(big))
			s = append(s, once(small))
		}
	}
	b.ReportMetric(medianOf(s), "small-ms")
	b.ReportMetric(medianOf(g), "big-ms")
	b.ReportMetric(medianOf(g)/medianOf(s), "big/small")
}

// BenchmarkRunWrappedMethodRun (SWAMP_BIN): swamp's `model method run`
// under `swampj run` against the same run plain, in at least 10
// interleaved pairs, medians of each: what the write barrier (a syncfs
// before each of swamp's renames, deletes and fsyncs under the datastore),
// the run record and the doctor of what changed cost a real command.
// Metrics: plain-ms, wrapped-ms, wrapped/plain (target ≤ 1.10).
func BenchmarkRunWrappedMethodRun(b *testing.B) {
	bin := os.Getenv("SWAMP_BIN")
	if bin == "" {
		b.Skip("SWAMP_BIN is not set: the method-run cost needs the real swamp")
	}
	if err := wrapped.Supported(); err != nil {
		b.Skipf("the write barrier cannot run here: %v", err)
	}
	dir := b.TempDir()
	run := func(name string, args ...string) float64 {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v %s", name, args, err, out)
		}
		return float64(time.Since(start).Microseconds()) / 1000
	}
	run(bin, "init")
	run(bin, "model", "create", "command/shell", "m1")
	method := []string{"model", "method", "run", "m1", "execute", "--input", "run=echo hi"}
	run(bin, method...)
	var plain, wrappedRuns []float64
	for i := 0; i < b.N; i++ {
		for r := 0; r < 5; r++ {
			plain = append(plain, run(bin, method...))
			wrappedRuns = append(wrappedRuns, run(binary, append([]string{"run", "--", bin}, method...)...),
				run(binary, append([]string{"run", "--", bin}, method...)...))
			plain = append(plain, run(bin, method...))
		}
	}
	b.ReportMetric(medianOf(plain), "plain-ms")
	b.ReportMetric(medianOf(wrappedRuns), "wrapped-ms")
	b.ReportMetric(medianOf(wrappedRuns)/medianOf(plain), "wrapped/plain")
}
