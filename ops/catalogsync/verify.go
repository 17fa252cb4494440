package catalogsync

// Verify: the catalog compared with the disk, read-only.

import (
	"context"
	"errors"

	"github.com/swampj/swampj/ops/internal/session"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/repo"
)

// Verify compares the catalog with the data on disk and changes
// nothing: the catalog is opened query-only. rep.InSync says whether they
// agree. A missing catalog is reported (every expected row missing); a
// damaged one or one with a foreign schema is returned as the catalog
// package's error.
func Verify(ctx context.Context, r *repo.Repo, opts Options) (*Report, error) {
	fsys := opts.Disk()
	if err := repo.RefuseUnknownFormat(fsys, r.Base, false, session.WarnTo(opts.Logger)); err != nil { // swamp-format §13.1
		return nil, err
	}
	rep := newReport("verify", r)
	rep.UnmigratedData = unmigratedData(fsys, r)
	j, open, err := readJournalListOpen(r, opts)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	rep.OpenIntents = len(open)
	if rep.CatalogStale, err = j.CatalogStale(); err != nil {
		return nil, err
	}
	return verifyLocked(ctx, fsys, r, opts, rep)
}

// readJournalListOpen is lockJournalListOpen for inspections
// (session.Inspect): no journal is created, an existing one is only read.
func readJournalListOpen(r *repo.Repo, opts Options) (*journal.Journal, []*journal.Intent, error) {
	return session.Inspect(opts.Common, r.JournalPath)
}

// verifyLocked is verify (and the rebuild preview) once the lock is held.
func verifyLocked(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts Options, rep *Report) (*Report, error) {
	c, err := catalog.Open(ctx, fsys, r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	var missing *catalog.MissingError
	var corrupt *catalog.CorruptError
	switch {
	case errors.As(err, &missing):
		rep.CatalogMissing = true
		return noCatalog(ctx, fsys, r, opts, rep)
	case errors.As(err, &corrupt) && rep.Command == "rebuild":
		// The confirmed rebuild moves it aside; the preview says so.
		rep.CatalogDamaged = corrupt.Reason
		return noCatalog(ctx, fsys, r, opts, rep)
	case err != nil:
		return nil, err
	}
	defer c.Close()
	if f := c.Foreign(); f != nil {
		return nil, f
	}
	if err := compare(ctx, fsys, r, c, opts, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// noCatalog reports a catalog that is not there (or will be replaced): every
// expected row is missing. A repo without data and without a catalog is in
// sync — swamp creates the file empty when it first needs it.
func noCatalog(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts Options, rep *Report) (*Report, error) {
	exp, err := ExpectedRows(ctx, r, expectedOpts(opts, false))
	if err != nil {
		return nil, err
	}
	d := &catalog.Diff{
		Namespace: r.Namespace, StaleNamespaces: []string{}, Missing: exp.Rows,
		Stale: []catalog.Row{}, FlagsWrong: []catalog.RowDrift{}, FieldsWrong: []catalog.RowDrift{}, WrongNamespace: []catalog.Row{},
	}
	rep.fill(exp, d)
	rep.InSync = rep.CatalogDamaged == "" && len(exp.Rows) == 0
	return rep, nil
}

// compare walks the disk and diffs it against an open catalog, filling rep.
func compare(ctx context.Context, fsys fsx.FS, r *repo.Repo, c *catalog.Catalog, opts Options, rep *Report) error {
	var err error
	if rep.Populated, err = c.Populated(ctx); err != nil {
		return err
	}
	if rep.NotBuilt, err = catalogNotBuilt(ctx, c); err != nil {
		return err
	}
	exp, stale, err := expect(ctx, fsys, r, c, opts, rep)
	if err != nil {
		return err
	}
	opts.Progress.Emit("comparing with catalog", 0, 0, "")
	d, err := c.Diff(ctx, r.Namespace, exp.Rows, stale)
	if err != nil {
		return err
	}
	rep.fill(exp, d)
	rep.InSync = d.Empty()
	return nil
}

// expect walks the disk with the catalog's flag rule and sorts the other
// namespaces of the catalog into the repo's old stamps and foreign ones.
func expect(ctx context.Context, fsys fsx.FS, r *repo.Repo, c *catalog.Catalog, opts Options, rep *Report) (*Expected, []string, error) {
	exp, err := ExpectedRows(ctx, r, expectedOpts(opts, c.HasStepLatest()))
	if err != nil {
		return nil, nil, err
	}
	names, err := classifyInto(ctx, fsys, r, c, exp, rep)
	return exp, names, err
}

func expectedOpts(opts Options, step bool) ExpectedOptions {
	return ExpectedOptions{Common: opts.Common, StepLatestColumn: step, VerifyChecksum: opts.VerifyChecksum, Workers: opts.Workers, Progress: opts.Progress}
}
