// Command benchreport runs swampj's benchmarks and prints one table: each
// figure beside its baseline measured in the same run, their ratio, the
// target and the flush count, at two repo sizes (10,000 and 100,000
// versions by default), so a reader sees what grows with the repo and what
// stays constant.
//
//	go run ./cmd/benchreport                       # everything (long: tens of minutes)
//	go run ./cmd/benchreport -sizes 10000          # one size
//	go run ./cmd/benchreport -only 'rebuild|verify' # some rows
//	go run ./cmd/benchreport -from bench-raw.txt   # re-render a saved run
//
// It only runs `go test -bench` (one package at a time, -p 1, so no two
// benchmarks share the machine) and reads their b.ReportMetric output; the
// benchmarks themselves measure each figure and its baseline alternately
// in one process. The raw output goes to stderr and, with -raw, to a file.
// A row whose benchmark or metric is missing (not on this branch, skipped)
// is shown with "-".
//
// With SWAMP_BIN set to the real swamp it also runs BenchmarkBesideSwamp
// (cmd/swampj; slow: minutes) and prints a second table, "beside swamp":
// the same jobs done by swamp and by swampj on fresh copies of one repo,
// at the -beside-items sizes.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one line of the table: a benchmark's figure, its baseline and
// their ratio, all metric names that benchmark reports. A row without a
// ratio metric (a phase of a larger figure) shows figure/baseline and has
// no target.
type row struct {
	what                    string
	bench                   string // result name; "%d" is the size for sized rows
	sized                   bool   // run at every size (env from sizeEnv)
	figure, baseline, ratio string
	target                  float64 // the ratio's target (a "(target≤X)" in the metric name wins)
	// flushes names a metric with the fsync count, in flushBench
	// (bench if empty).
	flushes, flushBench string
}

// rows is the table, in order, each row with its target where one is set.
var rows = []row{
	{what: "write 64 KiB, Go API (vs bare serial durable write)", bench: "BenchmarkWrite64KiB/lib", figure: "µs/write", baseline: "µs/baseline-min", ratio: "ratio-min", target: 1.6,
		flushes: "flushes/write", flushBench: "BenchmarkWriteFsyncs/lib"},
	{what: "write 64 KiB on a held write.Handle (vs bare serial durable write)", bench: "BenchmarkWrite64KiB/handle", figure: "µs/write", baseline: "µs/baseline-min", ratio: "ratio-min", target: 1.3,
		flushes: "flushes/write", flushBench: "BenchmarkWriteFsyncs/handle"},
	{what: "write 64 KiB, Go API opening journal and catalog per call (vs bare)", bench: "BenchmarkWrite64KiB/cli", figure: "µs/write", baseline: "µs/baseline-min", ratio: "ratio-min",
		flushes: "flushes/write", flushBench: "BenchmarkWriteFsyncs/cli"},
	{what: "data write 64 KiB, whole process (vs bare durable-write process)", bench: "BenchmarkDataWriteProcess", figure: "write-process-µs", baseline: "bare-process-µs", ratio: "ratio", target: 2.0,
		flushes: "flushes/write", flushBench: "BenchmarkWriteFsyncs/cli"},
	{what: "6 data write processes at once, 10 × 16 KiB each (vs bare 6-wide)", bench: "BenchmarkConcurrentDataWrite6", figure: "concurrent-ms", baseline: "bare-wide-ms", ratio: "concurrent/bare", target: 1.5},
	{what: "2 data write processes at once, 10 each (vs one after another)", bench: "BenchmarkConcurrentDataWrite2", figure: "concurrent-ms", baseline: "serial-ms", ratio: "concurrent/serial", target: 0.7},
	{what: "6 Go API writers at once, 10 × 16 KiB each (vs bare, 6 goroutines)", bench: "BenchmarkWriteConcurrent6", figure: "concurrent-ms", baseline: "bare-wide-ms", ratio: "concurrent/bare", target: 1.5,
		flushes: "flushes/write", flushBench: "BenchmarkWriteConcurrentFsyncs"},
	{what: "6 goroutines on one write.Handle, 10 × 16 KiB each (vs bare, 6 goroutines)", bench: "BenchmarkHandleConcurrent6", figure: "concurrent-ms", baseline: "bare-wide-ms", ratio: "concurrent/bare", target: 1.2},
	{what: "batch of 100 writes, per version", bench: "BenchmarkWriteBatch100", figure: "µs/version", baseline: "µs/baseline-min-version", ratio: "ratio-min", target: 0.9},
	{what: "data write, big catalog vs 100 rows", bench: "BenchmarkOneItemCatalogSize", sized: true, figure: "write-big-ms", baseline: "write-small-ms", ratio: "write-big/small", target: 1.2},
	{what: "data get, big catalog vs 100 rows", bench: "BenchmarkOneItemCatalogSize", sized: true, figure: "get-big-ms", baseline: "get-small-ms", ratio: "get-big/small", target: 1.2},
	{what: "migrate --confirm (vs walk statting every file)", bench: "BenchmarkMigrateWithCatalog/versions=%d", sized: true, figure: "migrate-ms", baseline: "migrate-statwalk-ms", ratio: "migrate/statwalk", target: 1.5, flushes: "migrate-fsyncs"},
	{what: "migrate --confirm (vs stat-free walk)", bench: "BenchmarkMigrateWithCatalog/versions=%d", sized: true, figure: "migrate-ms", baseline: "migrate-walk-ms", ratio: "migrate/walk"},
	{what: "migrate --reverse (vs walk statting every file)", bench: "BenchmarkMigrateWithCatalog/versions=%d", sized: true, figure: "reverse-ms", baseline: "reverse-statwalk-ms", ratio: "reverse/statwalk", target: 1.5, flushes: "reverse-fsyncs"},
	{what: "unset --migrate (vs walk statting every file)", bench: "BenchmarkMigrateWithCatalog/versions=%d", sized: true, figure: "unset-ms", baseline: "unset-statwalk-ms", ratio: "unset/statwalk", target: 1.5, flushes: "unset-fsyncs"},
	{what: "  migrate phase: planning walk (in process)", bench: "BenchmarkMigratePhases", sized: true, figure: "migrate-planning-ms", baseline: "migrate-walk-ms"},
	{what: "  migrate phase: catalog commit and finish", bench: "BenchmarkMigratePhases", sized: true, figure: "migrate-restamp-and-finish-ms", baseline: "migrate-walk-ms"},
	{what: "recover a killed migration (vs walk statting every file)", bench: "BenchmarkMigrateWithCatalog/versions=%d", sized: true, figure: "recover-ms", baseline: "recover-statwalk-ms", ratio: "recover/statwalk", target: 1.5},
	{what: "catalog rebuild, from empty (vs metadata walk)", bench: "BenchmarkCatalogRebuild", sized: true, figure: "rebuild-ms", baseline: "walk-ms", ratio: "rebuild/walk", target: 2.5, flushes: "rebuild-fsyncs"},
	{what: "catalog rebuild, populated (vs metadata walk)", bench: "BenchmarkCatalogRebuild", sized: true, figure: "rebuild-populated-ms", baseline: "walk-ms", ratio: "rebuild-populated/walk", target: 2},
	{what: "  rebuild phase: walk and scan", bench: "BenchmarkCatalogRebuild", sized: true, figure: "phase-scan-ms", baseline: "walk-ms"},
	{what: "  rebuild phase: inserts", bench: "BenchmarkCatalogRebuild", sized: true, figure: "phase-insert-ms", baseline: "walk-ms"},
	{what: "  rebuild phase: swamp's 9 indexes", bench: "BenchmarkCatalogRebuild", sized: true, figure: "phase-indexes-ms", baseline: "walk-ms"},
	{what: "  rebuild phase: commit", bench: "BenchmarkCatalogRebuild", sized: true, figure: "phase-commit-ms", baseline: "walk-ms"},
	{what: "  rebuild phase: close (checkpoint)", bench: "BenchmarkCatalogRebuild", sized: true, figure: "phase-close-ms", baseline: "walk-ms"},
	{what: "  rebuild phase: built aside, synced once, linked in", bench: "BenchmarkCatalogRebuild", sized: true, figure: "phase-publish-ms", baseline: "walk-ms"},
	{what: "catalog verify (vs rebuild)", bench: "BenchmarkCatalogRebuild", sized: true, figure: "verify-ms", baseline: "rebuild-ms", ratio: "verify/rebuild", target: 1},
	{what: "doctor (vs metadata walk)", bench: "BenchmarkDoctor", sized: true, figure: "doctor-ms", baseline: "walk-ms", ratio: "doctor/walk", target: 2},
	{what: "doctor --verify-checksums, 59 B raws (vs metadata read + hash)", bench: "BenchmarkDoctor", sized: true, figure: "checksums-ms", baseline: "mdhash-ms", ratio: "checksums/mdhash", target: 1.5},
	{what: "doctor --verify-checksums, 59 B raws (vs hashing every raw)", bench: "BenchmarkDoctor", sized: true, figure: "checksums-ms", baseline: "hash-ms", ratio: "checksums/hash"},
	{what: "  metadata read + hash (vs hashing every raw)", bench: "BenchmarkDoctor", sized: true, figure: "mdhash-ms", baseline: "hash-ms", ratio: "mdhash/hash"},
	{what: "doctor --verify-checksums, 256 KiB raws (vs hashing every raw)", bench: "BenchmarkDoctorRaw256KiB", figure: "checksums-ms", baseline: "hash-ms", ratio: "checksums/hash", target: 1.3},
	{what: "recover, nothing to do (vs swampj --version)", bench: "BenchmarkRecoverCleanVsVersion", figure: "recover-µs", baseline: "version-µs", ratio: "ratio", target: 1.2},
	{what: "swampj --version, built with the tags (vs bare durable-write process)", bench: "BenchmarkStartupVsBareWrite", figure: "version-µs", baseline: "bare-process-µs", ratio: "version/bare", target: 0.8},
	{what: "  start-up phase, tags: AWS SDK package inits", bench: "BenchmarkStartupVsBareWrite", figure: "tagged-init-aws-µs", baseline: "bare-process-µs"},
	{what: "  start-up phase, tags: SQLite package inits", bench: "BenchmarkStartupVsBareWrite", figure: "tagged-init-sqlite-µs", baseline: "bare-process-µs"},
	{what: "  start-up phase, tags: swampj's package inits", bench: "BenchmarkStartupVsBareWrite", figure: "tagged-init-swampj-µs", baseline: "bare-process-µs"},
	{what: "  start-up phase, tags: other package inits", bench: "BenchmarkStartupVsBareWrite", figure: "tagged-init-other-µs", baseline: "bare-process-µs"},
	{what: "  start-up phase, tags: exec, runtime, main, exit", bench: "BenchmarkStartupVsBareWrite", figure: "tagged-rest-µs", baseline: "bare-process-µs"},
	{what: "swampj --version, plain go build (vs bare durable-write process)", bench: "BenchmarkStartupVsBareWrite", figure: "version-plain-µs", baseline: "bare-process-µs", ratio: "version-plain/bare", target: 0.8},
	{what: "  start-up phase, plain: AWS SDK package inits", bench: "BenchmarkStartupVsBareWrite", figure: "plain-init-aws-µs", baseline: "bare-process-µs"},
	{what: "  start-up phase, plain: SQLite package inits", bench: "BenchmarkStartupVsBareWrite", figure: "plain-init-sqlite-µs", baseline: "bare-process-µs"},
	{what: "  start-up phase, plain: man page renderer inits", bench: "BenchmarkStartupVsBareWrite", figure: "plain-init-mandoc-µs", baseline: "bare-process-µs"},
	{what: "  start-up phase, plain: swampj's package inits", bench: "BenchmarkStartupVsBareWrite", figure: "plain-init-swampj-µs", baseline: "bare-process-µs"},
	{what: "  start-up phase, plain: other package inits", bench: "BenchmarkStartupVsBareWrite", figure: "plain-init-other-µs", baseline: "bare-process-µs"},
	{what: "  start-up phase, plain: exec, dynamic loader, runtime, main, exit", bench: "BenchmarkStartupVsBareWrite", figure: "plain-rest-µs", baseline: "bare-process-µs"},
	{what: "swampj run -- true (vs bare true)", bench: "BenchmarkRunWrapper", figure: "run-µs", baseline: "true-µs", ratio: "ratio", target: 0},
	{what: "swampj run -- true, 20,000 items (vs 100 items)", bench: "BenchmarkRunWrapperRepoSize", figure: "big-ms", baseline: "small-ms", ratio: "big/small", target: 1.2},
	{what: "swamp model method run under swampj run (vs plain; SWAMP_BIN)", bench: "BenchmarkRunWrappedMethodRun", figure: "wrapped-ms", baseline: "plain-ms", ratio: "wrapped/plain", target: 1.10},
	{what: "swampj run -- swampj data write (vs bare write)", bench: "BenchmarkRunWrapperWrite", figure: "run-ms", baseline: "bare-ms", ratio: "run/bare", target: 0},
}

// runs are the go test invocations: the size-independent ones once, the
// sized ones per size with sizeEnv.
var runs = []struct {
	pkg, bench, benchtime string
	sized                 bool
}{
	{"./ops", "^Benchmark(Write64KiB|WriteFsyncs)$", "200x", false},
	{"./ops", "^BenchmarkWriteBatch100$", "10x", false}, // 100 versions (and 200 baseline writes) per round
	// 5 rounds of 60 writes and 60 baseline writes each; one pass of 60 counted.
	{"./ops", "^Benchmark(WriteConcurrent6|WriteConcurrentFsyncs|HandleConcurrent6)$", "1x", false},
	{"./ops", "^BenchmarkDoctorRaw256KiB$", "5x", false}, // 500 MiB: 5 alternating rounds, a few seconds each
	{"./cmd/swampj", "^Benchmark(RecoverCleanVsVersion|RunWrapper|RunWrapperWrite|RunWrapperRepoSize|RunWrappedMethodRun|DataWriteProcess|ConcurrentDataWrite6|ConcurrentDataWrite2|StartupVsBareWrite)$", "1x", false},
	{"./ops", "^Benchmark(CatalogRebuild|Doctor|MigrateWithCatalog|MigratePhases|OneItemCatalogSize)$", "1x", true},
}

// besideBench is the "beside swamp" table's benchmark (cmd/swampj, run
// only with SWAMP_BIN set): one result per repo size, named
// BenchmarkBesideSwamp/items=N, with JOB-swamp-ms and JOB-swampj-ms (the
// medians over its runs) for each job below.
const besideBench = "BenchmarkBesideSwamp"

// besideJobs are the rows of the "beside swamp" table, in order.
var besideJobs = []struct{ what, job string }{
	{"doctor (swamp: doctor datastores)", "doctor"},
	{"catalog built from empty (swamp: backfill on data query; swampj: catalog rebuild)", "catalog"},
	{"namespace migrate --confirm", "migrate"},
	{"data get of one item", "data-get"},
}

// sizeEnv makes the sized benchmarks work on a repo of n versions
// (10 versions per item; the one-item benchmark's big catalog has n rows).
func sizeEnv(n int) []string {
	return []string{
		"SWAMPJ_BENCH_ITEMS=" + strconv.Itoa(max(n/10, 1)),
		"SWAMPJ_BENCH_VERSIONS=10",
		"SWAMPJ_BENCH_MIGRATE_VERSIONS=" + strconv.Itoa(n),
		"SWAMPJ_BENCH_BIG_ROWS=" + strconv.Itoa(n),
	}
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("benchreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizesFlag := fs.String("sizes", "10000,100000", "repo sizes in versions, comma-separated")
	only := fs.String("only", "", "regexp: only rows whose description matches (and only the runs they need); the beside-swamp table is the row \"beside swamp\"")
	from := fs.String("from", "", "render saved go test output (a -raw file) instead of running")
	raw := fs.String("raw", "", "also write the raw go test output to this file")
	besideItems := fs.String("beside-items", "3000,20000", "with SWAMP_BIN set: repo sizes in items (3 versions each) of the \"beside swamp\" table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sizes, err := parseSizes(*sizesFlag)
	if err != nil {
		return err
	}
	var keep *regexp.Regexp
	if *only != "" {
		if keep, err = regexp.Compile(*only); err != nil {
			return err
		}
	}
	selected := rows[:0:0]
	for _, r := range rows {
		if keep == nil || keep.MatchString(r.what) {
			selected = append(selected, r)
		}
	}

	// results[size] holds the sized runs at that size; results[0] the rest.
	results := map[int][]*Result{}
	var loads, failed []string
	if *from != "" {
		data, err := os.ReadFile(*from)
		if err != nil {
			return err
		}
		results, loads = splitSaved(data)
	} else {
		var rawOut io.Writer = stderr
		if *raw != "" {
			f, err := os.Create(*raw)
			if err != nil {
				return err
			}
			defer f.Close()
			rawOut = io.MultiWriter(stderr, f)
		}
		start := time.Now()
		for _, rn := range runs {
			bench := needed(selected, rn.bench, rn.sized)
			if bench == "" {
				continue
			}
			list := []int{0}
			if rn.sized {
				list = sizes
			}
			for _, n := range list {
				var env []string
				if n > 0 {
					env = sizeEnv(n)
				}
				load := uptime()
				loads = append(loads, load)
				fmt.Fprintf(rawOut, "=== benchreport size=%d load %s\n", n, load)
				out, err := goTest(rn.pkg, bench, rn.benchtime, env, rawOut)
				if err != nil {
					// The rows it did print are still measured; the
					// table shows them, the exit status says it failed.
					failed = append(failed, fmt.Sprintf("go test %s -bench '%s' (size %d): %v", rn.pkg, bench, n, err))
				}
				results[n] = append(results[n], parse(bytes.NewReader(out))...)
			}
		}
		if os.Getenv("SWAMP_BIN") != "" && (keep == nil || keep.MatchString("beside swamp")) {
			load := uptime()
			loads = append(loads, load)
			fmt.Fprintf(rawOut, "=== benchreport size=0 load %s\n", load)
			out, err := goTest("./cmd/swampj", "^"+besideBench+"$", "1x", []string{"SWAMPJ_BESIDE_ITEMS=" + *besideItems}, rawOut)
			if err != nil {
				failed = append(failed, fmt.Sprintf("go test ./cmd/swampj -bench '%s': %v", besideBench, err))
			}
			results[0] = append(results[0], parse(bytes.NewReader(out))...)
		}
		loads = append(loads, uptime())
		fmt.Fprintf(stderr, "benchreport: benchmarks took %s\n", time.Since(start).Round(time.Second))
	}
	render(stdout, selected, sizes, results)
	if !renderBeside(stdout, results[0]) && *from == "" && os.Getenv("SWAMP_BIN") == "" {
		fmt.Fprintln(stdout, "\nbeside swamp: not run (set SWAMP_BIN to the real swamp, e.g. SWAMP_BIN=/opt/realswamp/bin/swamp)")
	}
	if len(loads) > 0 {
		fmt.Fprintf(stdout, "\nload average (1, 5, 15 min) at each go test: %s\n", strings.Join(loads, " | "))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d benchmark runs failed (their rows show \"-\"):\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-sizes %q: want positive version counts", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// needed narrows a run's -bench regexp to the benchmarks the selected rows
// read ("" when none of them is in this run).
func needed(selected []row, bench string, sized bool) string {
	re := regexp.MustCompile(bench)
	seen := map[string]bool{}
	var names []string
	for _, r := range selected {
		for _, name := range []string{r.bench, r.flushBench} {
			if name == "" || r.sized != sized {
				continue
			}
			top := strings.SplitN(name, "/", 2)[0]
			if re.MatchString(top) && !seen[top] {
				seen[top] = true
				names = append(names, regexp.QuoteMeta(top))
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "^(" + strings.Join(names, "|") + ")$"
}

// goTest runs one go test invocation, copying its output to w, and returns
// the output. A benchmark failing is an error (its figures would be wrong).
func goTest(pkg, bench, benchtime string, env []string, w io.Writer) ([]byte, error) {
	cmd := exec.Command("go", "test", "-p", "1", "-count", "1", "-run", "^$", "-bench", bench, "-benchtime", benchtime, "-timeout", "3h", pkg)
	cmd.Env = append(os.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout = io.MultiWriter(&buf, w)
	cmd.Stderr = w
	err := cmd.Run()
	return buf.Bytes(), err
}

// uptime is the load average, as /proc/loadavg gives it.
func uptime() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// splitSaved parses a saved -raw file: its "=== benchreport size=N load L"
// markers say which size the following results belong to.
func splitSaved(data []byte) (map[int][]*Result, []string) {
	results := map[int][]*Result{}
	var loads []string
	size := 0
	var chunk bytes.Buffer
	flush := func() {
		results[size] = append(results[size], parse(bytes.NewReader(chunk.Bytes()))...)
		chunk.Reset()
	}
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "=== benchreport size="); ok {
			flush()
			f := strings.Fields(rest)
			if len(f) > 0 {
				size, _ = strconv.Atoi(f[0])
			}
			if i := strings.Index(rest, " load "); i >= 0 {
				loads = append(loads, strings.TrimSpace(rest[i+len(" load "):]))
			}
			continue
		}
		chunk.WriteString(line)
	}
	flush()
	return results, loads
}

// find returns the result named name in list (the last one, if repeated).
func find(list []*Result, name string) *Result {
	var found *Result
	for _, r := range list {
		if r.Name == name {
			found = r
		}
	}
	return found
}

func render(w io.Writer, selected []row, sizes []int, results map[int][]*Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "what\tversions\tfigure\tbaseline\tratio\ttarget\tmet\tfsyncs\t")
	for _, r := range selected {
		list := []int{0}
		if r.sized {
			list = sizes
		}
		for _, n := range list {
			name := r.bench
			if strings.Contains(name, "%d") {
				name = fmt.Sprintf(name, n)
			}
			res := find(results[n], name)
			versions := "-"
			if n > 0 {
				versions = strconv.Itoa(n)
			} else if res != nil {
				if v, ok := res.Metric("versions"); ok {
					versions = strconv.Itoa(int(v)) // an unsized benchmark's own tree
				}
			}
			fig, base, ratio, target, met, flushes := "-", "-", "-", "-", "", "-"
			tgt := r.target
			if res != nil {
				if v, ok := res.Metric(r.figure); ok {
					fig = withUnit(v, r.figure)
				}
				if v, ok := res.Metric(r.baseline); ok {
					base = withUnit(v, r.baseline)
				}
				if t, ok := res.MetricTarget(r.ratio); ok {
					tgt = t
				}
				v, ok := res.Metric(r.ratio)
				if !ok && r.ratio == "" {
					// A phase row: its share of the baseline.
					f, okf := res.Metric(r.figure)
					b, okb := res.Metric(r.baseline)
					v, ok = f/b, okf && okb && b > 0
				}
				if ok {
					ratio = fmt.Sprintf("%.2f", v)
					if tgt > 0 {
						met = "yes"
						if v > tgt {
							met = "no"
						}
					}
				}
			}
			if tgt > 0 {
				target = fmt.Sprintf("≤ %.2g", tgt)
			}
			if r.flushes != "" {
				fb := res
				if r.flushBench != "" {
					fb = find(results[n], r.flushBench)
				}
				if fb != nil {
					if v, ok := fb.Metric(r.flushes); ok {
						flushes = strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
					}
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.what, versions, fig, base, ratio, target, met, flushes)
		}
	}
	_ = tw.Flush()
}

// renderBeside prints the "beside swamp" table from BenchmarkBesideSwamp's
// results in list, one block of jobs per repo size; it reports whether
// there was any.
func renderBeside(w io.Writer, list []*Result) bool {
	var sized []*Result
	for _, r := range list {
		if strings.HasPrefix(r.Name, besideBench+"/items=") {
			sized = append(sized, r)
		}
	}
	if len(sized) == 0 {
		return false
	}
	runs := "?"
	if v, ok := sized[0].Metric("runs"); ok {
		runs = strconv.Itoa(int(v))
	}
	fmt.Fprintf(w, "\nbeside swamp: the real swamp and swampj on fresh copies of the same repo (3 versions per item), whole processes, median of %s runs\n", runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "job\titems\tswamp\tswampj\tswampj/swamp\t")
	for _, res := range sized {
		items := strings.TrimPrefix(res.Name, besideBench+"/items=")
		for _, j := range besideJobs {
			sw, okS := res.Metric(j.job + "-swamp-ms")
			sj, okJ := res.Metric(j.job + "-swampj-ms")
			swS, sjS, ratio := "-", "-", "-"
			if okS {
				swS = withUnit(sw, "-ms")
			}
			if okJ {
				sjS = withUnit(sj, "-ms")
			}
			if okS && okJ && sw > 0 {
				ratio = fmt.Sprintf("%.3f", sj/sw)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", j.what, items, swS, sjS, ratio)
		}
	}
	_ = tw.Flush()
	return true
}

// withUnit formats a metric value with the unit its name implies.
func withUnit(v float64, name string) string {
	switch {
	case strings.HasSuffix(name, "-ms"):
		if v >= 1000 {
			return fmt.Sprintf("%.2f s", v/1000)
		}
		return fmt.Sprintf("%.1f ms", v)
	case strings.HasPrefix(name, "µs/"), strings.HasSuffix(name, "-µs"):
		if v >= 10000 {
			return fmt.Sprintf("%.1f ms", v/1000)
		}
		return fmt.Sprintf("%.0f µs", v)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
