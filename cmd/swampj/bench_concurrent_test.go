package main

// Concurrent writers as whole processes: what `swamp serve`
// with scheduled workflows does to a datastore, many writers of different
// models at once. Each benchmark alternates its figure and its baseline in
// one process, several rounds, and reports the medians; the ratio is the
// median of the rounds' ratios, so a noisy round moves it little.
//
//	go test ./cmd/swampj -run '^$' -bench 'Concurrent' -benchtime 1x

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// concurrentRounds is how many alternating figure/baseline pairs one
// iteration measures.
const concurrentRounds = 5

// concurrentRig is a repo with one item per writer, each of its own model
// (the address form, as BenchmarkDataWriteProcess writes), a 16 KiB
// payload, and the bare durable-write program with an item directory per
// writer.
type concurrentRig struct {
	b       *testing.B
	repo    string
	payload string
	bare    string
	addrs   []string // writer i's item, of model i
	bareDir []string // writer i's item directory for barewrite
	bareN   []int    // the last version barewrite wrote there
	written []int    // writer i's versions written by swampj
}

func newConcurrentRig(b *testing.B, writers int) *concurrentRig {
	b.Helper()
	dir := b.TempDir()
	rig := &concurrentRig{b: b, repo: filepath.Join(dir, "repo"), payload: filepath.Join(dir, "payload.bin"), bare: filepath.Join(dir, "barewrite")}
	buildBarewrite(b, rig.bare)

	if err := os.Mkdir(rig.repo, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rig.repo, ".swamp.yaml"), []byte("swampVersion: bench\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(rig.payload, bytes.Repeat([]byte("swampj-benchmark"), 16<<10/16), 0o644); err != nil {
		b.Fatal(err)
	}
	for i := range writers {
		rig.addrs = append(rig.addrs, fmt.Sprintf("command/shell/3f9c2b7e-5a1d-4e8f-9b6c-%012d/result", i))
		d := filepath.Join(dir, fmt.Sprintf("bare-item-%d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
		rig.bareDir = append(rig.bareDir, d)
		rig.bareN = append(rig.bareN, 0)
		rig.written = append(rig.written, 0)
	}
	// Every item, the journal and the catalog exist before the first
	// timed write, as on a datastore in use.
	for i := range writers {
		if err := rig.write(i); err != nil {
			b.Fatal(err)
		}
	}
	return rig
}

// write runs one `swampj data write` of writer i's item.
func (rig *concurrentRig) write(i int) error {
	cmd := exec.Command(binary, "data", "write", rig.addrs[i], "--file", rig.payload)
	cmd.Dir = rig.repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("swampj data write %s: %v %s", rig.addrs[i], err, out)
	}
	rig.written[i]++ // only writer i's goroutine touches written[i]
	return nil
}

// check fails the benchmark unless every write landed: each item's latest
// is the number of versions written to it.
func (rig *concurrentRig) check() {
	rig.b.Helper()
	for i, a := range rig.addrs {
		got, err := os.ReadFile(filepath.Join(rig.repo, ".swamp", "data", filepath.FromSlash(a), "latest"))
		if want := strconv.Itoa(rig.written[i]); err != nil || string(got) != want {
			rig.b.Fatalf("%s: latest %q (%v), want %s", a, got, err, want)
		}
	}
}

// bareWrite runs one barewrite process into writer i's item directory.
func (rig *concurrentRig) bareWrite(i int) error {
	rig.bareN[i]++ // only writer i's goroutine touches bareN[i]
	cmd := exec.Command(rig.bare, rig.bareDir[i], strconv.Itoa(rig.bareN[i]), rig.payload)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("barewrite: %v %s", err, out)
	}
	return nil
}

// wide runs writers goroutines at once, writer i calling fn(i) perWriter
// times one after another, and returns the wall time until the last ends.
func (rig *concurrentRig) wide(writers, perWriter int, fn func(i int) error) time.Duration {
	rig.b.Helper()
	var wg sync.WaitGroup
	errs := make([]error, writers)
	start := time.Now()
	for i := range writers {
		wg.Go(func() {
			for range perWriter {
				if err := fn(i); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	for _, err := range errs {
		if err != nil {
			rig.b.Fatal(err)
		}
	}
	return d
}

// pairs runs rounds of figure and baseline, alternating which goes first,
// and reports their medians (ms) and the median of the rounds' ratios.
func pairs(b *testing.B, figureName, baseName, ratioName string, figure, baseline func() time.Duration) {
	b.Helper()
	var figs, bases, ratios []float64
	for i := 0; i < b.N; i++ {
		for r := range concurrentRounds {
			var f, base time.Duration
			if r%2 == 0 {
				base, f = baseline(), figure()
			} else {
				f, base = figure(), baseline()
			}
			figs = append(figs, float64(f.Microseconds())/1000)
			bases = append(bases, float64(base.Microseconds())/1000)
			ratios = append(ratios, float64(f)/float64(base))
		}
	}
	b.ReportMetric(medianOf(figs), figureName)
	b.ReportMetric(medianOf(bases), baseName)
	b.ReportMetric(medianOf(ratios), ratioName)
	b.ReportMetric(float64(len(ratios)), "rounds")
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkConcurrentDataWrite6: 6 `swampj data write` processes at once,
// each writing 10 versions (16 KiB) of its own item of its own model, one
// repo, against the same 60 bare durable writes run 6-wide (6 barewrite
// processes at once, 10 each, each into its own item directory). Wall time
// until the last writer ends. Target: ratio ≤ 1.5.
func BenchmarkConcurrentDataWrite6(b *testing.B) {
	const writers, perWriter = 6, 10
	rig := newConcurrentRig(b, writers)
	b.ResetTimer()
	pairs(b, "concurrent-ms", "bare-wide-ms", "concurrent/bare(target≤1.5)",
		func() time.Duration { return rig.wide(writers, perWriter, rig.write) },
		func() time.Duration { return rig.wide(writers, perWriter, rig.bareWrite) })
	rig.check()
}

// BenchmarkConcurrentDataWrite2: 2 `swampj data write` processes at once,
// of different models, 10 writes each, against the same 20 writes by
// swampj one after another (writer 0's 10, then writer 1's). Writers that
// share no lock should overlap: target ratio ≤ 0.7.
func BenchmarkConcurrentDataWrite2(b *testing.B) {
	const writers, perWriter = 2, 10
	rig := newConcurrentRig(b, writers)
	b.ResetTimer()
	pairs(b, "concurrent-ms", "serial-ms", "concurrent/serial(target≤0.7)",
		func() time.Duration { return rig.wide(writers, perWriter, rig.write) },
		func() time.Duration {
			var d time.Duration
			for i := range writers {
				d += rig.wide(1, perWriter, func(int) error { return rig.write(i) })
			}
			return d
		})
	rig.check()
}
