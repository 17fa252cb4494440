package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/report"
)

func init() {
	register(&cli.Command{
		Name:  "doctor",
		Usage: "find data an unclean shutdown damaged (zero-byte versions, bad latest pointers, stale catalog rows); --repair fixes it",
		Description: "Walks the data root and the catalog and reports, with a stable code each: versions swamp cannot\n" +
			"read (zero-byte or unparseable metadata.yaml, missing or truncated raw — swamp issue #3955), `latest`\n" +
			"pointing at an unreadable or missing version, catalog rows of versions that are not readable, catalog\n" +
			"latest flags that disagree with the readable latest, catalog copies an older swamp left under\n" +
			"{base}/{ns}/data, and staging directories of interrupted swampj writes. Without --repair nothing is\n" +
			"changed.\n\n" +
			"--repair shows the repair; --repair --confirm runs it as ONE journaled operation (a crash is finished or\n" +
			"undone by 'swampj recover'): unreadable versions move to {base}/.swampj-quarantine/{UTC stamp}/ (never\n" +
			"deleted), `latest` is pointed at the last readable version (its old content is kept in quarantine), and\n" +
			"the catalog loses the rows of the moved versions and gets is_latest / is_step_latest right. A model whose\n" +
			"swamp lock is held is skipped and reported.\n\n" +
			"EXIT STATUS: 0 when nothing is (left) to fix (also: all of it repaired); 1 when problems remain that the\n" +
			"repair or another swampj command fixes (error code doctor_findings); 3 when what is left needs a person\n" +
			"first (doctor_manual: the summary says what to do); 75 when the only problems left are in models whose lock\n" +
			"was busy. --json lists every finding, the outcome and the actions to take, in order.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "repair", Usage: "show the repair (changes nothing without --confirm)"},
			&cli.BoolFlag{Name: "confirm", Aliases: []string{"y", "yes"}, Usage: "with --repair: apply it"},
			&cli.BoolFlag{Name: "verify-checksums", Usage: "also read every raw file and compare its SHA-256 with metadata.yaml (reads all data; slow)"},
		},
		Action: runDoctor,
	})
	doctorDatastores() // swamp's spelling, `doctor datastores` (swamp.go)
}

func runDoctor(c *cli.Context) error {
	if c.Bool("confirm") && !c.Bool("repair") {
		return usageErr(errors.New("--confirm requires --repair"))
	}
	e := newEnv(c)
	dir, err := e.repoDir()
	if err != nil {
		return err
	}
	// One doctor for every datastore kind: a filesystem datastore's data
	// root and catalog, or an extension datastore's local cache.
	rep, err := ops.Doctor(c.Context, dir, doctor.Options{Common: host.Common{JournalLockTimeout: e.lockTO, Command: e.command(), Logger: e.out.logger(), FS: e.fs},
		Repair:         c.Bool("repair"),
		Confirm:        c.Bool("confirm"),
		VerifyChecksum: c.Bool("verify-checksums"),
		Progress:       e.out.progress(),
	})
	e.out.endProgress()
	if err != nil && !c.Bool("confirm") && errors.Is(err, context.Canceled) {
		// A check or a preview only reads: an interrupt leaves nothing.
		return withCode("interrupted", exitInterrupted, errors.New("interrupted during the check; nothing was changed"))
	}
	renderDoctorRemedies(rep)
	if rep != nil {
		for _, n := range rep.Notices {
			if n.Kind == doctor.NoticeWarning {
				e.out.warn(fmt.Sprintf("%s [remedy: %s]", n.Message, n.Remedy))
			}
		}
		if perr := e.out.result(rep, func(w io.Writer) { printDoctorReport(w, rep, e.out.verbose) }); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		return err
	}
	return doctorExit(rep)
}

// doctorExit is the doctor's exit status and error code, from what the run
// leaves (rep.Outcome): 0 clean or all repaired; 75 only busy models left;
// exitManual (doctor_manual) when what is left needs a person first; 1
// (doctor_findings) when the repair or another command fixes it.
func doctorExit(rep *doctor.Report) error {
	switch rep.Outcome {
	case doctor.OutcomeClean, doctor.OutcomeRepaired:
		return nil
	case doctor.OutcomeBusy:
		if rep.Mode == "repair" {
			return withCode("lock_timeout", exitLockTimeout, fmt.Errorf(
				"%d problem(s) left in models whose swamp lock stayed busy; run 'swampj doctor --repair --confirm' again when they are idle", rep.Remaining))
		}
	case doctor.OutcomeManual:
		return withCode(codeDoctorManual, exitManual, fmt.Errorf("%d problem(s) %s that only a person can fix: %s",
			rep.Remaining, map[bool]string{true: "remain", false: "found"}[rep.Mode == "repair"], personActions(rep)))
	}
	if rep.Mode == "check" && !repairActs(rep) {
		return withCode("doctor_findings", exitFailure, fmt.Errorf("%d problem(s) found; do what 'Next' lists", rep.Remaining))
	}
	return withCode("doctor_findings", exitFailure, fmt.Errorf("%d problem(s) %s", rep.Remaining, map[string]string{
		"check":   "found; preview the repair with 'swampj doctor --repair'",
		"preview": "found; apply the repair with 'swampj doctor --repair --confirm'",
		"repair":  "remain; see each finding's fix",
	}[rep.Mode]))
}

// repairActs reports whether the doctor's repair is one of the actions.
func repairActs(rep *doctor.Report) bool {
	for _, a := range rep.Actions {
		if a.Remedy == report.RemedyRepair {
			return true
		}
	}
	return false
}

// personActions names, in order, what a person must do (rep.Actions).
func personActions(rep *doctor.Report) string {
	var what []string
	for _, a := range rep.Actions {
		if a.Person {
			what = append(what, fmt.Sprintf("%s (%s, for %s)", a.Fix, a.Remedy, joinCodes(a.Codes)))
		}
	}
	return strings.Join(what, "; and ")
}

func joinCodes(cs []doctor.Code) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// printDoctorReport renders a report as text: where it looked, one line
// per check, one line per finding, what happened, what to do next
// (grouped by remedy), then the notes. verbose adds each finding's fix.
func printDoctorReport(w io.Writer, rep *doctor.Report, verbose bool) {
	if rep.Cache != nil {
		printCacheReport(w, rep)
		return
	}
	ns := fmt.Sprintf("namespace %q", rep.Namespace)
	if rep.Namespace == "" {
		ns = "solo, no namespace"
	}
	fmt.Fprintf(w, "Doctor: %s (%s)\n", rep.Repo, ns)
	fmt.Fprintf(w, "  data root: %s (%d item(s), %d version(s) checked)\n", rep.DataRoot, rep.Items, rep.Versions)
	if rep.OtherDataRoot != "" {
		fmt.Fprintf(w, "  also:      %s (%d item(s), %d version(s) checked; un-namespaced: swamp reads only the data root above while the namespace is set)\n",
			rep.OtherDataRoot, rep.OtherItems, rep.OtherVersions)
	}
	if rep.ChecksumsVerified {
		fmt.Fprintln(w, "  checksums: every raw read and compared with its metadata.yaml SHA-256")
	} else {
		fmt.Fprintln(w, "  checksums: not read (sizes only; a raw of the right size with the wrong bytes is not found: add --verify-checksums)")
	}
	fmt.Fprintf(w, "  catalog:   %s\n", rep.Catalog)
	printDoctorChecks(w, rep)
	for _, f := range rep.InFlight {
		fmt.Fprintf(w, "  in progress: %s\n", f.Message)
	}
	defer printDoctorNotes(w, rep)
	if len(rep.Findings) == 0 {
		if rep.ChecksumsVerified {
			fmt.Fprintln(w, "No problems found.")
		} else {
			fmt.Fprintln(w, "No problems found. Checksums were not verified: 'swampj doctor --verify-checksums' reads every raw and compares it with its SHA-256.")
		}
		return
	}
	fmt.Fprintf(w, "%d problem(s):\n", len(rep.Findings))
	// A screenful, not thousands of lines: at most findingsPerCode of each
	// code, the rest counted (-v and --json list every one).
	shown, hidden, order := map[string]int{}, map[string]int{}, []string{}
	for _, f := range rep.Findings {
		code := string(f.Code)
		if !verbose && shown[code] >= findingsPerCode {
			if hidden[code] == 0 {
				order = append(order, code)
			}
			hidden[code]++
			continue
		}
		shown[code]++
		subject := f.Path
		if f.Item != "" {
			subject = f.Item
			if f.Version > 0 {
				subject += fmt.Sprintf(" v%d", f.Version)
			}
			if f.ModelName != "" {
				subject += " (model " + f.ModelName + ")"
			}
		}
		fmt.Fprintf(w, "  %-22s %s [%s]: %s\n", f.Code, subject, f.Status, f.Message)
		if verbose {
			fmt.Fprintf(w, "      fix: %s\n", f.Fix)
		}
		if f.Reason != "" {
			fmt.Fprintf(w, "      skipped: %s\n", f.Reason)
		}
	}
	for _, code := range order {
		fmt.Fprintf(w, "  … and %d more %s (-v or --json lists every one)\n", hidden[code], code)
	}
	switch rep.Mode {
	case "check":
		fmt.Fprintln(w, "Nothing was changed.")
	case "preview":
		if len(rep.Moves) > 0 {
			fmt.Fprintf(w, "Would move %d path(s) into %s (nothing is deleted).\n", len(rep.Moves), rep.Quarantine)
		}
		fmt.Fprintln(w, "Nothing was changed. Apply the repair with 'swampj doctor --repair --confirm'.")
	case "repair":
		fixed := len(rep.Findings) - rep.Remaining
		if rep.IntentID > 0 {
			fmt.Fprintf(w, "Repaired %d problem(s) as intent %d", fixed, rep.IntentID)
			if len(rep.Moves) > 0 {
				fmt.Fprintf(w, "; moved %d path(s) into %s", len(rep.Moves), rep.Quarantine)
			}
			fmt.Fprintln(w, ".")
		} else {
			fmt.Fprintln(w, "Nothing was repaired.")
		}
		if rep.Remaining > 0 {
			fmt.Fprintf(w, "%d problem(s) remain.\n", rep.Remaining)
		}
	}
	printDoctorActions(w, rep)
}

// printDoctorNotes prints the notes (states that are not problems, what
// swamp's own doctor misreports) after the results.
// findingsPerCode is how many findings of one code the text report lists
// without -v.
const findingsPerCode = 5

func printDoctorNotes(w io.Writer, rep *doctor.Report) {
	for _, n := range rep.Notices {
		if n.Kind == doctor.NoticeNote {
			fmt.Fprintf(w, "note: %s [remedy: %s]\n", n.Message, n.Remedy)
		}
	}
}

// printDoctorChecks prints the doctor's own checks and swamp's, one line
// each, whether or not they found anything.
func printDoctorChecks(w io.Writer, rep *doctor.Report) {
	for _, c := range rep.Checks {
		mark := "ok  "
		if !c.Passed {
			mark = "FAIL"
		}
		var counts []string
		if c.Checked >= 0 {
			counts = append(counts, fmt.Sprintf("%d checked", c.Checked))
		}
		if c.Failed > 0 {
			counts = append(counts, fmt.Sprintf("%d failed", c.Failed))
		}
		if c.Fixed > 0 {
			counts = append(counts, fmt.Sprintf("%d repaired", c.Fixed))
		}
		fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("  %s %-15s %s", mark, c.ID, strings.Join(counts, ", ")), " "))
	}
	if len(rep.SwampChecks) > 0 {
		fmt.Fprintln(w, "  swamp's checks (as 'swamp doctor datastores' names them, computed on the real data root):")
		for _, c := range rep.SwampChecks {
			mark := "✓"
			if !c.Passed {
				mark = "✗"
			}
			fmt.Fprintf(w, "    %s %s: %s", mark, c.Check, c.Message)
			if !c.Passed && c.Check == doctor.SwampCheckHealth {
				switch {
				case rep.ReadOnly:
					fmt.Fprint(w, " (read-only media: a note, not a finding)")
				case rep.NotWritable:
					fmt.Fprint(w, " (not writable by this user: a note, not a finding)")
				}
			}
			fmt.Fprintln(w)
			if c.SwampDiffers != "" {
				fmt.Fprintf(w, "      (swamp differs: %s)\n", c.SwampDiffers)
			}
		}
	}
}

// printDoctorActions is the summary of what to do next, in order, a
// person's actions marked as such: an action for one kind of finding
// shows its fix; one for several shows its command (the findings' own
// fixes are under -v and in --json), or each distinct fix of a person's.
func printDoctorActions(w io.Writer, rep *doctor.Report) {
	if len(rep.Actions) == 0 {
		return
	}
	fmt.Fprintln(w, "Next:")
	for i, a := range rep.Actions {
		who := "swampj"
		if a.Person {
			who = "by hand"
		}
		what := a.Fix
		if len(a.Codes) > 1 {
			what = withRemedies("", a.Remedy, a.Then)
			what = strings.TrimPrefix(what, "; ")
			if a.Person || what == "" {
				what = "see each finding's fix ('swampj doctor -v' shows them)"
			}
		}
		fmt.Fprintf(w, "  %d. [%s, %s] %s (%s)\n", i+1, who, a.Remedy, what, joinCodes(a.Codes))
	}
}

// printCacheReport renders the doctor's report of an extension
// datastore's cache: the datastore and its cache, the notes (files the
// next pull fetches), each finding with what swamp would do next with it,
// what the run did.
func printCacheReport(w io.Writer, rep *doctor.Report) {
	c := rep.Cache
	fmt.Fprintf(w, "Doctor: %s (datastore %s, bucket %s", c.Repo, c.Type, c.Bucket())
	if c.Prefix() != "" {
		fmt.Fprintf(w, ", prefix %s", c.Prefix())
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "  cache:     %s (%d file(s); the index lists %d)\n", c.Dir, c.Files, c.IndexEntries)
	fast := "off (the next pull walks the index)"
	if c.FastPath {
		fast = "armed (the next pull fetches nothing unless the bucket's index changed)"
	}
	fmt.Fprintf(w, "  fast path: %s\n", fast)
	var notes []doctor.Notice
	for _, n := range rep.Notices {
		switch {
		case n.Kind == doctor.NoticeNote && n.Path != "":
			notes = append(notes, n)
		case n.Kind == doctor.NoticeNote:
			fmt.Fprintf(w, "note: %s\n", n.Message)
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "%d note(s): file(s) other checkouts wrote that this cache has not fetched yet; the next pull fetches them\n", len(notes))
		for i, n := range notes {
			if i == 5 {
				fmt.Fprintf(w, "  … and %d more (--json lists them all)\n", len(notes)-i)
				break
			}
			fmt.Fprintf(w, "  %s\n", n.Path)
		}
	}
	if len(rep.Findings) == 0 {
		if rep.Mode == "repair" {
			fmt.Fprintln(w, "No problems found in the cache: nothing to repair, nothing was changed.")
			return
		}
		fmt.Fprintln(w, "No problems found in the cache.")
		return
	}
	fmt.Fprintf(w, "%d problem(s):\n", len(rep.Findings))
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "  %-20s %s  [%s]\n", f.Code, f.Path, f.Status)
		fmt.Fprintf(w, "      %s\n", f.Message)
		fmt.Fprintf(w, "      next, swamp would %s it: %s\n", f.Next, f.NextSays)
		fmt.Fprintf(w, "      fix: %s\n", f.Fix)
		if f.Reason != "" {
			fmt.Fprintf(w, "      skipped: %s\n", f.Reason)
		}
	}
	switch rep.Mode {
	case "check":
		fmt.Fprintln(w, "Nothing was changed. Preview the repair with 'swampj doctor --repair'.")
	case "preview":
		for _, m := range rep.Moves {
			fmt.Fprintf(w, "  would move %s into quarantine\n", m.From)
		}
		for _, r := range c.Rewrites {
			fmt.Fprintf(w, "  would rewrite %s\n", r)
		}
		fmt.Fprintln(w, "Nothing was changed. Apply the repair with 'swampj doctor --repair --confirm' (it takes the bucket's lock).")
	case "repair":
		if rep.IntentID > 0 {
			fmt.Fprintf(w, "Repaired as intent %d under the bucket lock %s: %d file(s) moved into %s, %d latest pointer(s) rewritten.\n",
				rep.IntentID, c.Lock, len(rep.Moves), rep.Quarantine, len(c.Rewrites))
		} else {
			fmt.Fprintln(w, "Nothing was repaired: no finding is one swampj repairs; nothing was changed.")
		}
		if rep.Remaining > 0 {
			fmt.Fprintf(w, "%d problem(s) remain (see above).\n", rep.Remaining)
		}
	}
	printDoctorActions(w, rep)
}
