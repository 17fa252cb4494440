package main

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// Result is one benchmark result line of `go test -bench` output:
//
//	BenchmarkName/sub=1-2   1   123 ns/op   4.5 unit-a   6 unit-b
//
// Metrics maps each unit (the names given to b.ReportMetric, plus ns/op)
// to its value. Targets are the b.Logf("target: …") lines printed under it.
type Result struct {
	Name    string // without the -GOMAXPROCS suffix
	Metrics map[string]float64
	Targets []string
}

// Metric looks a metric up by name. A name written with its target, as
// "doctor/walk(target≤2)", is also found as "doctor/walk".
func (r *Result) Metric(name string) (float64, bool) {
	if v, ok := r.Metrics[name]; ok {
		return v, true
	}
	for k, v := range r.Metrics {
		if i := strings.IndexByte(k, '('); i > 0 && k[:i] == name {
			return v, true
		}
	}
	return 0, false
}

// MetricTarget is the target a metric's own name carries ("x/y(target≤2)"
// gives 2), if any.
func (r *Result) MetricTarget(name string) (float64, bool) {
	for k := range r.Metrics {
		i := strings.IndexByte(k, '(')
		if i <= 0 || k[:i] != name {
			continue
		}
		t := strings.TrimSuffix(k[i+1:], ")")
		t = strings.TrimPrefix(t, "target")
		t = strings.TrimLeft(t, "≤<=")
		if v, err := strconv.ParseFloat(t, 64); err == nil {
			return v, true
		}
	}
	return 0, false
}

// parse reads `go test -bench` output (plain, not -json) and returns its
// results in order. Lines it does not understand are skipped; a log line
// "    file_test.go:NN: target: …" right after a result (or before the next
// one) is attached to the most recent result of the same benchmark.
func parse(r io.Reader) []*Result {
	var out []*Result
	var last *Result
	var pending []string // target lines printed before their result line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if i := strings.Index(trimmed, "target:"); i >= 0 && !strings.HasPrefix(trimmed, "Benchmark") {
			t := strings.TrimSpace(trimmed[i+len("target:"):])
			if last != nil {
				last.Targets = append(last.Targets, t)
			} else {
				pending = append(pending, t)
			}
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			if strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "PASS") || strings.HasPrefix(line, "FAIL") {
				last = nil
			}
			continue
		}
		res := parseResult(line)
		if res == nil {
			// "BenchmarkX" alone (a parent of sub-benchmarks, or a name
			// printed before its logs): its logs follow.
			last = nil
			continue
		}
		res.Targets = append(res.Targets, pending...)
		pending = nil
		out = append(out, res)
		last = res
	}
	return out
}

// parseResult parses one result line, or returns nil if it is none.
func parseResult(line string) *Result {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 {
		return nil
	}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return nil
	}
	res := &Result{Name: trimProcs(f[0]), Metrics: map[string]float64{}}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil
		}
		res.Metrics[f[i+1]] = v
	}
	return res
}

// trimProcs drops the "-N" GOMAXPROCS suffix go test appends to a name.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}
