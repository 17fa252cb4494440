package main

import (
	"strings"
	"testing"
)

// staleReport is a small report with every kind of layer.
func staleReport(mode string, images bool) *Report {
	img := Cell{}
	if images {
		img = Cell{Checked: 6, Recovered: 6}
	}
	return &Report{
		Commit: "0123456789abcdef0123456789abcdef01234567", Mode: mode,
		Protocols: []Protocol{{Name: "migrate", Layers: map[string]Cell{
			"cut":      {Checked: 68, Recovered: 68},
			"powercut": {Checked: 607, Recovered: 551, Refused: 56, Reasons: map[string]int{"rename-left-both-names": 28, "rename-left-neither-name": 28}},
			"kill":     {Checked: 45, Recovered: 45},
			"image":    img,
		}}},
		Mutants: Mutants{Total: 2, Caught: 2, Names: []string{"a", "b"}, Control: "passed"},
	}
}

func TestStaleness(t *testing.T) {
	for _, c := range []struct {
		name      string
		change    func(committed, fresh *Report)
		ancestor  bool
		changed   []string
		wantStale string // "" : fresh
	}{
		{name: "the same report", ancestor: true},
		{name: "only the report and docs changed since", ancestor: true, changed: []string{"crash-report.json", "README.md", "ops/faultmatrix_test.go"}},
		{name: "kill and image counts vary", ancestor: true, change: func(c, f *Report) {
			f.Protocols[0].Layers["kill"] = Cell{Checked: 44, Recovered: 44}
			f.Protocols[0].Layers["image"] = Cell{Checked: 5, Recovered: 5}
		}},
		{name: "counts of another mode are not compared", ancestor: true, change: func(c, f *Report) {
			f.Mode = "short"
			f.Protocols[0].Layers["cut"] = Cell{Checked: 20, Recovered: 20}
		}},
		{name: "no images on the regenerating machine", ancestor: true, change: func(c, f *Report) {
			f.Protocols[0].Layers["image"] = Cell{}
		}},
		{name: "no commit named", ancestor: false, change: func(c, f *Report) { c.Commit = "" }, wantStale: "names no commit"},
		{name: "commit not an ancestor", ancestor: false, wantStale: "not an ancestor"},
		{name: "made from a dirty tree", ancestor: true, change: func(c, f *Report) { c.Dirty = true }, wantStale: "uncommitted changes"},
		{name: "a protocol file changed", ancestor: true, changed: []string{"crash-report.json", "journal/journal.go"}, wantStale: "protocol files changed after the report's commit 0123456789ab: journal/journal.go"},
		{name: "the mutant list changed", ancestor: true, changed: []string{"cmd/crashreport/mutants.go"}, wantStale: "cmd/crashreport/mutants.go"},
		{name: "an enumerated count differs", ancestor: true, change: func(c, f *Report) {
			f.Protocols[0].Layers["cut"] = Cell{Checked: 70, Recovered: 70}
		}, wantStale: "migrate/cut: 68+0/68 committed, 70+0/70 regenerated"},
		{name: "refusals move", ancestor: true, change: func(c, f *Report) {
			f.Protocols[0].Layers["powercut"] = Cell{Checked: 607, Recovered: 607}
		}, wantStale: "refusal reasons"},
		{name: "a layer no longer checked", ancestor: true, change: func(c, f *Report) {
			f.Protocols[0].Layers["kill"] = Cell{}
		}, wantStale: "migrate/kill: 45+0/45 checked in the committed report, - regenerated"},
		{name: "a committed cell that did not hold", ancestor: true, change: func(c, f *Report) {
			c.Protocols[0].Layers["kill"] = Cell{Checked: 45, Recovered: 44}
		}, wantStale: "committed report: migrate/kill"},
		{name: "other mutants", ancestor: true, change: func(c, f *Report) {
			f.Mutants.Names = []string{"a", "b", "c"}
			f.Mutants.Total, f.Mutants.Caught = 3, 3
		}, wantStale: "mutants [a b] committed"},
		{name: "a committed control that failed", ancestor: true, change: func(c, f *Report) { c.Mutants.Control = "failed" }, wantStale: `control "failed"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			committed, fresh := staleReport("full", true), staleReport("full", true)
			if c.change != nil {
				c.change(committed, fresh)
			}
			got := strings.Join(staleness(committed, fresh, c.ancestor, c.changed), "\n")
			switch {
			case c.wantStale == "" && got != "":
				t.Fatalf("stale: %s", got)
			case c.wantStale != "" && !strings.Contains(got, c.wantStale):
				t.Fatalf("got %q, want it to say %q", got, c.wantStale)
			}
		})
	}
}

func TestProtocolFile(t *testing.T) {
	for p, want := range map[string]bool{
		"ops/write.go": true, "ops/internal/session/exec.go": true, "ops/doctor/doctor.go": true, "fsx/durable.go": true,
		"journal/journal.go": true, "catalog/create.go": true, "recover/recover.go": true, "cmd/swampj/cmd_data.go": true,
		"cmd/crashreport/mutants.go": true,
		"ops/write_test.go":          false, "README.md": false, "crash-report.json": false, "cmd/crashreport/main.go": false,
		"cmd/swampj/testdata/batchwrite/main.go": false, "fsx/fsxtest/tree.go": false,
	} {
		if got := protocolFile(p); got != want {
			t.Errorf("protocolFile(%s) = %v, want %v", p, got, want)
		}
	}
}
