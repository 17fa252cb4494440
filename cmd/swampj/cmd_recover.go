package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/recover"
)

func init() {
	register(&cli.Command{
		Name:  "recover",
		Usage: "finish (or with --rollback undo) whatever an interrupted swampj left half done",
		Description: "Reads the intent journal and drives every open intent to completion, deciding each step by\n" +
			"looking at the disk. Safe to run at any time and any number of times; with no journal it does\n" +
			"nothing and creates nothing. Other tools can run it as a startup hook.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "rollback", Usage: "undo open intents instead of finishing them (newest first)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "show what each open intent's steps look like on disk; change nothing"},
		},
		Action: runRecover,
	})
}

func runRecover(c *cli.Context) error {
	e := newEnv(c)
	dir, err := e.repoDir()
	var lost *repo.ConfigLostError
	if errors.As(err, &lost) {
		// The journal is there: recover.Run recovers it (and says if
		// .swamp.yaml is still missing afterwards).
		dir, err = lost.Dir, nil
	}
	if err != nil {
		return err
	}
	rep, err := recover.Run(c.Context, dir, recover.Options{Common: host.Common{FS: e.fs, JournalLockTimeout: e.lockTO, Command: e.command(), Logger: e.out.logger()},
		Rollback: c.Bool("rollback"),
		DryRun:   c.Bool("dry-run"),
		Progress: e.out.progress(),
	})
	e.out.endProgress()
	var blocked *recover.BlockedError
	if err != nil && !errors.As(err, &blocked) {
		if rep != nil && len(rep.Intents) > 0 && e.json {
			_ = e.out.result(rep, func(io.Writer) {})
		}
		return err
	}
	if perr := printRecover(e, rep); perr != nil {
		return perr
	}
	return err
}

// printRecover renders what recover did, or with --dry-run what it would
// do, step by step.
func printRecover(e *env, rep *recover.Report) error {
	for _, s := range rep.WrappedRuns {
		e.out.warn(s.Sentence())
	}
	return e.out.result(rep, func(w io.Writer) {
		for _, p := range rep.RemovedStages {
			fmt.Fprintf(w, "Removed %s: staged by a write that died before its intent was journaled (never published)\n", p)
		}
		if rep.JournalSetAside != "" {
			fmt.Fprintf(w, "The journal %s was damaged (%s): moved it to %s (nothing is deleted); the next swampj command starts a fresh journal.\n",
				rep.Journal, rep.JournalDamage, rep.JournalSetAside)
			fmt.Fprintln(w, "The interrupted operations it may have recorded are unknown: swampj plans from the disk, so run any interrupted "+
				"swampj command again to finish it, then check with 'swampj doctor' and 'swampj catalog verify'.")
			return
		}
		if rep.WrappedRunsPending > 0 {
			fmt.Fprintf(w, "Would settle %d wrapped run(s) that ended without their final barrier (doctor and repair what each changed)\n", rep.WrappedRunsPending)
		}
		if len(rep.Intents) == 0 && len(rep.WrappedRuns) == 0 && rep.WrappedRunsPending == 0 {
			fmt.Fprintln(w, "Nothing to recover: no interrupted operation in the journal.")
			return
		}
		for _, in := range rep.Intents {
			if rep.DryRun {
				if b := in.Blocked; b != nil {
					fmt.Fprintf(w, "Intent %d (%s, %s): would go %s, and stop at step %d (%s): %s\n", in.ID, in.Kind, in.Summary, in.Direction, b.Index, b.Observed, b.Detail)
				} else {
					fmt.Fprintf(w, "Intent %d (%s, %s): would go %s\n", in.ID, in.Kind, in.Summary, in.Direction)
				}
				for _, s := range in.Steps {
					detail := ""
					if s.Detail != "" {
						detail = " — " + s.Detail
					}
					fmt.Fprintf(w, "  %3d  %-9s %s%s\n", s.Index, s.Observed, s.Description, detail)
				}
				continue
			}
			fmt.Fprintf(w, "Intent %d (%s, %s): %s (%d steps applied, %d undone, %d already in place)\n",
				in.ID, in.Kind, in.Summary, in.Status, in.Applied, in.Undone, in.Skipped)
			if in.CatalogStale != "" {
				fmt.Fprintf(w, "  the catalog could not follow (%s): run 'swampj catalog rebuild --confirm' where it can be written\n", in.CatalogStale)
			}
		}
	})
}
