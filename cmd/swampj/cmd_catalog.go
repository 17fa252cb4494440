package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/host"
)

// shownDifferences is how many differences the text output lists; --json
// lists every one.
const shownDifferences = 10

func init() {
	checksums := &cli.BoolFlag{Name: "verify-checksums",
		Usage: "also read every raw file and compare its SHA-256 with metadata.yaml; a version that does not match " +
			"counts as unreadable and gets no row (reads all data; slow)"}
	register(&cli.Command{
		Name:  "catalog",
		Usage: "verify or rebuild swamp's catalog (.swamp/data/_catalog.db) from the data on disk",
		Subcommands: []*cli.Command{
			{
				Name:  "verify",
				Usage: "compare the catalog with the data on disk; change nothing",
				Description: "Walks the data root, builds the row every readable version should have (unreadable versions,\n" +
					"such as the zero-byte ones of swamp issue #3955, get none) and compares the catalog's rows for the\n" +
					"repo's namespace — and its own old namespace stamps — with them. Rows of other namespaces pulled\n" +
					"from other repos are foreign and not compared. The catalog is opened read-only.\n" +
					"A catalog with no rows at all and no populated mark (what swamp leaves after invalidating it, as its\n" +
					"own namespace migrate does) is not built yet, not drift: swamp fills it on its next read.\n\n" +
					"EXIT STATUS: 0 when the catalog agrees with the disk or is not built yet; 1 otherwise (error code\n" +
					"catalog_drift), with every difference listed under --json.",
				Flags:  []cli.Flag{checksums},
				Action: runCatalogVerify,
			},
			{
				Name:  "rebuild",
				Usage: "make the catalog agree with the data on disk (preview unless --confirm)",
				Description: "Without --confirm it prints what it would change and changes nothing. With --confirm it applies\n" +
					"every change in ONE SQLite transaction: missing rows are inserted, rows of deleted or unreadable\n" +
					"versions are deleted, latest flags and wrong fields are fixed, and rows stamped with this repo's\n" +
					"old namespace are re-stamped. A crash or error before the commit leaves the previous catalog intact.\n" +
					"Foreign rows (other repos' namespaces) are kept. A damaged catalog is moved aside with its -wal\n" +
					"and -shm files (never deleted) and rebuilt. Refuses while 'swampj recover' has work to do.",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "confirm", Aliases: []string{"y", "yes"}, Usage: "apply the changes (default: preview only)"},
					checksums,
				},
				Action: runCatalogRebuild,
			},
		},
	})
}

func catalogOptions(e *env, c *cli.Context) catalogsync.Options {
	return catalogsync.Options{Common: host.Common{FS: e.fs, JournalLockTimeout: e.lockTO, Command: e.command(), Logger: e.out.logger()},
		Confirm:        c.Bool("confirm"),
		VerifyChecksum: c.Bool("verify-checksums"),
		Progress:       e.out.progress(),
	}
}

func runCatalogVerify(c *cli.Context) error {
	e := newEnv(c)
	r, err := e.loadRepo(false)
	if err != nil {
		return err
	}
	rep, err := catalogsync.Verify(c.Context, r, catalogOptions(e, c))
	e.out.endProgress()
	if err != nil {
		return err
	}
	if rep.OpenIntents > 0 {
		e.out.warn(fmt.Sprintf("the journal holds %d interrupted operation(s); differences may be theirs — run 'swampj recover' first", rep.OpenIntents))
	}
	if err := e.out.result(rep, func(w io.Writer) { printCatalogReport(w, rep) }); err != nil {
		return err
	}
	switch {
	case !rep.InSync && rep.UnmigratedData != "":
		// A rebuild refuses in this state: the migration is the next step.
		return withCode("unmigrated_data", exitFailure, fmt.Errorf(
			"the catalog does not agree with the data on disk (%s): namespace %q is set but its data still sits at %s; "+
				"run 'swampj datastore namespace migrate --confirm' to move it into the namespace (it keeps the catalog rows of that data)",
			driftSummary(rep), rep.Namespace, rep.UnmigratedData))
	case !rep.InSync && !rep.NotBuilt:
		return withCode("catalog_drift", exitFailure, fmt.Errorf("the catalog does not agree with the data on disk (%s); run 'swampj catalog rebuild --confirm'",
			driftSummary(rep)))
	}
	return nil
}

func runCatalogRebuild(c *cli.Context) error {
	e := newEnv(c)
	r, err := e.loadRepo(c.Bool("confirm"))
	if err != nil {
		return err
	}
	rep, err := catalogsync.Rebuild(c.Context, r, catalogOptions(e, c))
	e.out.endProgress()
	if err != nil {
		return err
	}
	return e.out.result(rep, func(w io.Writer) { printCatalogReport(w, rep) })
}

// printCatalogReport renders a verify or rebuild report as text.
func printCatalogReport(w io.Writer, rep *catalogsync.Report) {
	ns := fmt.Sprintf("namespace %q", rep.Namespace)
	if rep.Namespace == "" {
		ns = "solo, no namespace"
	}
	fmt.Fprintf(w, "Catalog %s (%s)\n", rep.Catalog, ns)
	k := rep.Counts
	fmt.Fprintf(w, "  data on disk:   %d items, %d versions: %d readable, %d unreadable", k.Items, k.VersionsOnDisk, k.Readable, k.Unreadable)
	if k.RenamedVersions > 0 {
		fmt.Fprintf(w, ", %d of renamed items (no rows, as swamp's rename leaves them)", k.RenamedVersions)
	}
	fmt.Fprintf(w, "\n  expected rows:  %d\n", k.ExpectedRows)

	switch {
	case rep.MovedAside != nil:
		fmt.Fprintf(w, "  moved aside:    the damaged catalog (%s):\n", rep.MovedAside.Reason)
		for _, f := range rep.MovedAside.Files {
			fmt.Fprintf(w, "                  %s -> %s\n", f.From, f.To)
		}
	case rep.CatalogDamaged != "":
		fmt.Fprintf(w, "  catalog:        damaged (%s); 'rebuild --confirm' moves it aside with its sidecars and builds a new one\n", rep.CatalogDamaged)
	case rep.CatalogMissing:
		fmt.Fprintln(w, "  catalog:        does not exist")
	}
	if cs := rep.CatalogStale; cs != nil {
		fmt.Fprintf(w, "  stale mark:     since %s a swampj operation could not update the catalog (%s); 'swampj catalog rebuild --confirm' clears it\n",
			cs.Since.Format(time.RFC3339), cs.Reason)
	}
	switch {
	case rep.SoloView:
		fmt.Fprintf(w, "  not migrated:   data still sits at %s and the namespace holds none: its rows are stamped solo, as a reverse migration leaves them; "+
			"'swampj datastore namespace migrate --confirm' moves it into the namespace\n", rep.UnmigratedData)
	case rep.UnmigratedData != "":
		fmt.Fprintf(w, "  not migrated:   data still sits at %s; run 'swampj datastore namespace migrate --confirm' (it keeps these rows), not a rebuild\n", rep.UnmigratedData)
	}
	for _, s := range rep.StaleNamespaces {
		fmt.Fprintf(w, "  old stamp:      namespace %q, %d rows — %s\n", s.Namespace, s.Rows, s.Reason)
	}
	for _, f := range rep.ForeignNamespaces {
		fmt.Fprintf(w, "  foreign, kept:  namespace %q, %d rows — %s\n", f.Namespace, f.Rows, f.Reason)
	}

	migrateFirst := "Run 'swampj datastore namespace migrate --confirm' first: the data is not migrated yet (the migration keeps these rows)."
	if rep.NotBuilt && !rep.InSync && !rep.Applied {
		fmt.Fprintf(w, "  not built yet:  the catalog holds no rows and is not marked populated (swamp invalidated it); %d rows would be added\n", k.RowsMissing)
		if rep.UnmigratedData != "" && !rep.SoloView {
			fmt.Fprintln(w, migrateFirst)
		} else if rep.Command == "rebuild" {
			fmt.Fprintln(w, "Nothing was changed. Run 'swampj catalog rebuild --confirm' to build it now.")
		} else {
			fmt.Fprintln(w, "The catalog is not built yet (swamp rebuilds it on its next read; 'swampj catalog rebuild --confirm' builds it now).")
		}
		printUnreadable(w, rep)
		return
	}
	if rep.InSync {
		if rep.Command == "rebuild" && rep.Applied {
			fmt.Fprintln(w, "The catalog already agreed with the disk; marked it populated.")
		} else {
			fmt.Fprintln(w, "The catalog agrees with the data on disk.")
		}
		if !rep.Populated && !rep.CatalogMissing && rep.Command == "verify" {
			fmt.Fprintln(w, "  (catalog_meta.populated is not set: swamp re-runs its additive backfill on its next query)")
		}
	} else {
		fmt.Fprintf(w, "  differences:    %s\n", driftSummary(rep))
		printDifferences(w, rep)
		switch {
		case rep.Command == "rebuild" && rep.Applied:
			fmt.Fprintln(w, "Rebuilt: every difference above was fixed in one transaction.")
		case rep.UnmigratedData != "" && !rep.SoloView:
			fmt.Fprintln(w, migrateFirst)
		case rep.Command == "rebuild":
			fmt.Fprintln(w, "Nothing was changed. Run 'swampj catalog rebuild --confirm' to apply.")
		default:
			fmt.Fprintln(w, "Run 'swampj catalog rebuild --confirm' to make the catalog agree with the disk.")
		}
	}
	printUnreadable(w, rep)
}

func driftSummary(rep *catalogsync.Report) string {
	k := rep.Counts
	return fmt.Sprintf("%d rows missing, %d stale, %d with wrong latest flags, %d with wrong fields, %d with an old namespace stamp",
		k.RowsMissing, k.RowsStale, k.FlagsWrong, k.FieldsWrong, k.WrongNamespace)
}

// flagText is a row's latest flags (is_step_latest where the catalog has
// the column).
func flagText(isLatest, isStepLatest, step bool) string {
	s := fmt.Sprintf("is_latest=%d", b2i(isLatest))
	if step {
		s += fmt.Sprintf(" is_step_latest=%d", b2i(isStepLatest))
	}
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// printDifferences lists the first shownDifferences differences.
func printDifferences(w io.Writer, rep *catalogsync.Report) {
	d := rep.Diff
	if d == nil {
		return
	}
	var lines []string
	for _, r := range d.Missing {
		lines = append(lines, "missing          "+r.Label())
	}
	for _, r := range d.Stale {
		line := "stale            " + r.Label()
		if r.Namespace != rep.Namespace {
			line += fmt.Sprintf(" (stamped %q)", r.Namespace)
		}
		lines = append(lines, line+": no readable version on disk")
	}
	for _, f := range d.FlagsWrong {
		lines = append(lines, fmt.Sprintf("flags wrong      %s: %s, should be %s",
			f.Expected.Label(), flagText(f.Catalog.IsLatest, f.Catalog.IsStepLatest, d.StepLatestColumn), flagText(f.Expected.IsLatest, f.Expected.IsStepLatest, d.StepLatestColumn)))
	}
	for _, f := range d.FieldsWrong {
		lines = append(lines, fmt.Sprintf("fields wrong     %s: %s", f.Expected.Label(), strings.Join(f.Columns, ", ")))
	}
	for _, r := range d.WrongNamespace {
		lines = append(lines, fmt.Sprintf("old stamp        %s: stamped %q, should be %q", r.Label(), r.Namespace, rep.Namespace))
	}
	for i, l := range lines {
		if i == shownDifferences {
			fmt.Fprintf(w, "    … and %d more (--json lists every one)\n", len(lines)-shownDifferences)
			break
		}
		fmt.Fprintln(w, "    "+l)
	}
}

// printUnreadable lists versions that got no row, and item findings.
func printUnreadable(w io.Writer, rep *catalogsync.Report) {
	if len(rep.Unreadable) == 0 && len(rep.ItemProblems) == 0 {
		return
	}
	fmt.Fprintln(w, "Found on disk (unreadable versions get no row):")
	n := 0
	for _, u := range rep.Unreadable {
		if n == shownDifferences {
			break
		}
		n++
		codes := make([]string, len(u.Problems))
		for i, p := range u.Problems {
			codes[i] = string(p.Code)
		}
		fmt.Fprintf(w, "    %s/%s/%s v%d: %s (%s)\n", u.Type, u.ModelID, u.DataName, u.Version, u.State, strings.Join(codes, ", "))
	}
	for _, p := range rep.ItemProblems {
		if n == shownDifferences {
			break
		}
		n++
		fmt.Fprintf(w, "    %s/%s/%s: %s\n", p.Type, p.ModelID, p.DataName, p.Problem.Message)
	}
	if total := len(rep.Unreadable) + len(rep.ItemProblems); total > n {
		fmt.Fprintf(w, "    … and %d more (--json lists every one)\n", total-n)
	}
}
