package main

import (
	"os/exec"
	"testing"
	"time"
)

// BenchmarkRecoverCleanVsVersion measures `swampj recover` on a repo with no
// journal against `swampj --version` in the same run, alternating the two so
// machine noise hits both alike. Target: ratio < 1.2.
func BenchmarkRecoverCleanVsVersion(b *testing.B) {
	dir := b.TempDir()
	if err := exec.Command("sh", "-c", "echo 'swampVersion: b' > "+dir+"/.swamp.yaml").Run(); err != nil {
		b.Fatal(err)
	}
	runOnce := func(args ...string) time.Duration {
		cmd := exec.Command(binary, args...)
		cmd.Dir = dir
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v %s", args, err, out)
		}
		return time.Since(start)
	}
	const rounds = 40
	var rec, ver time.Duration
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			ver += runOnce("--version")
			rec += runOnce("recover")
		}
	}
	n := time.Duration(b.N * rounds)
	b.ReportMetric(float64((ver / n).Microseconds()), "version-µs")
	b.ReportMetric(float64((rec / n).Microseconds()), "recover-µs")
	b.ReportMetric(float64(rec)/float64(ver), "ratio")
}
