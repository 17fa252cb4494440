package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkStartupVsBareWrite: `swampj --version` (the binary as
// production builds it, buildTags, and installs it) against a whole bare
// durable-write process (testdata/barewrite, the baseline of
// BenchmarkDataWriteProcess: one 64 KiB version, 5 serial flushes),
// alternating the two so machine
// noise hits both alike. --version does nothing but start and exit, so it
// is what every command pays before its own work. Medians, not means: the
// bare write's flushes have a long tail on a shared disk, which would
// flatter the ratio. Target: ≤ 0.8.
func BenchmarkStartupVsBareWrite(b *testing.B) {
	dir := b.TempDir()
	built := filepath.Join(dir, "barewrite.built")
	buildBarewrite(b, built)
	// Both executables are run as installed copies (written with write(2),
	// as cp and install write them), not as the linker left them: the
	// linker writes its output through a shared mapping, which the page
	// cache seems to keep in small pages until it evicts the file; exec'ing
	// the linker's file took about 11% more CPU than exec'ing a copy
	// (4.17-4.36 against 3.68 ms median, byte-identical files, 300
	// interleaved runs at load 11). An installed binary starts like the copy.
	bare := filepath.Join(dir, "barewrite")
	swampjBin := filepath.Join(dir, "swampj")
	for src, dst := range map[string]string{built: bare, binary: swampjBin} {
		if err := installCopy(src, dst); err != nil {
			b.Fatal(err)
		}
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
	run(swampjBin, "--version")
	const rounds = 100
	var version, base []time.Duration
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			n++
			base = append(base, run(bare, itemDir, strconv.Itoa(n), payload))
			version = append(version, run(swampjBin, "--version"))
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

// installCopy copies the executable src to dst, as install(1) would.
func installCopy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
