package ops_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
)

// Whole-process benchmarks on repos with a populated catalog:
// the real binary, built once per run, against a baseline measured in the
// same run and alternating with it.
//
//	go test ./ops/ -run '^$' -bench 'MigrateWithCatalog|OneItemCatalogSize' -benchtime 1x
//
// SWAMPJ_BENCH_MIGRATE_VERSIONS (comma-separated) overrides the sizes of
// BenchmarkMigrateWithCatalog (default 50000,120000); SWAMPJ_BENCH_BIG_ROWS
// the large catalog of BenchmarkOneItemCatalogSize (default 100000).
// SWAMPJ_BENCH_BIN runs a prebuilt binary instead (an older build, for a
// before/after comparison).

var (
	benchBinOnce sync.Once
	benchBin     string
	benchBinErr  error
)

// swampjBinary builds cmd/swampj once per test binary run.
func swampjBinary(b *testing.B) string {
	benchBinOnce.Do(func() {
		if p := os.Getenv("SWAMPJ_BENCH_BIN"); p != "" {
			benchBin = p
			return
		}
		dir, err := os.MkdirTemp("", "swampj-bench-bin-")
		if err != nil {
			benchBinErr = err
			return
		}
		benchBin = filepath.Join(dir, "swampj")
		cmd := exec.Command("go", "build", "-tags", "urfave_cli_no_docs,netgo,osusergo", "-o", benchBin, "./cmd/swampj") // the production build (justfile)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			benchBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if benchBinErr != nil {
		b.Fatal(benchBinErr)
	}
	return benchBin
}

// procRun runs the binary in dir and returns its wall time. env adds
// variables; killed reports a process that died of SIGKILL (a kill point).
func procRun(b *testing.B, dir string, env []string, args ...string) (d time.Duration, out []byte, killed bool) {
	b.Helper()
	cmd := exec.Command(swampjBinary(b), append([]string{"--repo", dir}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	d = time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return d, stdout.Bytes(), true
		}
	}
	if err != nil {
		b.Fatalf("swampj %v: %v\n%s%s", args, err, stdout.Bytes(), stderr.Bytes())
	}
	return d, stdout.Bytes(), false
}

// procWalk is the baseline: a bare filepath.WalkDir of the whole .swamp tree.
func procWalk(b *testing.B, dir string) (time.Duration, int) {
	start := time.Now()
	n := 0
	if err := filepath.WalkDir(filepath.Join(dir, ".swamp"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			n++
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return time.Since(start), n
}

// procStatWalk is the baseline for migrations: the
// same walk with one lstat of every file, the least a migration that
// reports the bytes it moved (swamp's totalBytes) must do.
func procStatWalk(b *testing.B, dir string) time.Duration {
	start := time.Now()
	if err := filepath.WalkDir(filepath.Join(dir, ".swamp"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, err = d.Info()
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// populatedRepo writes a synthetic repo (cmd/mkswamp's generator) of
// versions versions, 10 per item, with its catalog built by a rebuild.
func populatedRepo(b *testing.B, dir string, versions int) *repo.Repo {
	b.Helper()
	fsys := fsx.Real()
	items := versions / 10
	if items < 1 {
		items = 1
	}
	if _, err := example.Synthetic(fsys, dir, example.SyntheticOptions{Items: items, Versions: versions / items, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	r, err := repo.Load(fsys, dir, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	if rep, err := catalogsync.Rebuild(csCtx, r, catalogsync.Options{Common: host.Common{FS: fsys}, Confirm: true}); err != nil || !rep.Applied {
		b.Fatalf("building the catalog: %v", err)
	}
	return r
}

// stampCount is the number of catalog rows stamped ns.
func stampCount(b *testing.B, r *repo.Repo, ns string) int64 {
	b.Helper()
	c, err := catalog.Open(csCtx, fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	n, err := c.CountStamped(csCtx, ns)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkMigrateWithCatalog: `namespace migrate --confirm`, its reverse,
// `unset --migrate --confirm`, and `recover` of a migration killed at its
// catalog commit, each as a whole process on a repo whose catalog holds a
// row per version, against two bare walks of the same tree measured right
// before each of them: one that stats every file (procStatWalk) and one
// that does not (procWalk). Target: every op/statwalk ≤ 1.5,
// at 50,000 and at 120,000 versions; op/walk is the stat-free row.
func BenchmarkMigrateWithCatalog(b *testing.B) {
	sizes := []int{50_000, 120_000}
	if s := os.Getenv("SWAMPJ_BENCH_MIGRATE_VERSIONS"); s != "" {
		sizes = nil
		for _, f := range bytes.Split([]byte(s), []byte(",")) {
			n, err := strconv.Atoi(string(f))
			if err != nil || n <= 0 {
				b.Fatalf("SWAMPJ_BENCH_MIGRATE_VERSIONS=%q", s)
			}
			sizes = append(sizes, n)
		}
	}
	for _, v := range sizes {
		b.Run(fmt.Sprintf("versions=%d", v), func(b *testing.B) { benchMigrateWithCatalog(b, v) })
	}
}

func benchMigrateWithCatalog(b *testing.B, versions int) {
	b.StopTimer()
	dir := filepath.Join(b.TempDir(), "repo")
	r := populatedRepo(b, dir, versions)
	procRun(b, dir, nil, "datastore", "namespace", "set", "ns1")
	if n := stampCount(b, r, ""); n != int64(versions) {
		b.Fatalf("%d rows stamped \"\", want %d", n, versions)
	}

	ops := []string{"migrate", "reverse", "unset", "recover"}
	walks := map[string]time.Duration{}
	statWalks := map[string]time.Duration{}
	times := map[string]time.Duration{}
	files := 0
	// timed measures the walks, then the command, so all meet the same
	// page cache and the same neighbours.
	timed := func(op string, env []string, args ...string) []byte {
		w, n := procWalk(b, dir)
		files = n
		statWalks[op] += procStatWalk(b, dir)
		b.StartTimer()
		d, out, killed := procRun(b, dir, env, args...)
		b.StopTimer()
		if killed {
			b.Fatalf("%s: killed", op)
		}
		walks[op] += w
		times[op] += d
		return out
	}
	fsyncs := map[string]int{}
	checkRestamped := func(op string, out []byte) {
		var res struct {
			CatalogRestamped bool   `json:"catalogRestamped"`
			CatalogStale     string `json:"catalogStale"`
			DirFsyncs        int    `json:"dirFsyncs"`
		}
		if err := json.Unmarshal(out, &res); err != nil || !res.CatalogRestamped || res.CatalogStale != "" {
			b.Fatalf("%s: catalog not restamped: %v %s", op, err, out)
		}
		fsyncs[op] = res.DirFsyncs
	}
	procWalk(b, dir) // warm the page cache

	for i := 0; i < b.N; i++ {
		// migrate, reverse
		checkRestamped("migrate", timed("migrate", nil, "--json", "datastore", "namespace", "migrate", "--confirm"))
		if n := stampCount(b, r, "ns1"); n != int64(versions) {
			b.Fatalf("after migrate: %d rows stamped ns1, want %d", n, versions)
		}
		checkRestamped("reverse", timed("reverse", nil, "--json", "datastore", "namespace", "migrate", "--reverse", "--confirm"))
		if n := stampCount(b, r, ""); n != int64(versions) {
			b.Fatalf("after reverse: %d rows stamped \"\", want %d", n, versions)
		}

		// unset --migrate (from migrated data), then set again
		procRun(b, dir, nil, "datastore", "namespace", "migrate", "--confirm")
		checkRestamped("unset", timed("unset", nil, "--json", "datastore", "namespace", "unset", "--migrate", "--confirm"))
		if n := stampCount(b, r, ""); n != int64(versions) {
			b.Fatalf("after unset --migrate: %d rows stamped \"\", want %d", n, versions)
		}
		procRun(b, dir, nil, "datastore", "namespace", "set", "ns1")

		// recover a migration killed right before its catalog commit
		if _, _, killed := procRun(b, dir, []string{"SWAMPJ_FAILPOINT=failpoint:" + catalog.FailpointRestamp},
			"datastore", "namespace", "migrate", "--confirm"); !killed {
			b.Fatal("the migration was not killed at its catalog commit")
		}
		timed("recover", nil, "recover")
		if n := stampCount(b, r, "ns1"); n != int64(versions) {
			b.Fatalf("after recover: %d rows stamped ns1, want %d", n, versions)
		}
		procRun(b, dir, nil, "datastore", "namespace", "migrate", "--reverse", "--confirm")
	}
	b.ReportMetric(float64(versions), "versions")
	b.ReportMetric(float64(files), "files")
	for _, op := range ops {
		b.ReportMetric(float64(walks[op].Milliseconds())/float64(b.N), op+"-walk-ms")
		b.ReportMetric(float64(times[op].Milliseconds())/float64(b.N), op+"-ms")
		b.ReportMetric(float64(times[op])/float64(walks[op]), op+"/walk")
		b.ReportMetric(float64(statWalks[op].Milliseconds())/float64(b.N), op+"-statwalk-ms")
		b.ReportMetric(float64(times[op])/float64(statWalks[op]), op+"/statwalk")
		if n, ok := fsyncs[op]; ok {
			b.ReportMetric(float64(n), op+"-fsyncs") // directory fsyncs of the data moves
		}
	}
	b.Logf("target: every op/statwalk ≤ 1.5 (against a walk that stats every file; op/walk is the stat-free walk's)")
}

// BenchmarkMigratePhases says where a migration with a populated catalog
// spends its time: `migrate --confirm` and its reverse through the Go API
// (in process, so no start-up), each right after a bare walk of the same
// tree, split at its progress events into planning (the walk of the tree,
// while the set-based restamp's UPDATE runs beside it), moving (the
// renames), restamping (the catalog COMMIT, its WAL fsynced) and the rest
// (the done mark, the catalog closed and checkpointed, the locks
// released). SWAMPJ_BENCH_MIGRATE_VERSIONS sets the size (first value;
// default 50000).
func BenchmarkMigratePhases(b *testing.B) {
	b.StopTimer()
	versions := 50_000
	if s := os.Getenv("SWAMPJ_BENCH_MIGRATE_VERSIONS"); s != "" {
		n, err := strconv.Atoi(string(bytes.Split([]byte(s), []byte(","))[0]))
		if err != nil || n <= 0 {
			b.Fatalf("SWAMPJ_BENCH_MIGRATE_VERSIONS=%q", s)
		}
		versions = n
	}
	dir := filepath.Join(b.TempDir(), "repo")
	populatedRepo(b, dir, versions)
	procRun(b, dir, nil, "datastore", "namespace", "set", "ns1")
	procWalk(b, dir) // warm the page cache

	type phases struct{ walk, total, planning, moving, restamp time.Duration }
	sums := map[string]*phases{"migrate": {}, "reverse": {}}
	for i := 0; i < b.N; i++ {
		for _, op := range []string{"migrate", "reverse"} {
			w, _ := procWalk(b, dir)
			var mu sync.Mutex
			at := map[string]time.Duration{}
			start := time.Now()
			progress := func(e report.ProgressEvent) {
				mu.Lock()
				defer mu.Unlock()
				if _, ok := at[e.Phase]; !ok {
					at[e.Phase] = time.Since(start)
				}
			}
			r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			res, err := migrate.Migrate(csCtx, r, migrate.MigrateOptions{Confirm: true, Reverse: op == "reverse", Progress: progress,
				Getenv: func(string) string { return "" }})
			total := time.Since(start)
			b.StopTimer()
			if err != nil || res.Completed == nil || !res.Completed.CatalogRestamped {
				b.Fatalf("%s: %v %+v", op, err, res)
			}
			moving, restamp := at["moving"], at["restamping catalog"]
			if moving == 0 || restamp == 0 {
				b.Fatalf("%s: progress phases %v", op, at)
			}
			s := sums[op]
			s.walk += w
			s.total += total
			s.planning += moving - at["planning"]
			s.moving += restamp - moving
			// The catalog commit ends where the last moves' progress
			// resumes; without one, at the end.
			s.restamp += total - restamp
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	for _, op := range []string{"migrate", "reverse"} {
		s := sums[op]
		b.ReportMetric(ms(s.walk), op+"-walk-ms")
		b.ReportMetric(ms(s.total), op+"-ms")
		b.ReportMetric(ms(s.planning), op+"-planning-ms")
		b.ReportMetric(ms(s.moving), op+"-moving-ms")
		b.ReportMetric(ms(s.restamp), op+"-restamp-and-finish-ms")
		b.ReportMetric(float64(s.total)/float64(s.walk), op+"/walk")
	}
	b.ReportMetric(float64(versions), "versions")
}

// BenchmarkOneItemCatalogSize: `data write` of 4 KiB and `data get` of one
// item, as whole processes, on a repo whose catalog has 100 rows and on one
// with 100,000 (cmd/mkswamp's generator), in pairs: a pair runs the write
// small, big, big, small (every other pair big, small, small, big), then
// the get the same way, and gives one big/small ratio of each. The
// reported ratios are the medians of those, so a burst of load from a
// neighbour spoils one pair, not the figure; the -ms figures are medians
// of the single runs. One untimed write per repo comes first: it creates the item's
// directories and splits the index pages a rebuild left full, which only a
// first write does. Target: big/small ≤ 1.2 for
// both.
//
// The catalog work of one write does not grow with the catalog: every
// statement is an index probe (EXPLAIN QUERY PLAN: the primary key for
// the row by version, idx_catalog_is_latest for the flag it clears), the
// open reads the schema and no row, and the close checkpoints the dozen
// pages the write changed. What does grow is the depth of the B-trees
// (a few more page reads) and the spread of those pages over the file
// that the checkpoint writes back and fsyncs. The sum-of-times ratios are
// reported beside the medians (-of-sums), as the figure was before.
func BenchmarkOneItemCatalogSize(b *testing.B) {
	b.StopTimer()
	bigRows := 100_000
	if n, err := strconv.Atoi(os.Getenv("SWAMPJ_BENCH_BIG_ROWS")); err == nil && n > 0 {
		bigRows = n
	}
	small := filepath.Join(b.TempDir(), "small")
	big := filepath.Join(b.TempDir(), "big")
	populatedRepo(b, small, 100)
	populatedRepo(b, big, bigRows)
	payload := filepath.Join(b.TempDir(), "payload")
	if err := os.WriteFile(payload, bytes.Repeat([]byte("swampj-4k-bench\n"), 4096/16), 0o644); err != nil {
		b.Fatal(err)
	}
	const addr = "command/shell/bench-model/bench"
	const perRound = 25
	dirs := []string{small, big}
	for _, dir := range dirs {
		procRun(b, dir, nil, "data", "write", addr, "--file", payload)
	}
	var write, get [2][]time.Duration
	var writeRatio, getRatio []float64
	for i := 0; i < b.N; i++ {
		for k := 0; k < perRound; k++ {
			// A pair is A B B A (every other pair B A A B): each repo
			// once before and once after the other, so load that rises or
			// falls during the pair falls on both alike.
			order := []int{0, 1, 1, 0}
			if (i*perRound+k)%2 == 1 {
				order = []int{1, 0, 0, 1}
			}
			var w, g [2]time.Duration
			for _, j := range order {
				b.StartTimer()
				d, _, _ := procRun(b, dirs[j], nil, "data", "write", addr, "--file", payload)
				b.StopTimer()
				w[j] += d
				write[j] = append(write[j], d)
			}
			for _, j := range order {
				b.StartTimer()
				d, out, _ := procRun(b, dirs[j], nil, "data", "get", addr)
				b.StopTimer()
				if len(out) != 4096 {
					b.Fatalf("data get returned %d bytes", len(out))
				}
				g[j] += d
				get[j] = append(get[j], d)
			}
			writeRatio = append(writeRatio, float64(w[1])/float64(w[0]))
			getRatio = append(getRatio, float64(g[1])/float64(g[0]))
		}
	}
	ms := func(ds []time.Duration) float64 { return float64(medianDuration(ds).Microseconds()) / 1000 }
	b.ReportMetric(float64(bigRows), "big-rows")
	b.ReportMetric(float64(len(writeRatio)), "pairs")
	b.ReportMetric(ms(write[0]), "write-small-ms")
	b.ReportMetric(ms(write[1]), "write-big-ms")
	b.ReportMetric(ms(get[0]), "get-small-ms")
	b.ReportMetric(ms(get[1]), "get-big-ms")
	b.ReportMetric(medianFloat(writeRatio), "write-big/small")
	b.ReportMetric(medianFloat(getRatio), "get-big/small")
	b.ReportMetric(sumDurations(write[1])/sumDurations(write[0]), "write-big/small-of-sums")
	b.ReportMetric(sumDurations(get[1])/sumDurations(get[0]), "get-big/small-of-sums")
	b.Logf("target: write-big/small and get-big/small (medians of %d pairs) ≤ 1.2", len(writeRatio))
}

// medianDuration is the median of ds (the upper one of an even count).
func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// medianFloat is the median of xs (the upper one of an even count).
func sumDurations(ds []time.Duration) float64 {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return float64(t)
}
