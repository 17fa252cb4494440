package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkStartupVsBareWrite: `swampj --version` against a whole bare
// durable-write process (testdata/barewrite, the baseline of
// BenchmarkDataWriteProcess: one 64 KiB version, 5 serial flushes), for
// the two builds a user gets: the tagged one production builds (buildTags,
// `just build`) and a plain `go build`, which is what `go run` and
// `go install` give. The three processes alternate so machine noise hits
// all alike. --version does nothing but start and exit, so it is what
// every command pays before its own work. Medians, not means: the bare
// write's flushes have a long tail on a shared disk, which would flatter
// the ratio. Target: ≤ 0.8 for both builds.
//
// Then each build runs again under GODEBUG=inittrace=1, and the package
// inits it reports are summed by who brings them (startupPhase): the
// phases say where a build's start-up goes when the target is not met.
// What the inits do not account for (exec, the dynamic loader of the
// plain build, the runtime's own start, main and exit) is the rest.
func BenchmarkStartupVsBareWrite(b *testing.B) {
	dir := b.TempDir()
	built := filepath.Join(dir, "barewrite.built")
	buildBarewrite(b, built)
	plainBuilt := filepath.Join(dir, "swampj-plain.built")
	if out, err := exec.Command("go", "build", "-o", plainBuilt, ".").CombinedOutput(); err != nil {
		b.Fatalf("building swampj without tags: %v %s", err, out)
	}
	// All executables are run as installed copies (written with write(2),
	// as cp and install write them), not as the linker left them: the
	// linker writes its output through a shared mapping, which the page
	// cache seems to keep in small pages until it evicts the file; exec'ing
	// the linker's file took about 11% more CPU than exec'ing a copy
	// (4.17-4.36 against 3.68 ms median, byte-identical files, 300
	// interleaved runs at load 11). An installed binary starts like the copy.
	bare := filepath.Join(dir, "barewrite")
	tagged := filepath.Join(dir, "swampj")
	plain := filepath.Join(dir, "swampj-plain")
	for src, dst := range map[string]string{built: bare, binary: tagged, plainBuilt: plain} {
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
	run(tagged, "--version")
	run(plain, "--version")
	const rounds = 100
	var version, versionPlain, base []time.Duration
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			n++
			base = append(base, run(bare, itemDir, strconv.Itoa(n), payload))
			version = append(version, run(tagged, "--version"))
			versionPlain = append(versionPlain, run(plain, "--version"))
		}
	}
	b.StopTimer()
	v, vp, w := medianDuration(version), medianDuration(versionPlain), medianDuration(base)
	b.ReportMetric(float64(v.Microseconds()), "version-µs")
	b.ReportMetric(float64(vp.Microseconds()), "version-plain-µs")
	b.ReportMetric(float64(w.Microseconds()), "bare-process-µs")
	b.ReportMetric(float64(v)/float64(w), "version/bare(target≤0.8)")
	b.ReportMetric(float64(vp)/float64(w), "version-plain/bare(target≤0.8)")
	for _, build := range []struct {
		prefix, path string
		whole        time.Duration
	}{{"tagged", tagged, v}, {"plain", plain, vp}} {
		phases, err := initPhases(build.path, dir, 20)
		if err != nil {
			b.Fatal(err)
		}
		var inits time.Duration
		for _, p := range startupPhases {
			b.ReportMetric(float64(phases[p].Microseconds()), build.prefix+"-init-"+p+"-µs")
			inits += phases[p]
		}
		b.ReportMetric(float64(max(build.whole-inits, 0).Microseconds()), build.prefix+"-rest-µs")
	}
}

// medianDuration of d; d is left as it was.
func medianDuration(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// startupPhases are the groups startupPhase sorts package inits into.
var startupPhases = []string{"aws", "sqlite", "mandoc", "swampj", "other"}

// startupPhase names who brings package pkg into swampj's binary, as
// inittrace spells its path: the AWS SDK (none since the bucket clients
// moved to swampj-bucket; kept so that a regression shows), modernc's
// SQLite with what it imports, urfave/cli's Markdown man page renderer
// (linked unless urfave_cli_no_docs is set), swampj's own packages, and
// the rest (the standard library, yaml, urfave/cli itself, bbolt).
func startupPhase(pkg string) string {
	switch {
	case strings.HasPrefix(pkg, "github.com/aws/"):
		return "aws"
	case strings.HasPrefix(pkg, "modernc.org/"), strings.HasPrefix(pkg, "github.com/google/uuid"),
		strings.HasPrefix(pkg, "github.com/remyoudompheng/"), strings.HasPrefix(pkg, "github.com/ncruces/"):
		return "sqlite"
	case strings.HasPrefix(pkg, "github.com/russross/blackfriday"), strings.HasPrefix(pkg, "github.com/cpuguy83/go-md2man"):
		return "mandoc"
	case strings.HasPrefix(pkg, "github.com/swampj/"), pkg == "main":
		return "swampj"
	}
	return "other"
}

// initPhases runs `bin --version` times times under GODEBUG=inittrace=1
// and returns, per startupPhase, the median over the runs of the clock
// time its package inits took.
func initPhases(bin, dir string, times int) (map[string]time.Duration, error) {
	per := map[string][]time.Duration{}
	for i := 0; i < times; i++ {
		cmd := exec.Command(bin, "--version")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return nil, err
		}
		sums := parseInitTrace(stderr.Bytes())
		for _, p := range startupPhases {
			per[p] = append(per[p], sums[p])
		}
	}
	out := map[string]time.Duration{}
	for p, d := range per {
		out[p] = medianDuration(d)
	}
	return out, nil
}

// parseInitTrace sums inittrace's lines ("init PKG @T ms, C ms clock,
// B bytes, A allocs") by startupPhase; other lines (the command's own
// output) are skipped.
func parseInitTrace(trace []byte) map[string]time.Duration {
	sums := map[string]time.Duration{}
	sc := bufio.NewScanner(bytes.NewReader(trace))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 7 || f[0] != "init" || f[6] != "clock," {
			continue
		}
		ms, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			continue
		}
		sums[startupPhase(f[1])] += time.Duration(ms * float64(time.Millisecond))
	}
	return sums
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

// TestInitPhasesOfTaggedBuild: the start-up phases of the benchmark come
// from the real binary's inittrace: every init line is counted in one
// phase, swampj's and SQLite's inits are seen, and the tagged build has no
// man page renderer to init.
func TestInitPhasesOfTaggedBuild(t *testing.T) {
	cmd := exec.Command(binary, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatal(err, stderr.String())
	}
	phases := parseInitTrace(append(stdout.Bytes(), stderr.Bytes()...))
	lines, clock := 0, 0.0
	for _, l := range strings.Split(stderr.String(), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[0] == "init" {
			lines++
			ms, err := strconv.ParseFloat(f[4], 64)
			if err != nil {
				t.Fatalf("inittrace line %q: %v", l, err)
			}
			clock += ms
		}
	}
	if lines < 20 {
		t.Fatalf("%d init lines in the trace:\n%s", lines, stderr.String())
	}
	var sum time.Duration
	for _, p := range startupPhases {
		sum += phases[p]
	}
	if want := time.Duration(clock * float64(time.Millisecond)); sum < want-time.Microsecond*time.Duration(lines) || sum > want+time.Microsecond*time.Duration(lines) {
		t.Errorf("phases sum to %v, the trace's %d inits to %v: %v", sum, lines, want, phases)
	}
	if phases["swampj"] <= 0 || phases["sqlite"] <= 0 {
		t.Errorf("no swampj or SQLite inits counted: %v", phases)
	}
	if phases["mandoc"] != 0 {
		t.Errorf("the tagged build inits the man page renderer (%v): is urfave_cli_no_docs still in buildTags?", phases["mandoc"])
	}
}
