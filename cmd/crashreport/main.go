// Command crashreport runs every layer of the crash suite, writes
// crash-report.json in the module root and prints it as a table, then
// applies each deliberate protocol bug (a mutant) to a copy of the module
// and runs the crash tests that must catch it. It exits 1 if any layer of
// any protocol did not recover every case it checked, if a protocol has a
// layer the suite requires with nothing checked, or if a mutant survived.
//
//	go run ./cmd/crashreport            # the full suite (SWAMPJ_CRASH_FULL=1), images where possible
//	go run ./cmd/crashreport -short     # a few minutes: sampled cut points, a few images
//	go run ./cmd/crashreport -mutants=false
//
// The tests write their counts as JSON lines to $SWAMPJ_CRASH_REPORT
// (fsx/fsxtest.Count); this program only runs them and adds them up.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
)

// Protocols and layers, in the report's order.
var (
	protocols = []string{"version-write", "batch-write", "migrate", "reverse", "unset-migrate", "repair", "catalog-rebuild", "recovery", "concurrent-writes", "handle-writes", "wrapped-run"}
	layers    = []string{"cut", "powercut", "recovery-crash", "kill", "errors", "image"}
	// onlyLayers: a protocol checked in fewer layers than every one.
	// Writers of different models at once: pairs of cut
	// points beside a live writer, and real processes killed beside others.
	// A command wrapped by swampj run (swamp serve): the settling of a dead
	// run cut at every operation, the wrapper and the settling command
	// killed at their named points, power cuts of a wrapped serve.
	// Goroutines of one process writing through one write handle (group
	// commits, lazy catalog rows): the process cut, and power cuts, at
	// every operation (of the handle's writers, of a neighbour finishing
	// its parked intent, of three writes of one item), and power cuts of
	// a real host process on images.
	onlyLayers = map[string][]string{"concurrent-writes": {"cut", "kill"}, "handle-writes": {"cut", "powercut", "image"}, "wrapped-run": {"cut", "kill", "image"}}
)

// Cell is one protocol × layer. Every case checked either recovered (no
// open intent, and the oracle held) or was refused (recovery stopped on
// purpose and left the intent open, for a state the protocol cannot
// decide; Reasons counts them by reason, each a key of
// fsxtest.RefusalReasons): Recovered + Refused == Checked, or the cell
// fails.
type Cell struct {
	Checked   int            `json:"checked"`
	Recovered int            `json:"recovered"`
	Refused   int            `json:"refused"`
	Reasons   map[string]int `json:"reasons,omitempty"`
}

// failures lists what is wrong with the cell named k.
func (c Cell) failures(k string) []string {
	var out []string
	if n := c.Checked - c.Recovered - c.Refused; n != 0 {
		out = append(out, fmt.Sprintf("%s: %d of %d checked neither recovered nor were refused (recovered %d, refused %d)", k, n, c.Checked, c.Recovered, c.Refused))
	}
	sum := 0
	for r, n := range c.Reasons {
		sum += n
		if _, ok := fsxtest.RefusalReasons[r]; !ok {
			out = append(out, fmt.Sprintf("%s: %d refused for %q, which is not a reason the README lists (%v)", k, n, r, fsxtest.Reasons()))
		}
	}
	if sum != c.Refused {
		out = append(out, fmt.Sprintf("%s: %d refused but %d with a reason", k, c.Refused, sum))
	}
	return out
}

// Protocol is one row of the report.
type Protocol struct {
	Name   string          `json:"name"`
	Layers map[string]Cell `json:"layers"`
}

// Mutants is the mutant section of the report.
type Mutants struct {
	Total    int      `json:"total"`
	Caught   int      `json:"caught"`
	Names    []string `json:"names"`
	Survived []string `json:"survived,omitempty"`
	// Control is "passed" when every mutant's test selection passed on
	// the unmutated tree first, "failed" otherwise (then no mutant counts
	// as caught: a test that fails anyway proves nothing).
	Control string `json:"control"`
	// ControlFailures: the tests that failed in the control, or why it
	// could not run.
	ControlFailures []string `json:"controlFailures,omitempty"`
	// Results is each mutant's verdict; CaughtBy names the tests that
	// passed in the control and failed under the mutant.
	Results []MutantResult `json:"results"`
}

// MutantResult is one mutant's verdict.
type MutantResult struct {
	Name     string   `json:"name"`
	Caught   bool     `json:"caught"`
	CaughtBy []string `json:"caughtBy,omitempty"`
	Why      string   `json:"why,omitempty"`
}

// Report is crash-report.json.
type Report struct {
	// Commit is HEAD when the report was made; Dirty says tracked files
	// had uncommitted changes then (stale.go: when a report is stale).
	Commit    string     `json:"commit"`
	Dirty     bool       `json:"dirty"`
	Protocols []Protocol `json:"protocols"`
	Mutants   Mutants    `json:"mutants"`
	Mode      string     `json:"mode"`
	Images    string     `json:"images"`
	Seconds   float64    `json:"seconds"`
	Failures  []string   `json:"failures,omitempty"`
}

// The test runs of the layers: one go test per line.
var suites = []struct {
	pkgs []string
	run  string
}{
	{[]string{"./ops"}, "CrashAtEveryCutPoint|PowerCutAtEveryCutPoint|CrashDuringRecovery|RecoveryCrashConverges|FaultMatrix|ALICE"},
	{[]string{"./ops/internal/engine"}, "CutPoint|PowerCut|CrashDuringRecovery|ALICE"},
	{[]string{"./fsx/..."}, "PowerCut|ALICE"},
	{[]string{"./ops/wrapped"}, "CutPoint"},
	{[]string{"./cmd/swampj"}, "KillPoint|KillDuring|KillRandom|CrashImage"},
}

// required: the cells every run must have checked — every layer of every
// protocol, the real-kernel image layer only where the machine can make
// images (root, loop devices). (The batch's kill cell runs the test-only
// cmd/swampj/testdata/batchwrite: the CLI writes one version at a time.)
func required(images bool) map[string][]string {
	r := map[string][]string{}
	for _, p := range protocols {
		ls := layers
		if only, ok := onlyLayers[p]; ok {
			ls = only
		}
		for _, l := range ls {
			if l == "image" && !images {
				continue
			}
			if p == "wrapped-run" && l == "image" && os.Getenv("SWAMP_BIN") == "" {
				continue // power cuts of the real swamp serve need the real swamp
			}
			r[p] = append(r[p], l)
		}
	}
	return r
}

func main() {
	short := flag.Bool("short", false, "sampled cut points and a few images (the full suite enumerates every one)")
	withMutants := flag.Bool("mutants", true, "run the mutants")
	withLayers := flag.Bool("layers", true, "run the layers (false: only the mutants)")
	out := flag.String("out", "crash-report.json", "report file, relative to the module root")
	only := flag.String("mutant", "", "run only the mutant of this name (with -layers=false: to check one mutant; the report it writes is partial)")
	compare := flag.String("compare", "", "a committed report to check for staleness against the one made now (CI: git show HEAD:crash-report.json)")
	flag.Parse()
	root, err := moduleRoot()
	if err != nil {
		fatal(err)
	}
	start := time.Now()
	rep := &Report{Mode: "full"}
	if rep.Commit, rep.Dirty, err = gitState(root, filepath.ToSlash(*out)); err != nil {
		fatal(err)
	}
	if *short {
		rep.Mode = "short"
	}

	lines := filepath.Join(os.TempDir(), fmt.Sprintf("swampj-crash-%d.jsonl", os.Getpid()))
	_ = os.Remove(lines)
	defer os.Remove(lines)
	env := append(os.Environ(), "SWAMPJ_CRASH_REPORT="+lines)
	if !*short {
		env = append(env, "SWAMPJ_CRASH_FULL=1")
	}
	images, why := imagesPossible()
	rep.Images = why
	if images {
		env = append(env, "SWAMPJ_CRASH_IMAGES=1")
		if *short {
			env = append(env, "SWAMPJ_CRASH_IMAGES_CUTS=6")
		}
	} else {
		fmt.Printf("crashreport: real-kernel images skipped: %s\n", why)
	}
	if *withLayers {
		runSuites(root, env, *short, rep)
	}
	cells, err := readLines(lines)
	if err != nil {
		fatal(err)
	}
	tabulate(rep, cells, images, *withLayers)

	if *withMutants {
		rep.Mutants = runMutants(root, selectMutants(mutants, *only))
		for _, m := range rep.Mutants.Survived {
			rep.Failures = append(rep.Failures, "mutant not caught: "+m)
		}
		if rep.Mutants.Control != "passed" {
			rep.Failures = append(rep.Failures, fmt.Sprintf("mutant control run on the unmutated tree %s: %v", rep.Mutants.Control, rep.Mutants.ControlFailures))
		}
	}
	if *compare != "" {
		stale, err := compareWith(root, *compare, rep)
		if err != nil {
			fatal(err)
		}
		for _, s := range stale {
			rep.Failures = append(rep.Failures, "the committed crash report is stale: "+s)
		}
	}
	sort.Strings(rep.Failures)
	rep.Seconds = time.Since(start).Round(time.Second).Seconds()
	b, _ := json.MarshalIndent(rep, "", "  ")
	outPath := *out
	if !filepath.IsAbs(outPath) {
		outPath = filepath.Join(root, outPath)
	}
	if err := os.WriteFile(outPath, append(b, '\n'), 0o644); err != nil {
		fatal(err)
	}
	printTable(os.Stdout, rep)
	if len(rep.Failures) > 0 {
		fmt.Println("\nFAILED:")
		for _, f := range rep.Failures {
			fmt.Println("  " + f)
		}
		_ = os.Remove(lines) // os.Exit skips the deferred removal
		os.Exit(1)
	}
	fmt.Printf("\nevery layer of every protocol recovered; %d of %d mutants caught; %s written (%s)\n",
		rep.Mutants.Caught, rep.Mutants.Total, *out, time.Duration(rep.Seconds)*time.Second)
}

// tabulate puts the cells into rep's table of protocols by layers and adds
// the failures: a cell that failed, and a required cell the suites ran
// (withLayers) that checked nothing.
func tabulate(rep *Report, cells map[string]Cell, images, withLayers bool) {
	for _, p := range protocols {
		row := Protocol{Name: p, Layers: map[string]Cell{}}
		for _, l := range layers {
			row.Layers[l] = cells[p+"/"+l]
		}
		rep.Protocols = append(rep.Protocols, row)
	}
	for p, ls := range required(images) {
		if !withLayers {
			break
		}
		for _, l := range ls {
			if cells[p+"/"+l].Checked == 0 {
				rep.Failures = append(rep.Failures, fmt.Sprintf("%s × %s: nothing checked", p, l))
			}
		}
	}
	known := map[string]bool{}
	for _, p := range protocols {
		for _, l := range layers {
			known[p+"/"+l] = true
		}
	}
	for k, c := range cells {
		rep.Failures = append(rep.Failures, c.failures(k)...)
		if !known[k] {
			// A test counting under a name the table does not have would
			// vanish from the report.
			rep.Failures = append(rep.Failures, fmt.Sprintf("%s: a cell of no protocol or layer of the report (%d checked): count it under one", k, c.Checked))
		}
	}
}

func readLines(path string) (map[string]Cell, error) {
	cells := map[string]Cell{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return cells, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l fsxtest.ReportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s: %v: %s", path, err, sc.Text())
		}
		k := l.Protocol + "/" + l.Layer
		c := cells[k]
		c.Checked += l.Checked
		c.Recovered += l.Recovered
		c.Refused += l.Refused
		for r, n := range l.Reasons {
			if c.Reasons == nil {
				c.Reasons = map[string]int{}
			}
			c.Reasons[r] += n
		}
		cells[k] = c
	}
	return cells, sc.Err()
}

func printTable(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "\ncrash report (%s mode): recovered+refused/checked\n\n", rep.Mode)
	fmt.Fprintf(w, "%-18s", "protocol")
	for _, l := range layers {
		fmt.Fprintf(w, " %15s", l)
	}
	fmt.Fprintln(w)
	tot := Cell{Reasons: map[string]int{}}
	for _, p := range rep.Protocols {
		fmt.Fprintf(w, "%-18s", p.Name)
		for _, l := range layers {
			c := p.Layers[l]
			tot.Checked += c.Checked
			tot.Recovered += c.Recovered
			tot.Refused += c.Refused
			for r, n := range c.Reasons {
				tot.Reasons[r] += n
			}
			fmt.Fprintf(w, " %15s", c.String())
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\ntotal: %d crash states checked: %d recovered, %d refused %v; mutants caught: %d of %d %v (control: %s)\n",
		tot.Checked, tot.Recovered, tot.Refused, tot.Reasons, rep.Mutants.Caught, rep.Mutants.Total, rep.Mutants.Names, rep.Mutants.Control)
	if rep.Images != "" {
		fmt.Fprintf(w, "images: %s\n", rep.Images)
	}
}

// String is the cell as the table shows it: recovered+refused/checked
// ("-": nothing checked).
func (c Cell) String() string {
	if c.Checked == 0 {
		return "-"
	}
	return fmt.Sprintf("%d+%d/%d", c.Recovered, c.Refused, c.Checked)
}

// imagesPossible: root, loop devices and mkfs.ext4.
func imagesPossible() (bool, string) {
	if os.Geteuid() != 0 {
		return false, "not root (loop devices and mount need it)"
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return false, "no loop devices (/dev/loop-control)"
	}
	for _, tool := range []string{"mkfs.ext4", "losetup", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return false, tool + " not found"
		}
	}
	return true, "ext4 on loop devices"
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the swampj module")
	}
	return filepath.Dir(mod), nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "crashreport:", err)
	os.Exit(1)
}

// runSuites runs every layer's go test selection with env, noting each
// selection that fails in rep.
func runSuites(root string, env []string, short bool, rep *Report) {
	for _, s := range suites {
		args := append([]string{"test", "-count=1", "-timeout=30m", "-run", s.run}, s.pkgs...)
		if short {
			args = append(args, "-short")
		}
		fmt.Printf("== go %s\n", strings.Join(args, " "))
		t0 := time.Now()
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = root, env
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stdout, &buf), io.MultiWriter(os.Stderr, &buf)
		if err := cmd.Run(); err != nil {
			rep.Failures = append(rep.Failures, fmt.Sprintf("go %s: %v", strings.Join(args, " "), err))
		}
		fmt.Printf("   (%s)\n", time.Since(t0).Round(time.Second))
	}
}
