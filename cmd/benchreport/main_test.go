package main

import (
	"bytes"
	"strings"
	"testing"
)

// A saved run as benchreport writes it with -raw: go test's own lines,
// with the size markers between the runs.
const sample = `=== benchreport size=0 load 1.00 2.00 3.00
goos: linux
BenchmarkWrite64KiB/lib-2         	     200	   3295000 ns/op	        1501 µs/baseline-min	        1700 µs/baseline-recipe	         2.195 ratio-min	         1.938 ratio-recipe	      3295 µs/write
BenchmarkWriteFsyncs/lib-2        	     200	   3000000 ns/op	         5.000 data-fsyncs/write	         9.000 flushes/write
BenchmarkWriteFsyncs/cli-2        	     200	   3000000 ns/op	         5.000 data-fsyncs/write	        11.00 flushes/write
BenchmarkWriteConcurrent6-2        	       1	4736047668 ns/op	        47.47 bare-wide-ms	       920.8 concurrent-ms	        20.80 concurrent/bare(target≤1.5)	         5.000 rounds
BenchmarkWriteConcurrentFsyncs-2   	       1	1185159784 ns/op	         1.000 catalog-commits/write	         5.000 data-fsyncs/write	        10.50 flushes/write	         2.000 journal-commits/write	         1.000 lock-fsyncs/write
BenchmarkDoctorRaw256KiB-2   	       1	 714715312 ns/op	       265.0 checksums-ms	         1.375 checksums/hash(target≤1.3)	         1.230 checksums/mdhash	        31.00 doctor-ms	         3.684 doctor/walk(target≤2)	       193.0 hash-ms	       216.0 mdhash-ms	         1.118 mdhash/hash	    262144 raw-bytes	       2000 versions	         8.000 walk-ms
PASS
ok  	github.com/swampj/swampj/ops	12.3s
BenchmarkDataWriteProcess-2   	       1	 1 ns/op	      9000 write-process-µs	      4000 bare-process-µs	         2.250 ratio
BenchmarkConcurrentDataWrite6-2   	       1	9603459295 ns/op	       219.8 bare-wide-ms	      1857 concurrent-ms	        10.50 concurrent/bare(target≤1.5)	         5.000 rounds
BenchmarkConcurrentDataWrite2-2   	       1	3866551328 ns/op	       398.5 concurrent-ms	         0.650 concurrent/serial(target≤0.7)	         5.000 rounds	       613.0 serial-ms
BenchmarkBesideSwamp/items=3000-2         	       1	97633706594 ns/op	     10228 catalog-swamp-ms	      1722 catalog-swampj-ms	         0.1683 catalog-swampj/swamp	      3742 data-get-swamp-ms	        10.32 data-get-swampj-ms	         0.002757 data-get-swampj/swamp	      7234 doctor-swamp-ms	      1344 doctor-swampj-ms	         0.1858 doctor-swampj/swamp	      3000 items	      5004 migrate-swamp-ms	       524.0 migrate-swampj-ms	         0.1047 migrate-swampj/swamp	         3 runs	      9000 versions
BenchmarkBesideSwamp/items=20000-2         	       1	97633706594 ns/op	     60000 catalog-swamp-ms	      3000 catalog-swampj-ms	         0.05 catalog-swampj/swamp	      20000 items	         3 runs	      60000 versions
PASS
=== benchreport size=10000 load 4.00 5.00 6.00
BenchmarkCatalogRebuild-2   	       1	51426270827 ns/op	     16764 rebuild-1worker-ms	         6.231 rebuild-1worker/walk	     17288 rebuild-ms	         6.426 rebuild/walk	     14682 verify-ms	         0.8492 verify/rebuild	    100000 versions	      2690 walk-ms
BenchmarkDoctor-2   	       1	1 ns/op	     300.0 doctor-ms	     100.0 walk-ms	     3.000 doctor/walk(target≤2.5)	     500.0 checksums-ms	     125.0 hash-ms	     4.000 checksums/hash	     250.0 mdhash-ms	     2.000 checksums/mdhash(target≤1.5)	     2.000 mdhash/hash
BenchmarkMigrateWithCatalog
BenchmarkMigrateWithCatalog/versions=10000
BenchmarkMigrateWithCatalog/versions=10000-2         	       1	 1 ns/op	       120.0 migrate-ms	   100.0 migrate-walk-ms	  1.200 migrate/walk	   60.0 migrate-statwalk-ms	  2.000 migrate/statwalk
    catalogproc_bench_test.go:245: target: every op/walk ≤ 1.5 (target 1)
PASS
`

func TestParseReadsMetricsAndTargets(t *testing.T) {
	res := parse(strings.NewReader(sample))
	if len(res) != 14 {
		t.Fatalf("%d results, want 14: %+v", len(res), res)
	}
	w := res[0]
	if w.Name != "BenchmarkWrite64KiB/lib" || w.Metrics["ratio-min"] != 2.195 || w.Metrics["µs/write"] != 3295 {
		t.Fatalf("write result: %+v", w)
	}
	d := res[12]
	if v, ok := d.Metric("doctor/walk"); !ok || v != 3 {
		t.Fatalf("doctor/walk with its target in the name: %v %v", v, ok)
	}
	if v, ok := d.MetricTarget("doctor/walk"); !ok || v != 2.5 {
		t.Fatalf("target from the metric name: %v %v", v, ok)
	}
	m := res[13]
	if m.Name != "BenchmarkMigrateWithCatalog/versions=10000" || len(m.Targets) != 1 || !strings.HasPrefix(m.Targets[0], "every op/walk") {
		t.Fatalf("migrate result: %+v", m)
	}
}

func TestRenderOneRowPerSize(t *testing.T) {
	results, loads := splitSaved([]byte(sample))
	if len(loads) != 2 || loads[1] != "4.00 5.00 6.00" {
		t.Fatalf("loads %q", loads)
	}
	var out bytes.Buffer
	render(&out, rows, []int{10000, 100000}, results)
	lines := strings.Split(out.String(), "\n")
	get := func(prefix string, versions string) string {
		for _, l := range lines {
			f := strings.Split(l, "|")
			if len(f) > 2 && strings.TrimSpace(f[0]) == prefix && strings.TrimSpace(f[1]) == versions {
				return l
			}
		}
		t.Fatalf("no row %q at %s in\n%s", prefix, versions, out.String())
		return ""
	}
	for _, c := range []struct {
		what, versions string
		want           []string
	}{
		{"write 64 KiB, Go API (vs bare serial durable write)", "-", []string{"3295 µs", "1501 µs", "2.19", "≤ 1.6", "no", "9"}},
		{"data write 64 KiB, whole process (vs bare durable-write process)", "-", []string{"9000 µs", "4000 µs", "2.25", "≤ 2", "no", "11"}},
		{"6 data write processes at once, 10 × 16 KiB each (vs bare 6-wide)", "-", []string{"1.86 s", "219.8 ms", "10.50", "≤ 1.5", "no", "|-  "}},
		{"2 data write processes at once, 10 each (vs one after another)", "-", []string{"398.5 ms", "613.0 ms", "0.65", "≤ 0.7", "yes"}},
		{"6 Go API writers at once, 10 × 16 KiB each (vs bare, 6 goroutines)", "-", []string{"920.8 ms", "47.5 ms", "20.80", "≤ 1.5", "no", "10.5"}},
		{"doctor --verify-checksums, 256 KiB raws (vs hashing every raw)", "2000", []string{"265.0 ms", "193.0 ms", "1.38", "≤ 1.3", "no"}},
		{"migrate --confirm (vs walk statting every file)", "10000", []string{"120.0 ms", "60.0 ms", "2.00", "≤ 1.5", "no"}},
		{"migrate --confirm (vs stat-free walk)", "10000", []string{"120.0 ms", "100.0 ms", "1.20", "|-  "}},
		{"catalog rebuild, from empty (vs metadata walk)", "10000", []string{"17.29 s", "2.69 s", "6.43", "≤ 2", "no"}},
		{"doctor (vs metadata walk)", "10000", []string{"3.00", "≤ 2.5", "no"}},
		{"doctor --verify-checksums, 59 B raws (vs hashing every raw)", "10000", []string{"500.0 ms", "125.0 ms", "4.00", "|-  "}},
		{"doctor --verify-checksums, 59 B raws (vs metadata read + hash)", "10000", []string{"500.0 ms", "250.0 ms", "2.00", "≤ 1.5", "no"}},
		{"metadata read + hash (vs hashing every raw)", "10000", []string{"250.0 ms", "125.0 ms", "2.00"}},
		{"catalog rebuild, from empty (vs metadata walk)", "100000", []string{"|-  "}},
	} {
		l := get(c.what, c.versions)
		for _, w := range c.want {
			if !strings.Contains(l, w) {
				t.Errorf("row %q at %s lacks %q: %s", c.what, c.versions, w, l)
			}
		}
	}
}

func TestOnlyRunsWhatTheRowsRead(t *testing.T) {
	var sel []row
	for _, r := range rows {
		if strings.Contains(r.what, "migrate phase") {
			sel = append(sel, r)
		}
	}
	var sized string
	for _, rn := range runs {
		if rn.sized {
			sized = rn.bench
		}
	}
	if got := needed(sel, sized, true); got != "^(BenchmarkMigratePhases)$" {
		t.Fatalf("sized run narrowed to %q", got)
	}
	if got := needed(sel, runs[0].bench, false); got != "" {
		t.Fatalf("write run not skipped: %q", got)
	}
	if got := needed(rows[:1], runs[0].bench, false); got != "^(BenchmarkWrite64KiB|BenchmarkWriteFsyncs)$" {
		t.Fatalf("write run narrowed to %q", got)
	}
}

func TestRenderBesideSwamp(t *testing.T) {
	results, _ := splitSaved([]byte(sample))
	var out bytes.Buffer
	if !renderBeside(&out, results[0]) {
		t.Fatal("no beside-swamp table from a run that has one")
	}
	text := out.String()
	if !strings.Contains(text, "median of 3 runs") {
		t.Errorf("the table does not say how many runs:\n%s", text)
	}
	for _, c := range []struct {
		job, items string
		want       []string
	}{
		{"doctor (swamp: doctor datastores)", "3000", []string{"7.23 s", "1.34 s", "0.186"}},
		{"catalog built from empty (swamp: backfill on data query; swampj: catalog rebuild)", "3000", []string{"10.23 s", "1.72 s", "0.168"}},
		{"namespace migrate --confirm", "3000", []string{"5.00 s", "524.0 ms", "0.105"}},
		{"data get of one item", "3000", []string{"3.74 s", "10.3 ms", "0.003"}},
		{"catalog built from empty (swamp: backfill on data query; swampj: catalog rebuild)", "20000", []string{"60.00 s", "3.00 s", "0.050"}},
		{"doctor (swamp: doctor datastores)", "20000", []string{"|-  "}}, // a job the run lacks
	} {
		found := false
		for _, l := range strings.Split(text, "\n") {
			f := strings.Split(l, "|")
			if len(f) < 5 || strings.TrimSpace(f[0]) != c.job || strings.TrimSpace(f[1]) != c.items {
				continue
			}
			found = true
			for _, w := range c.want {
				if !strings.Contains(l, w) {
					t.Errorf("row %q at %s lacks %q: %s", c.job, c.items, w, l)
				}
			}
		}
		if !found {
			t.Errorf("no row %q at %s in\n%s", c.job, c.items, text)
		}
	}
	if renderBeside(&out, results[10000]) {
		t.Error("a beside-swamp table from results that have none")
	}
}

// A start-up run as BenchmarkStartupVsBareWrite reports it: both builds
// against the bare process, with their phases.
const startupSample = `=== benchreport size=0 load 1.00 2.00 3.00
BenchmarkStartupVsBareWrite-2   	       1	16481363556 ns/op	     10000 bare-process-µs	      2000 plain-init-aws-µs	      1000 plain-init-mandoc-µs	      1500 plain-init-other-µs	      1200 plain-init-sqlite-µs	       300.0 plain-init-swampj-µs	     9000 plain-rest-µs	      1900 tagged-init-aws-µs	         0 tagged-init-mandoc-µs	      1400 tagged-init-other-µs	      1100 tagged-init-sqlite-µs	       300.0 tagged-init-swampj-µs	     2300 tagged-rest-µs	     15000 version-plain-µs	         1.500 version-plain/bare(target≤0.8)	     7000 version-µs	         0.700 version/bare(target≤0.8)
PASS
`

func TestRenderStartupBothBuildsWithPhases(t *testing.T) {
	results, _ := splitSaved([]byte(startupSample))
	var sel []row
	for _, r := range rows {
		if strings.Contains(r.what, "--version") || strings.Contains(r.what, "start-up phase") {
			sel = append(sel, r)
		}
	}
	var out bytes.Buffer
	render(&out, sel, nil, results)
	for what, want := range map[string][]string{
		"swampj --version, built with the tags (vs bare durable-write process)": {"7000 µs", "10.0 ms", "0.70", "≤ 0.8", "yes"},
		"swampj --version, plain go build (vs bare durable-write process)":      {"15.0 ms", "10.0 ms", "1.50", "≤ 0.8", "no"},
		"start-up phase, tags: AWS SDK package inits":                           {"1900 µs", "0.19"},
		"start-up phase, tags: exec, runtime, main, exit":                       {"2300 µs", "0.23"},
		"start-up phase, plain: AWS SDK package inits":                          {"2000 µs", "0.20"},
		"start-up phase, plain: SQLite package inits":                           {"1200 µs", "0.12"},
		"start-up phase, plain: man page renderer inits":                        {"1000 µs", "0.10"},
		"start-up phase, plain: swampj's package inits":                         {"300 µs", "0.03"},
		"start-up phase, plain: other package inits":                            {"1500 µs", "0.15"},
		"start-up phase, plain: exec, dynamic loader, runtime, main, exit":      {"9000 µs", "0.90"},
	} {
		found := false
		for _, l := range strings.Split(out.String(), "\n") {
			if f := strings.Split(l, "|"); strings.TrimSpace(f[0]) != what {
				continue
			}
			found = true
			for _, w := range want {
				if !strings.Contains(l, w) {
					t.Errorf("row %q lacks %q: %s", what, w, l)
				}
			}
		}
		if !found {
			t.Errorf("no row %q in\n%s", what, out.String())
		}
	}
}
