package ops_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
)

// Concurrent writers through the Go API: several goroutines of
// one process, each writing its own item of its own model, as a host
// serving many workflows would. Each call passes no journal and no
// catalog (WriteOptions.Journal nil), so each opens the repo's journal
// itself, as `swampj data write` does: a shared *journal.Journal is not
// safe for concurrent calls (its pending marks are one unguarded map).
//
//	go test ./ops/ -run '^$' -bench 'WriteConcurrent' -benchtime 1x

const (
	concurrentWriters   = 6
	concurrentPerWriter = 10
	concurrentRoundsAPI = 5
)

var concurrentPayload = bytes.Repeat([]byte("swampj-benchmark"), 16<<10/16) // 16 KiB

// concurrentAddr is writer i's item, of model i.
func concurrentAddr(i int) repo.Address {
	return repo.Address{Type: "bench/model", ModelID: fmt.Sprintf("3f9c2b7e-5a1d-4e8f-9b6c-%012d", i), DataName: "result"}
}

// goWide runs writers goroutines at once, goroutine i calling fn(i)
// perWriter times, and returns the wall time until the last one ends.
func goWide(b *testing.B, writers, perWriter int, fn func(i int) error) time.Duration {
	b.Helper()
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
			b.Fatal(err)
		}
	}
	return d
}

func concurrentWrite(fsys fsx.FS, r *repo.Repo, i int) error {
	_, err := write.WriteVersions(context.Background(), r,
		[]write.VersionWrite{{Address: concurrentAddr(i), Content: bytes.NewReader(concurrentPayload)}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: 30 * time.Second, FS: fsys}})
	return err
}

func medianFloat(xs []float64) float64 {
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

// BenchmarkWriteConcurrent6: 6 goroutines at once, each calling
// write.WriteVersions 10 times for its own model (16 KiB versions), against
// the minimal bare durable write (baseline, 5 flushes) from 6 goroutines
// at once, 10 each, each into its own item directory. Rounds alternate
// which goes first; the metrics are medians over the rounds (the ratio the
// median of the rounds' ratios). Target: ratio ≤ 1.5.
func BenchmarkWriteConcurrent6(b *testing.B) {
	r := benchRepo(b)
	concurrentVsBare(b, r, "concurrent/bare(target≤1.5)", func(i int) error { return concurrentWrite(fsx.Real(), r, i) })
}

// concurrentVsBare runs write, 6 goroutines × 10 writes each (goroutine
// i writing concurrentAddr(i), whose item exists), against the bare
// durable writes 6-wide, alternating which goes first, for
// concurrentRoundsAPI rounds per b.N; it checks that every write landed
// and reports the medians, the ratio under the name ratioName.
func concurrentVsBare(b *testing.B, r *repo.Repo, ratioName string, write func(i int) error) {
	bases := make([]*baseline, concurrentWriters)
	for i := range bases {
		bases[i] = newBaseline(b, fsx.Real(), false)
	}
	for i := range concurrentWriters { // items, journal and catalog exist before timing
		if err := write(i); err != nil {
			b.Fatal(err)
		}
	}
	ours := func() time.Duration { return goWide(b, concurrentWriters, concurrentPerWriter, write) }
	bare := func() time.Duration {
		return goWide(b, concurrentWriters, concurrentPerWriter, func(i int) error { return bases[i].write(concurrentPayload) })
	}
	var figs, baseMs, ratios []float64
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for round := range concurrentRoundsAPI {
			var f, base time.Duration
			if round%2 == 0 {
				base, f = bare(), ours()
			} else {
				f, base = ours(), bare()
			}
			figs = append(figs, float64(f.Microseconds())/1000)
			baseMs = append(baseMs, float64(base.Microseconds())/1000)
			ratios = append(ratios, float64(f)/float64(base))
		}
	}
	b.StopTimer()
	// Every write landed: each item's latest is its last version.
	want := strconv.Itoa(1 + b.N*concurrentRoundsAPI*concurrentPerWriter)
	for i := range concurrentWriters {
		a := concurrentAddr(i)
		if got, err := os.ReadFile(filepath.Join(r.ModelDir(a), a.DataName, "latest")); err != nil || string(got) != want {
			b.Fatalf("writer %d: latest %q (%v), want %s", i, got, err, want)
		}
	}
	b.ReportMetric(medianFloat(figs), "concurrent-ms")
	b.ReportMetric(medianFloat(baseMs), "bare-wide-ms")
	b.ReportMetric(medianFloat(ratios), ratioName)
	b.ReportMetric(float64(len(ratios)), "rounds")
}

// BenchmarkHandleConcurrent6 is BenchmarkWriteConcurrent6 through one
// write.Handle shared by the 6 goroutines (the journal and the catalog
// held, intents of waiting writers in one journal commit), against the
// same bare baseline. Target: ratio ≤ 1.2.
func BenchmarkHandleConcurrent6(b *testing.B) {
	r := benchRepo(b)
	h, err := write.Open(context.Background(), r, write.WriteOptions{Common: host.Common{SwampLockTimeout: 30 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	concurrentVsBare(b, r, "concurrent/bare(target≤1.2)", func(i int) error { return handleWrite(h, i) })
}

func handleWrite(h *write.Handle, i int) error {
	_, err := h.WriteVersions(context.Background(), []write.VersionWrite{{Address: concurrentAddr(i), Content: bytes.NewReader(concurrentPayload)}})
	return err
}

// writeFlushes classifies the flushes in a trace of fsx operations as
// BenchmarkWriteFsyncs does: fsyncs of a model directory and of the files
// in it are swamp's lock protocol, the other fsyncs the data path, a
// journal commit (its failpoint) 2 fdatasyncs and a catalog commit 1.
type writeFlushes struct{ data, lock, journal, catalog int }

func countWriteFlushes(trace []fsx.Op, modelDirs map[string]bool, lazy bool) writeFlushes {
	var c writeFlushes
	for _, op := range trace {
		switch op.Kind {
		case "sync", "syncdir":
			if op.Kind == "sync" && strings.HasSuffix(op.Path, "_catalog.db-wal") {
				// A lazy catalog's sync (a write handle's): its commits
				// have no flush of their own.
				c.catalog++
				continue
			}
			if (op.Kind == "syncdir" && modelDirs[op.Path]) || (op.Kind == "sync" && modelDirs[filepath.Dir(op.Path)]) {
				c.lock++
			} else {
				c.data++
			}
		case "failpoint:journal.begin", "failpoint:journal.decide", "failpoint:journal.flush":
			c.journal++
		case "failpoint:" + catalog.FailpointUpsert, "failpoint:" + catalog.FailpointCreate:
			if !lazy {
				c.catalog++
			}
		}
	}
	return c
}

func (c writeFlushes) total() int { return c.data + c.lock + 2*c.journal + c.catalog }

// BenchmarkWriteConcurrentFsyncs counts the flushes per write of
// BenchmarkWriteConcurrent6's load (6 goroutines × 10 writes, each call
// opening the journal itself) on one recording file system: a writer
// that shares another's commit (group commit) would show fewer journal
// commits per write than BenchmarkWriteFsyncs/cli.
func BenchmarkWriteConcurrentFsyncs(b *testing.B) {
	r := benchRepo(b)
	f := fsx.NewFault(fsx.Real())
	modelDirs := map[string]bool{}
	for i := range concurrentWriters {
		modelDirs[r.ModelDir(concurrentAddr(i))] = true
		if err := concurrentWrite(f, r, i); err != nil {
			b.Fatal(err)
		}
	}
	start := len(f.Trace())
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		goWide(b, concurrentWriters, concurrentPerWriter, func(i int) error { return concurrentWrite(f, r, i) })
	}
	b.StopTimer()
	c := countWriteFlushes(f.Trace()[start:], modelDirs, false)
	writes := float64(b.N * concurrentWriters * concurrentPerWriter)
	per := func(n int) float64 { return float64(n) / writes }
	b.ReportMetric(per(c.data), "data-fsyncs/write")
	b.ReportMetric(per(c.lock), "lock-fsyncs/write")
	b.ReportMetric(per(c.journal), "journal-commits/write")
	b.ReportMetric(per(c.catalog), "catalog-commits/write")
	b.ReportMetric(per(c.total()), "flushes/write")
}
