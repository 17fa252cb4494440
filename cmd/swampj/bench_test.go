package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// BenchmarkRunWrapper measures `swampj run -- true` on a small repo (one
// item) against running `true` bare, alternating. The wrapper's cost is
// its start-up, the recover check, one syncfs of the datastore's file
// system (which waits for whatever else is dirty on it: noisy on a shared
// machine) and a doctor of the items the command changed (none here).
// No target: the figure is reported in the bench table.
func BenchmarkRunWrapper(b *testing.B) {
	dir := b.TempDir()
	if err := exec.Command("sh", "-c", "echo 'swampVersion: b' > "+dir+"/.swamp.yaml").Run(); err != nil {
		b.Fatal(err)
	}
	seed := exec.Command(binary, "data", "write", "command/shell/"+dataModel+"/result")
	seed.Dir, seed.Stdin = dir, strings.NewReader(`{"v":1}`)
	if out, err := seed.CombinedOutput(); err != nil {
		b.Fatalf("seeding the repo: %v %s", err, out)
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1) on PATH")
	}
	runOnce := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v %s", name, args, err, out)
		}
		return time.Since(start)
	}
	const rounds = 20
	var wrapped, bare time.Duration
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			bare += runOnce(truePath)
			wrapped += runOnce(binary, "run", "--", truePath)
		}
	}
	n := time.Duration(b.N * rounds)
	b.ReportMetric(float64((wrapped / n).Microseconds()), "run-µs")
	b.ReportMetric(float64((bare / n).Microseconds()), "true-µs")
	b.ReportMetric(float64(wrapped)/float64(bare), "ratio")
}

// BenchmarkRunWrapperWrite is BenchmarkRunWrapper with a real small
// command: `swampj run -- swampj data write ADDR` against the bare write,
// alternating, on a repo with a journal and a catalog, so the doctor after
// the command scans the item it wrote. Metrics: run-ms, bare-ms, run/bare.
// syncfs waits for every dirty page of the file system, other processes'
// too, so on a busy disk run-ms carries their writes as well.
func BenchmarkRunWrapperWrite(b *testing.B) {
	addr := "command/shell/" + dataModel + "/result"
	dir := b.TempDir()
	if err := exec.Command("sh", "-c", "echo 'swampVersion: b' > "+dir+"/.swamp.yaml").Run(); err != nil {
		b.Fatal(err)
	}
	n := 0
	runOnce := func(args ...string) time.Duration {
		n++
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(`{"n":` + strconv.Itoa(n) + `}`)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v %s", args, err, out)
		}
		return time.Since(start)
	}
	write := []string{binary, "data", "write", addr}
	runOnce(write...) // the journal and the catalog exist before the first timed run
	const rounds = 10
	var run, bare time.Duration
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			bare += runOnce(write...)
			run += runOnce(append([]string{binary, "run", "--"}, write...)...)
		}
	}
	k := float64(b.N * rounds)
	b.ReportMetric(float64(run.Microseconds())/1000/k, "run-ms")
	b.ReportMetric(float64(bare.Microseconds())/1000/k, "bare-ms")
	b.ReportMetric(float64(run)/float64(bare), "run/bare")
}

// BenchmarkDataWriteProcess: one 64 KiB `swampj data write --file` into
// an existing item, whole process (start-up, swamp's lock, journal,
// catalog, exit), against a bare durable-write process
// (testdata/barewrite: the same file work with 5 serial flushes and
// nothing else), alternating the two so machine noise hits both alike.
// Target: ratio ≤ 1.5.
func BenchmarkDataWriteProcess(b *testing.B) {
	dir := b.TempDir()
	bare := filepath.Join(dir, "barewrite")
	buildBarewrite(b, bare)
	repoDir := filepath.Join(dir, "repo")
	itemDir := filepath.Join(dir, "bare-item")
	for _, d := range []string{repoDir, itemDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repoDir, ".swamp.yaml"), []byte("swampVersion: bench\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	payload := filepath.Join(dir, "payload.bin")
	if err := os.WriteFile(payload, bytes.Repeat([]byte("swampj-benchmark"), 64<<10/16), 0o644); err != nil {
		b.Fatal(err)
	}
	const addr = "bench/model/3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c/result"
	run := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Dir = repoDir
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v %s", name, args, err, out)
		}
		return time.Since(start)
	}
	run(binary, "data", "write", addr, "--file", payload) // the item, journal and catalog exist from here on
	const rounds = 20
	var ours, base time.Duration
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			n++
			base += run(bare, itemDir, strconv.Itoa(n), payload)
			ours += run(binary, "data", "write", addr, "--file", payload)
		}
	}
	k := time.Duration(b.N * rounds)
	b.ReportMetric(float64((ours / k).Microseconds()), "write-process-µs")
	b.ReportMetric(float64((base / k).Microseconds()), "bare-process-µs")
	b.ReportMetric(float64(ours)/float64(base), "ratio")
}

// buildBarewrite builds the bare durable-write baseline (testdata/barewrite)
// at path: the baseline of every whole-process write benchmark.
func buildBarewrite(b *testing.B, path string) {
	b.Helper()
	if out, err := exec.Command("go", "build", "-o", path, "./testdata/barewrite").CombinedOutput(); err != nil {
		b.Fatalf("building the baseline: %v %s", err, out)
	}
}
