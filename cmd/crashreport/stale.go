package main

// When crash-report.json is stale. The committed report names the commit
// it was made from (Report.Commit, Report.Dirty). CI's crash step
// regenerates the report and compares it with the committed one
// (-compare FILE); the committed report is stale, and CI fails, when:
//
//   - it names no commit, names one that is not an ancestor of HEAD, or was
//     made from a worktree with uncommitted changes to tracked files;
//   - a protocol file (protocolFile: any non-test Go source of the engine —
//     fsx, journal, catalog, recover, ops, cmd/swampj; not fsx/fsxtest — or
//     the mutant list)
//     changed between the named commit and HEAD;
//   - the regenerated report differs from it in anything but the counts
//     sampling may change: the same protocols and layers must be checked
//     (a cell with nothing checked in one and something in the other
//     differs), every cell holds (recovered + refused == checked) in both,
//     with the same refusal reasons, and the same mutants, all caught, with
//     a passing control. Counts are compared exactly only between reports
//     of the same mode and only in the layers that enumerate their cases
//     (cut, powercut, recovery-crash, errors); kill and image cases are
//     timed or random and only their shape is compared, and the image
//     layer only where both machines could make images.
//
// So the report stays fresh exactly while nothing it measured changed: it
// is regenerated (a full run on a committed tree) and committed alone after
// the last protocol change.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
)

// exactLayers enumerate their cases (every cut point, every crash state,
// every injected operation): in one mode, the same code checks the same
// number of cases.
var exactLayers = map[string]bool{"cut": true, "powercut": true, "recovery-crash": true, "errors": true}

// protocolFile reports whether a change to path (slash-separated,
// relative to the module root) changes what the crash report measures.
func protocolFile(path string) bool {
	if path == "cmd/crashreport/mutants.go" {
		return true
	}
	if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "/testdata/") ||
		strings.HasPrefix(path, "fsx/fsxtest/") {
		return false // tests and their helpers: what they check shows in the regenerated cells
	}
	for _, dir := range []string{"fsx/", "journal/", "catalog/", "recover/", "ops/", "cmd/swampj/"} {
		if strings.HasPrefix(path, dir) {
			return true
		}
	}
	return false
}

// staleness lists why committed is stale against fresh, a report just
// regenerated from HEAD. changed are the files changed between
// committed.Commit and HEAD (nil when the commit is unknown: ancestor
// false then says why).
func staleness(committed, fresh *Report, ancestor bool, changed []string) []string {
	var out []string
	switch {
	case committed.Commit == "":
		return []string{"the committed report names no commit (made before reports named one): regenerate it"}
	case !ancestor:
		return []string{fmt.Sprintf("the committed report's commit %s is not an ancestor of HEAD (or not in this clone's history)", committed.Commit)}
	case committed.Dirty:
		out = append(out, fmt.Sprintf("the committed report was made from a worktree with uncommitted changes (on %s): regenerate it from a committed tree", committed.Commit))
	}
	var protocol []string
	for _, f := range changed {
		if protocolFile(f) {
			protocol = append(protocol, f)
		}
	}
	if len(protocol) > 0 {
		sort.Strings(protocol)
		out = append(out, fmt.Sprintf("protocol files changed after the report's commit %s: %s", short(committed.Commit), strings.Join(protocol, ", ")))
	}
	images := committed.imagesChecked() && fresh.imagesChecked()
	sameMode := committed.Mode == fresh.Mode
	cells := func(r *Report) map[string]Cell {
		m := map[string]Cell{}
		for _, p := range r.Protocols {
			for l, c := range p.Layers {
				m[p.Name+"/"+l] = c
			}
		}
		return m
	}
	old, now := cells(committed), cells(fresh)
	var keys []string
	for k := range old {
		keys = append(keys, k)
	}
	for k := range now {
		if _, ok := old[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		layer := k[strings.LastIndex(k, "/")+1:]
		o, n := old[k], now[k]
		if layer == "image" && !images {
			continue
		}
		for _, c := range []struct {
			which string
			cell  Cell
		}{{"committed", o}, {"regenerated", n}} {
			if fs := c.cell.failures(k); len(fs) > 0 {
				out = append(out, fmt.Sprintf("%s report: %s", c.which, strings.Join(fs, "; ")))
			}
		}
		switch {
		case (o.Checked == 0) != (n.Checked == 0):
			out = append(out, fmt.Sprintf("%s: %s checked in the committed report, %s regenerated", k, o.String(), n.String()))
		case !reflect.DeepEqual(reasonKeys(o), reasonKeys(n)):
			out = append(out, fmt.Sprintf("%s: refusal reasons %v committed, %v regenerated", k, reasonKeys(o), reasonKeys(n)))
		case sameMode && exactLayers[layer] && (o.Checked != n.Checked || o.Recovered != n.Recovered || o.Refused != n.Refused):
			out = append(out, fmt.Sprintf("%s: %s committed, %s regenerated (the %s layer enumerates its cases: same code, same counts)", k, o.String(), n.String(), layer))
		}
	}
	cm, fm := committed.Mutants, fresh.Mutants
	switch {
	case !reflect.DeepEqual(cm.Names, fm.Names):
		out = append(out, fmt.Sprintf("mutants %v committed, %v regenerated", cm.Names, fm.Names))
	case cm.Caught != cm.Total || cm.Control != "passed":
		out = append(out, fmt.Sprintf("the committed report's mutants: %d of %d caught, control %q", cm.Caught, cm.Total, cm.Control))
	case fm.Caught != fm.Total || fm.Control != "passed":
		out = append(out, fmt.Sprintf("the regenerated report's mutants: %d of %d caught, control %q", fm.Caught, fm.Total, fm.Control))
	}
	if len(committed.Failures) > 0 {
		out = append(out, "the committed report records failures: "+strings.Join(committed.Failures, "; "))
	}
	return out
}

func reasonKeys(c Cell) []string {
	var out []string
	for r, n := range c.Reasons {
		if n > 0 {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// imagesChecked: the report's machine made images (some image cell
// checked something).
func (r *Report) imagesChecked() bool {
	for _, p := range r.Protocols {
		if p.Layers["image"].Checked > 0 {
			return true
		}
	}
	return false
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// gitState is HEAD's commit and whether tracked files other than the
// report itself have uncommitted changes.
func gitState(root, report string) (commit string, dirty bool, err error) {
	out, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		return "", false, err
	}
	st, err := git(root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return "", false, err
	}
	for _, l := range strings.Split(st, "\n") {
		if len(l) > 3 && filepath.ToSlash(strings.TrimSpace(l[3:])) != report {
			dirty = true
		}
	}
	return strings.TrimSpace(out), dirty, nil
}

// compareWith reads the committed report at path and returns why it is
// stale against fresh (made from HEAD in root).
func compareWith(root, path string, fresh *Report) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var committed Report
	if err := json.Unmarshal(b, &committed); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	ancestor := false
	var changed []string
	if committed.Commit != "" {
		if _, err := git(root, "merge-base", "--is-ancestor", committed.Commit, "HEAD"); err == nil {
			ancestor = true
			out, err := git(root, "diff", "--name-only", committed.Commit, "HEAD")
			if err != nil {
				return nil, err
			}
			changed = strings.Fields(out)
		}
	}
	return staleness(&committed, fresh, ancestor, changed), nil
}

func git(root string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out), nil
}
