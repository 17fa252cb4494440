package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/ops"
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
			"EXIT STATUS: 0 when nothing is (left) to fix; 1 when problems remain (error code doctor_findings), with\n" +
			"every finding listed under --json; 75 when the only problems left are in models whose lock was busy.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "repair", Usage: "show the repair (changes nothing without --confirm)"},
			&cli.BoolFlag{Name: "confirm", Aliases: []string{"y", "yes"}, Usage: "with --repair: apply it"},
			&cli.BoolFlag{Name: "verify-checksums", Usage: "also read every raw file and compare its SHA-256 with metadata.yaml (reads all data; slow)"},
		},
		Action: runDoctor,
	})
	doctorDatastores() // swamp's spelling, `doctor datastores` (cmd_swamp.go)
}

func runDoctor(c *cli.Context) error {
	if c.Bool("confirm") && !c.Bool("repair") {
		return usageErr(errors.New("--confirm requires --repair"))
	}
	e := newEnv(c)
	r, err := e.loadRepo(c.Bool("confirm"))
	if err != nil {
		return err
	}
	rep, err := ops.Doctor(c.Context, e.fs, r, ops.DoctorOptions{
		Repair:         c.Bool("repair"),
		Confirm:        c.Bool("confirm"),
		LockTimeout:    e.lockTO,
		VerifyChecksum: c.Bool("verify-checksums"),
		Command:        e.command(),
		Logger:         e.out.logger(),
		Progress:       e.out.progress(),
	})
	e.out.endProgress()
	renderDoctorRemedies(rep)
	if rep != nil {
		for _, w := range rep.Warnings {
			e.out.warn(w)
		}
		if perr := e.out.result(rep, func(w io.Writer) { printDoctorReport(w, rep) }); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		return err
	}
	switch {
	case rep.Clean():
		return nil
	case rep.Mode == "repair" && rep.OnlySkipped():
		return withCode("lock_timeout", exitLockTimeout, fmt.Errorf(
			"%d problem(s) left in models whose swamp lock stayed busy; run 'swampj doctor --repair --confirm' again when they are idle", rep.Remaining))
	}
	return withCode("doctor_findings", exitFailure, fmt.Errorf("%d problem(s) %s", rep.Remaining, map[string]string{
		"check":   "found; preview the repair with 'swampj doctor --repair'",
		"preview": "found; apply the repair with 'swampj doctor --repair --confirm'",
		"repair":  "remain; see each finding's fix",
	}[rep.Mode]))
}

// printDoctorReport renders a report as text: one block per finding, then
// what happened.
func printDoctorReport(w io.Writer, rep *ops.DoctorReport) {
	ns := fmt.Sprintf("namespace %q", rep.Namespace)
	if rep.Namespace == "" {
		ns = "solo, no namespace"
	}
	fmt.Fprintf(w, "Doctor: %s (%s)\n", rep.Repo, ns)
	fmt.Fprintf(w, "  data root: %s (%d item(s), %d version(s) checked)\n", rep.DataRoot, rep.Items, rep.Versions)
	if rep.ChecksumsVerified {
		fmt.Fprintln(w, "  checksums: every raw read and compared with its metadata.yaml SHA-256")
	} else {
		fmt.Fprintln(w, "  checksums: not read (sizes only; a raw of the right size with the wrong bytes is not found: add --verify-checksums)")
	}
	fmt.Fprintf(w, "  catalog:   %s\n", rep.Catalog)
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	for _, c := range rep.Checks {
		mark := "ok  "
		if !c.Passed {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %-15s", mark, c.ID)
		if c.Checked >= 0 {
			fmt.Fprintf(w, " %d checked", c.Checked)
		}
		if c.Failed > 0 {
			fmt.Fprintf(w, ", %d failed", c.Failed)
		}
		if c.Fixed > 0 {
			fmt.Fprintf(w, ", %d repaired", c.Fixed)
		}
		fmt.Fprintln(w)
	}
	if len(rep.SwampChecks) > 0 {
		fmt.Fprintln(w, "  swamp's checks (as 'swamp doctor datastores' names them, computed on the real data root):")
		for _, c := range rep.SwampChecks {
			mark := "✓"
			if !c.Passed {
				mark = "✗"
			}
			fmt.Fprintf(w, "    %s %s: %s\n", mark, c.Check, c.Message)
			if c.SwampDiffers != "" {
				fmt.Fprintf(w, "      (swamp differs: %s)\n", c.SwampDiffers)
			}
		}
	}
	for _, f := range rep.InFlight {
		fmt.Fprintf(w, "  in progress: %s\n", f.Message)
	}
	if len(rep.Findings) == 0 {
		if rep.ChecksumsVerified {
			fmt.Fprintln(w, "No problems found.")
		} else {
			fmt.Fprintln(w, "No problems found. Checksums were not verified: 'swampj doctor --verify-checksums' reads every raw and compares it with its SHA-256.")
		}
		return
	}
	fmt.Fprintf(w, "%d problem(s):\n", len(rep.Findings))
	for _, f := range rep.Findings {
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
		fmt.Fprintf(w, "  %-24s %s  [%s]\n", f.Code, subject, f.Status)
		fmt.Fprintf(w, "      %s\n", f.Message)
		fmt.Fprintf(w, "      fix: %s\n", f.Fix)
		if f.Reason != "" {
			fmt.Fprintf(w, "      skipped: %s\n", f.Reason)
		}
	}
	switch rep.Mode {
	case "check":
		fmt.Fprintln(w, "Nothing was changed. Preview the repair with 'swampj doctor --repair'.")
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
			fmt.Fprintf(w, "%d problem(s) remain (see their fix above).\n", rep.Remaining)
		}
	}
}
