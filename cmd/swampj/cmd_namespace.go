package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/report"
)

// `swampj datastore namespace set|unset|migrate|list`. This file parses
// flags, calls package migrate and renders; the behaviour lives in
// ops/migrate/namespace.go and ops/migrate/migrate.go.

func init() {
	g := datastoreGroup()
	g.Subcommands = append(g.Subcommands, &cli.Command{
		Name:  "namespace",
		Usage: "set, unset, list namespaces and migrate data into or out of one",
		Description: "Every change is one journaled intent: after a crash, 'swampj recover' finishes it,\n" +
			"'swampj recover --rollback' undoes it, and running the command again finishes it too.\n\n" +
			"Locks: --lock-timeout bounds the wait for another swampj process (the journal). migrate and\n" +
			"unset --migrate also take swamp's global datastore lock and wait for live per-model locks;\n" +
			"that wait is bounded by SWAMP_LOCK_TIMEOUT_MS (default 60000), as in swamp. A lock timeout\n" +
			"exits 75.",
		Subcommands: []*cli.Command{
			{
				Name:      "set",
				Usage:     "configure a namespace in .swamp.yaml and register its manifest (moves no data)",
				ArgsUsage: "SLUG",
				Action:    runNamespaceSet,
			},
			{
				Name:  "unset",
				Usage: "remove the namespace from .swamp.yaml (with --migrate, move the data back first); previews without --confirm",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "migrate", Usage: "move the namespace's data back to the un-namespaced layout and remove its manifest, in one intent"},
					confirmFlag(),
				},
				Action: runNamespaceUnset,
			},
			{
				Name:  "migrate",
				Usage: "move the data into the configured namespace (or back with --reverse); previews without --confirm",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "reverse", Usage: "move {base}/{ns}/... back to {base}/..."},
					confirmFlag(),
				},
				Action: runNamespaceMigrate,
			},
			{
				Name:   "list",
				Usage:  "list the namespaces registered under the datastore base",
				Action: runNamespaceList,
			},
		},
	})
}

// datastoreGroup returns the `datastore` command, registering it the first
// time a command file asks for it, so several files can add subcommands.
func datastoreGroup() *cli.Command {
	for _, c := range commands {
		if c.Name == "datastore" {
			return c
		}
	}
	c := &cli.Command{Name: "datastore", Usage: "operations on the whole datastore"}
	register(c)
	return c
}

func confirmFlag() cli.Flag {
	return &cli.BoolFlag{Name: "confirm", Aliases: []string{"y", "yes"}, Usage: "execute; without it only a preview is shown"}
}

func namespaceOptions(e *env) migrate.NamespaceOptions {
	return migrate.NamespaceOptions{Common: host.Common{FS: e.fs, JournalLockTimeout: e.lockTO, Command: e.command(), Logger: e.out.logger()}}
}

func runNamespaceSet(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr(fmt.Errorf("namespace set takes one SLUG"))
	}
	e := newEnv(c)
	r, err := e.loadRepo(true)
	if err != nil {
		return err
	}
	res, err := migrate.SetNamespace(c.Context, r, c.Args().First(), namespaceOptions(e))
	if err != nil {
		return err
	}
	res.Warning = withRemedy(res.Warning, res.WarningRemedy)
	return e.out.result(res, func(w io.Writer) {
		printRecovered(w, res.Recovered)
		if res.IntentID == 0 {
			fmt.Fprintf(w, "Namespace %q is set.\n", res.Namespace)
			return
		}
		fmt.Fprintf(w, "Namespace set to %q (datastore: %s).\n%s\n", res.Namespace, res.DatastorePath, res.Warning)
	})
}

func runNamespaceUnset(c *cli.Context) error {
	if c.Bool("migrate") {
		return runMigration(c, migrate.MigrateOptions{Unset: true, Confirm: c.Bool("confirm")})
	}
	e := newEnv(c)
	confirm := c.Bool("confirm")
	r, err := e.loadRepo(confirm)
	if err != nil {
		return err
	}
	if !confirm {
		p, err := migrate.PreviewUnsetNamespace(r, host.Common{FS: e.fs})
		if err != nil {
			return err
		}
		return e.out.result(p, func(w io.Writer) {
			fmt.Fprintf(w, "Unset preview: would remove namespace %q from %s. Its data in %s and its manifest stay where they are "+
				"('swampj datastore namespace unset --migrate' previews moving the data back).\n", p.Namespace, p.ConfigPath, p.DataPath)
			fmt.Fprintln(w, "Add --confirm to execute: swampj datastore namespace unset --confirm")
		})
	}
	res, err := migrate.UnsetNamespace(c.Context, r, namespaceOptions(e))
	if err != nil {
		return err
	}
	return e.out.result(res, func(w io.Writer) {
		printRecovered(w, res.Recovered)
		if res.PreviousNamespace != "" {
			fmt.Fprintf(w, "Namespace %q removed from .swamp.yaml. Data and manifest were not moved "+
				"(use 'swampj datastore namespace unset --migrate' to move the data back).\n", res.PreviousNamespace)
		}
	})
}

func runNamespaceMigrate(c *cli.Context) error {
	return runMigration(c, migrate.MigrateOptions{Reverse: c.Bool("reverse"), Confirm: c.Bool("confirm")})
}

func runMigration(c *cli.Context, opts migrate.MigrateOptions) error {
	e := newEnv(c)
	r, err := e.loadRepo(opts.Confirm)
	if err != nil {
		return err
	}
	opts.FS, opts.JournalLockTimeout, opts.Command = e.fs, e.lockTO, e.command()
	opts.Progress, opts.Logger = e.out.progress(), e.out.logger()
	defer e.out.endProgress()
	res, err := migrate.Migrate(c.Context, r, opts)
	var failed *migrate.MigrateFailedError
	var unfinished *migrate.UnfinishedIntentError
	var stopped *migrate.MigrateInterruptedError
	if errors.As(err, &stopped) {
		return withCode("interrupted", exitInterrupted, errors.New(interruptedText(stopped)))
	}
	if errors.As(err, &unfinished) {
		if _, code := classify(unfinished.Err); code == "conflict" || code == "step_failed" || code == "failed" {
			return withCode("partial_migration", exitFailure, err)
		}
		return err
	}
	if errors.As(err, &failed) {
		partial := struct {
			*migrate.MigrateFailedError
			Error string `json:"error"`
		}{failed, err.Error()}
		_ = e.out.result(partial, func(w io.Writer) {
			fmt.Fprintf(w, "Partially migrated: %d directory(s) moved before failure.\n", len(failed.Succeeded))
			fmt.Fprintf(w, "  Succeeded: %s\n", listOrNone(failed.Succeeded))
			fmt.Fprintf(w, "  Failed: %s\n", orDash(failed.Failed))
		})
		// A failed rename for a plain reason (an obstacle, a conflict) gets
		// its own code; EXDEV, ENOSPC and EIO keep theirs.
		if _, code := classify(failed.Err); code == "conflict" || code == "step_failed" || code == "failed" {
			return withCode("partial_migration", exitFailure, err)
		}
		return err
	}
	if err != nil {
		return err
	}
	if res.Completed == nil {
		return renderMigratePreview(e, res.Preview)
	}
	return renderMigrateCompleted(e, res)
}

func renderMigratePreview(e *env, p *migrate.MigratePreview) error {
	if err := printMigratePreview(e, p); err != nil {
		return err
	}
	var blocked []string
	for _, d := range p.Directories {
		if d.Blocked != "" {
			blocked = append(blocked, d.Blocked)
		}
	}
	if len(blocked) == 0 {
		return nil
	}
	return withCode("migration_blocked", exitFailure, fmt.Errorf("the migration would stop part way: %s", strings.Join(blocked, "; and ")))
}

func printMigratePreview(e *env, p *migrate.MigratePreview) error {
	renderMigrateRemedies(p.Warnings)
	if !e.json {
		for _, w := range p.Warnings {
			e.out.warn(w.Message)
		}
		if p.OpenIntents > 0 {
			e.out.warn(fmt.Sprintf("%d interrupted operation(s) are open in the journal; --confirm finishes them before it migrates "+
				"(or undo them with 'swampj recover --rollback'). This preview shows the disk as it is now.", p.OpenIntents))
		}
	}
	return e.out.result(p, func(w io.Writer) {
		if p.NothingToDo {
			fmt.Fprintln(w, nothingToMigrate(p.Reverse))
			return
		}
		title := "Migration preview"
		if p.Reverse {
			title = "Reverse migration preview"
		}
		fmt.Fprintf(w, "%s (namespace: %q)\n", title, p.Namespace)
		for _, d := range p.Directories {
			fmt.Fprintf(w, "  %s\n    %s\n    → %s\n    %d file(s), %s\n", d.Subdir, d.Source, d.Destination, d.FileCount, humanSize(d.TotalBytes))
			if d.Blocked != "" {
				fmt.Fprintf(w, "    BLOCKED: %s\n", d.Blocked)
			}
		}
		fmt.Fprintf(w, "Total: %d directory(s), %d file(s), %s — %d steps, %d directory fsyncs\n",
			len(p.Directories), p.TotalFiles, humanSize(p.TotalBytes), p.Steps, p.Fsyncs)
		for _, d := range p.Directories {
			if d.Blocked != "" {
				fmt.Fprintf(w, "Blocked at %s: --confirm would move the directories before it and stop there, its intent open. Move %s away first.\n", d.Subdir, d.Destination)
				return
			}
		}
		fmt.Fprintln(w, "Add --confirm to execute this migration.")
	})
}

func renderMigrateCompleted(e *env, res *migrate.MigrateResult) error {
	d := res.Completed
	renderMigrateRemedies(d.Warnings)
	if !e.json {
		for _, w := range d.Warnings {
			e.out.warn(w.Message)
		}
	}
	return e.out.result(d, func(w io.Writer) {
		printRecovered(w, d.Recovered)
		if d.CatalogBuilt {
			defer fmt.Fprintln(w, "The catalog was not built yet (swamp invalidated it); built it from the disk.")
		}
		// The namespace left set is said whatever moved the data: this
		// run, or an interrupted reverse it finished (IntentID 0), or one
		// before it (NothingToDo).
		defer printNamespaceStillSet(w, d)
		if d.NothingToDo {
			fmt.Fprintln(w, nothingToMigrate(d.Reverse))
			return
		}
		if d.IntentID == 0 {
			fmt.Fprintln(w, "Nothing more to migrate.")
			return
		}
		for _, m := range d.MigratedDirectories {
			fmt.Fprintf(w, "  ✓ %s\n", m)
		}
		what := "Migration"
		if d.Reverse {
			what = "Reverse migration"
		}
		fmt.Fprintf(w, "%s complete: %d directory(s) moved, %d file(s), %s (intent %d: %d steps, %d directory fsyncs).\n",
			what, len(d.MigratedDirectories), d.TotalFiles, humanSize(d.TotalBytes), d.IntentID, d.Steps, d.DirFsyncs)
		if d.CatalogRestamped {
			fmt.Fprintln(w, "Catalog rows now carry the namespace their data lives in.")
		}
		if d.NamespaceUnset {
			fmt.Fprintf(w, "Namespace %q removed from .swamp.yaml and its manifest deleted.\n", d.Namespace)
		}
	})
}

// printNamespaceStillSet says, after a reverse migration that left the
// namespace set, that swamp finds no data, and what unsets it. unset
// --migrate, not plain unset: with the data already moved it only edits
// .swamp.yaml, but also removes the namespace's manifest (.namespace.json),
// which plain unset leaves behind.
func printNamespaceStillSet(w io.Writer, d *migrate.MigrateCompleted) {
	if !d.NamespaceStillSet {
		return
	}
	fmt.Fprintf(w, "Namespace %q is still set in .swamp.yaml: swamp reads %s, which is now empty, and finds no data until it is unset. %s.\n",
		d.Namespace, d.SwampReads, "R"+remedyHint(report.RemedyUnsetMigrate)[1:])
}

func nothingToMigrate(reverse bool) string {
	if reverse {
		return "Nothing to migrate — no data is left in the namespace directory."
	}
	return "Nothing to migrate — data is already in the namespace directory."
}

func printRecovered(w io.Writer, outs []report.IntentOutcome) {
	for _, o := range outs {
		fmt.Fprintf(w, "Finished interrupted operation %d (%s): %s.\n", o.ID, o.Summary, o.Status)
	}
}

func runNamespaceList(c *cli.Context) error {
	e := newEnv(c)
	r, err := e.loadRepo(false)
	if err != nil {
		return err
	}
	l, err := migrate.ListNamespaceManifests(r, host.Common{FS: e.fs})
	if err != nil {
		return err
	}
	return e.out.result(l, func(w io.Writer) {
		if len(l.Namespaces) == 0 {
			fmt.Fprintln(w, "No namespaces registered in this datastore.")
			return
		}
		fmt.Fprintf(w, "%-24s %-38s %-12s %s\n", "NAMESPACE", "REPO ID", "REGISTERED", "CURRENT")
		for _, n := range l.Namespaces {
			cur := ""
			if n.IsCurrent {
				cur = "*"
			}
			reg := n.RegisteredAt
			if len(reg) > 10 {
				reg = reg[:10]
			}
			fmt.Fprintf(w, "%-24s %-38s %-12s %s\n", n.Namespace, n.RepoID, reg, cur)
		}
	})
}

// humanSize is swamp's B / KB / MB with one decimal.
func humanSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "(none)"
	}
	return strings.Join(xs, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "(the steps after the moves)"
	}
	return s
}

// interruptedText says what an interrupted migration left, with the
// commands that finish it or undo it.
func interruptedText(e *migrate.MigrateInterruptedError) string {
	if e.IntentID == 0 {
		return fmt.Sprintf("interrupted during %s; nothing was changed", e.Phase)
	}
	return fmt.Sprintf("interrupted during %s (%d step(s) done); intent %d is open: run '%s' to finish it or 'swampj recover --rollback' to undo it",
		e.Phase, e.Done, e.IntentID, rerunCommand(e.Rerun))
}
