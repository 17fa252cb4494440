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
PASS
ok  	github.com/swampj/swampj/ops	12.3s
=== benchreport size=10000 load 4.00 5.00 6.00
BenchmarkCatalogRebuild-2   	       1	51426270827 ns/op	     16764 rebuild-1worker-ms	         6.231 rebuild-1worker/walk	     17288 rebuild-ms	         6.426 rebuild/walk	     14682 verify-ms	         0.8492 verify/rebuild	    100000 versions	      2690 walk-ms
BenchmarkDoctor-2   	       1	1 ns/op	     300.0 doctor-ms	     100.0 walk-ms	     3.000 doctor/walk(target≤2.5)	     500.0 checksums-ms	     125.0 hash-ms	     4.000 checksums/hash(target≤1.3)	     250.0 mdhash-ms	     2.000 checksums/mdhash	     2.000 mdhash/hash
BenchmarkMigrateWithCatalog
BenchmarkMigrateWithCatalog/versions=10000
BenchmarkMigrateWithCatalog/versions=10000-2         	       1	 1 ns/op	       120.0 migrate-ms	   100.0 migrate-walk-ms	  1.200 migrate/walk
    catalogproc_bench_test.go:245: target: every op/walk ≤ 1.5 (issue #16, target 1)
PASS
`

func TestParseReadsMetricsAndTargets(t *testing.T) {
	res := parse(strings.NewReader(sample))
	if len(res) != 5 {
		t.Fatalf("%d results, want 5: %+v", len(res), res)
	}
	w := res[0]
	if w.Name != "BenchmarkWrite64KiB/lib" || w.Metrics["ratio-min"] != 2.195 || w.Metrics["µs/write"] != 3295 {
		t.Fatalf("write result: %+v", w)
	}
	d := res[3]
	if v, ok := d.Metric("doctor/walk"); !ok || v != 3 {
		t.Fatalf("doctor/walk with its target in the name: %v %v", v, ok)
	}
	if v, ok := d.MetricTarget("doctor/walk"); !ok || v != 2.5 {
		t.Fatalf("target from the metric name: %v %v", v, ok)
	}
	m := res[4]
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
		{"write 64 KiB, Go API (vs bare durable write)", "-", []string{"3295 µs", "1501 µs", "2.19", "≤ 1", "no", "9"}},
		{"catalog rebuild, from empty (vs metadata walk)", "10000", []string{"17.29 s", "2.69 s", "6.43", "≤ 2", "no"}},
		{"doctor (vs metadata walk)", "10000", []string{"3.00", "≤ 2.5", "no"}},
		{"doctor --verify-checksums (vs hashing every raw)", "10000", []string{"500.0 ms", "125.0 ms", "4.00", "≤ 1.3", "no"}},
		{"doctor --verify-checksums (vs metadata read + hash)", "10000", []string{"500.0 ms", "250.0 ms", "2.00", "|-  "}},
		{"metadata read + hash (vs hashing every raw)", "10000", []string{"250.0 ms", "125.0 ms", "2.00"}},
		{"migrate --confirm (vs bare walk)", "10000", []string{"120.0 ms", "1.20", "≤ 1.5", "yes"}},
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
	if got := needed(sel, runs[3].bench, true); got != "^(BenchmarkMigratePhases)$" {
		t.Fatalf("sized run narrowed to %q", got)
	}
	if got := needed(sel, runs[0].bench, false); got != "" {
		t.Fatalf("write run not skipped: %q", got)
	}
	if got := needed(rows[:1], runs[0].bench, false); got != "^(BenchmarkWrite64KiB|BenchmarkWriteFsyncs)$" {
		t.Fatalf("write run narrowed to %q", got)
	}
}
