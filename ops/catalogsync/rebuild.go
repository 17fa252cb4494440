package catalogsync

// Rebuild: the catalog made to hold exactly the rows the disk implies, in one
// transaction; and BuildIfNotBuilt, a migration's build of a catalog not built yet.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/repo"
)

// namespaceHoldsNoData reports whether the configured namespace's data
// root holds no version, item or damaged entry a rebuild would see (it may
// be missing, or hold empty directories): the same walk the rebuild does.
func namespaceHoldsNoData(ctx context.Context, fsys fsx.FS, r *repo.Repo) (bool, error) {
	exp, err := ExpectedRows(ctx, r, ExpectedOptions{Common: host.Common{FS: fsys}})
	if err != nil {
		return false, err
	}
	return exp.Items == 0 && exp.Versions == 0 && len(exp.Rows) == 0 && len(exp.Unreadable) == 0 && len(exp.ItemProblems) == 0, nil
}

// soloView is r as the rebuild of un-migrated data sees it: no namespace,
// its data root the solo one ({Base}/data).
func soloView(r *repo.Repo) *repo.Repo {
	solo := *r
	solo.Namespace = ""
	if !r.DataLocal {
		solo.DataRoot = filepath.Join(r.Base, "data")
	}
	return &solo
}

// Rebuild makes the catalog's rows for the repo's namespace equal to
// the data on disk (see the file comment for the guarantees). While a
// namespace is configured over data that still sits at the solo path, it
// rebuilds the solo rows of that data if the namespace itself holds none
// (Report.SoloView), and refuses (*UnmigratedError) if both do. Without
// opts.Confirm it only reports. It holds the journal lock throughout and
// refuses while the journal holds an open intent (*OpenIntentsError).
func Rebuild(ctx context.Context, r *repo.Repo, opts Options) (*Report, error) {
	fsys := opts.Disk()
	r, rep, err := rebuildReport(ctx, fsys, r, opts)
	if err != nil {
		return nil, err
	}
	if !opts.Confirm {
		// The preview is an inspection: the journal is only read.
		j, open, err := readJournalListOpen(r, opts)
		if err != nil {
			return nil, err
		}
		defer j.Close()
		if len(open) > 0 {
			return nil, report.NewOpenIntentsError(open, "rebuild the catalog")
		}
		return verifyLocked(ctx, fsys, r, opts, rep)
	}
	return rebuildConfirmed(ctx, fsys, r, opts, rep)
}

// RebuildIn is a confirmed Rebuild in the journal session sess its caller
// holds — a doctor's repair rebuilds the catalog in its own session — with
// the same checks (no intent open, the format, data not yet migrated); the
// session stays open. A simulated crash is noted in sess, which its Close
// then abandons.
func RebuildIn(ctx context.Context, sess *session.Session, r *repo.Repo, opts Options) (*Report, error) {
	opts.Confirm = true
	fsys := opts.Disk()
	r, rep, err := rebuildReport(ctx, fsys, r, opts)
	if err != nil {
		return nil, sess.Note(err)
	}
	start := time.Now()
	open, err := sess.Journal().OpenIntents()
	if err != nil {
		return nil, sess.Note(err)
	}
	rep, err = rebuildLocked(ctx, fsys, sess.Journal(), open, time.Since(start), r, opts, rep)
	return rep, sess.Note(err)
}

// rebuildReport is Rebuild's start, before the journal: the format marker
// (swamp-format §13.1), and data not yet migrated into the namespace — a
// refusal, or the repo seen solo (Report.SoloView), which it returns.
func rebuildReport(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts Options) (*repo.Repo, *Report, error) {
	if err := repo.RefuseUnknownFormat(fsys, r.Base, opts.Confirm, session.WarnTo(opts.Logger)); err != nil { // swamp-format §13.1, before the journal
		return nil, nil, err
	}
	rep := newReport("rebuild", r)
	rep.Confirmed = opts.Confirm
	rep.UnmigratedData = unmigratedData(fsys, r)
	if rep.UnmigratedData != "" {
		empty, err := namespaceHoldsNoData(ctx, fsys, r)
		if err != nil {
			return nil, nil, err
		}
		if !empty {
			if opts.Confirm {
				return nil, nil, &UnmigratedError{Path: rep.UnmigratedData, Namespace: r.Namespace}
			}
		} else {
			// Everything sits at the solo path and the namespace's own
			// data root holds nothing: what a reverse migration that keeps
			// the namespace leaves, or a forward one rolled back. The
			// catalog then describes that data where it is, stamped solo,
			// as the migration's restamp leaves it; the rebuild makes it
			// so (rows still stamped with the namespace are this repo's
			// old stamps: re-stamped solo when their version is there).
			// Refusing here was a wedge: when that restamp's commit failed,
			// the stale-catalog mark it left could only be cleared by a
			// rebuild, and the rebuild refused.
			unmigrated := rep.UnmigratedData
			r = soloView(r)
			rep = newReport("rebuild", r)
			rep.Confirmed, rep.UnmigratedData, rep.SoloView = opts.Confirm, unmigrated, true
		}
	}
	return r, rep, nil
}

// rebuildConfirmed is the confirmed rebuild: under the journal lock, with
// no intent open, the catalog made to hold exactly the rows the disk
// implies, in one transaction; each phase timed (Report.Timings).
//
// With no catalog to start from (none, or a damaged one moved aside), the
// new catalog is built complete beside the catalog's name and linked in
// (catalog.CreateBuilt): no reader can see it while it fills, so it is
// written once, without a journal, and synced once. If a catalog appears
// under the name meanwhile (swamp created one), that one is rebuilt in
// place instead.
func rebuildConfirmed(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts Options, rep *Report) (*Report, error) {
	start := time.Now()
	sess, open, err := lockJournalListOpen(r, opts)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	return rebuildLocked(ctx, fsys, sess.Journal(), open, time.Since(start), r, opts, rep)
}

// rebuildLocked is the confirmed rebuild once the journal j is held (its
// open intents listed, which took locked).
func rebuildLocked(ctx context.Context, fsys fsx.FS, j *journal.Journal, open []*journal.Intent, locked time.Duration,
	r *repo.Repo, opts Options, rep *Report) (*Report, error) {
	tm := &Timings{Lock: locked}
	mark := time.Now()
	lap := func(d *time.Duration) {
		now := time.Now()
		*d += now.Sub(mark)
		mark = now
	}
	if len(open) > 0 {
		return nil, report.NewOpenIntentsError(open, "rebuild the catalog")
	}

	c, err := catalog.Open(ctx, fsys, r.CatalogPath, catalog.Options{Mode: catalog.ModeReadWrite, NoCreate: true})
	var missing *catalog.MissingError
	switch {
	case errors.As(err, &missing):
		c = nil
		rep.MovedAside = missing.MovedAside
	case err != nil:
		return nil, err
	default:
		defer c.Close()
		rep.MovedAside = c.MovedAside()
		rep.CatalogCreated = c.Created()
		if rep.Populated, err = c.Populated(ctx); err != nil {
			return nil, err
		}
	}
	lap(&tm.Open)
	exp, err := ExpectedRows(ctx, r, expectedOpts(opts, c != nil && c.HasStepLatest()))
	if err != nil {
		return nil, err
	}
	lap(&tm.Scan)

	var d *catalog.Diff
	applied := true
	if c == nil {
		opts.Progress.Emit("writing catalog", 0, 0, "")
		d, err = catalog.CreateBuilt(ctx, fsys, r.CatalogPath, r.Namespace, exp.Rows, &tm.RebuildTimings)
		switch {
		case err == nil:
			rep.CatalogCreated = true
		case errors.Is(err, fs.ErrExist):
			// Created meanwhile: rebuilt in place below.
			if c, err = catalog.Open(ctx, fsys, r.CatalogPath, catalog.Options{Mode: catalog.ModeReadWrite}); err != nil {
				return nil, err
			}
			defer c.Close()
			if rep.Populated, err = c.Populated(ctx); err != nil {
				return nil, err
			}
			if c.HasStepLatest() != exp.StepLatestColumn {
				exp.Mark(c.HasStepLatest())
			}
			mark = time.Now()
		default:
			return nil, err
		}
	}
	if d == nil {
		stale, err := classifyInto(ctx, fsys, r, c, exp, rep)
		if err != nil {
			return nil, err
		}
		lap(&tm.Other)
		// One transaction: read the rows, diff, apply, commit (catalog/bulk.go).
		opts.Progress.Emit("writing catalog", 0, 0, "")
		if d, applied, err = c.RebuildTimed(ctx, r.Namespace, exp.Rows, stale, &tm.RebuildTimings); err != nil {
			return nil, err
		}
		mark = time.Now()
		if err := c.Close(); err != nil {
			// The rebuild is committed; SQLite checkpoints on the next open.
			session.WarnTo(opts.Logger)(fmt.Sprintf("the catalog is rebuilt, but closing it failed: %v", err))
		}
		lap(&tm.Close)
	}
	rep.Timings = tm
	// The catalog agrees with the disk now: whatever catalog step was
	// skipped before is made good.
	if err := j.ClearCatalogStale(); err != nil {
		session.WarnTo(opts.Logger)(fmt.Sprintf("the catalog is rebuilt, but clearing the journal's stale-catalog mark failed: %v (doctor will report it until the next rebuild)", err))
	}
	rep.fill(exp, d)
	rep.InSync, rep.Applied = d.Empty(), applied
	return rep, nil
}

// lockJournalListOpen takes the journal lock (no other swampj runs while
// the catalog is compared) and lists the interrupted operations it holds.
func lockJournalListOpen(r *repo.Repo, opts Options) (*session.Session, []*journal.Intent, error) {
	sess, err := session.Open(opts.Common, r.JournalPath)
	if err != nil {
		return nil, nil, err
	}
	open, err := sess.Journal().OpenIntents()
	if err != nil {
		_ = sess.Close()
		return nil, nil, err
	}
	return sess, open, nil
}

// catalogNotBuilt reports a catalog with no row in any namespace and no
// populated mark (see Report.NotBuilt). A catalog that is marked
// populated, or that holds any row, is compared as it is: swamp's backfill
// is additive and never removes a stale row, so rows that are there are
// held to the disk.
func catalogNotBuilt(ctx context.Context, c *catalog.Catalog) (bool, error) {
	if pop, err := c.Populated(ctx); err != nil || pop {
		return false, err
	}
	names, err := c.Namespaces(ctx)
	return len(names) == 0, err
}

// BuildIfNotBuilt fills a catalog that is not built yet (NotBuilt) from the
// disk in one transaction, as a confirmed rebuild does; a catalog with rows,
// a populated one, or none at all is left alone. The caller holds the
// journal lock, and no data is mid-change. It reports whether it built. A
// nil c.FS is the real disk; a nil cat opens the repo's own catalog.
func BuildIfNotBuilt(ctx context.Context, r *repo.Repo, cat protocol.CatalogOpener, c host.Common) (bool, error) {
	fsys := c.Disk()
	if cat == nil {
		cat = protocol.RepoCatalog(fsys, r.Dir)
		defer cat.Close()
	}
	if unmigratedData(fsys, r) != "" {
		return false, nil // the rows would describe data that is about to move
	}
	cc, ok, err := cat.Existing(ctx)
	if err != nil || !ok {
		return false, err
	}
	if f := cc.Foreign(); f != nil {
		return false, f
	}
	if empty, err := catalogNotBuilt(ctx, cc); err != nil || !empty {
		return false, err
	}
	exp, err := ExpectedRows(ctx, r, ExpectedOptions{Common: c, StepLatestColumn: cc.HasStepLatest()})
	if err != nil {
		return false, err
	}
	_, applied, err := cc.Rebuild(ctx, r.Namespace, exp.Rows, nil)
	return applied, err
}

// classifyInto sorts the catalog's other namespaces (classifyNamespaces)
// into rep and returns the names of the stale ones.
func classifyInto(ctx context.Context, fsys fsx.FS, r *repo.Repo, c *catalog.Catalog, exp *Expected, rep *Report) ([]string, error) {
	stale, foreign, err := classifyNamespaces(ctx, fsys, r, c, exp)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(stale))
	for i, s := range stale {
		names[i] = s.Namespace
	}
	rep.StaleNamespaces, rep.ForeignNamespaces = stale, foreign
	for _, f := range foreign {
		rep.Counts.ForeignKept += f.Rows
	}
	return names, nil
}

// classifyNamespaces decides, for every namespace stamp in the catalog other
// than the repo's own, whether its rows are this repo's old stamps (stale:
// reconciled like the own namespace — re-stamped when their version is on
// disk, deleted otherwise) or foreign rows (kept untouched, swamp-format §3.9).
//
// The rule. A namespace N is an old stamp of this repo when either
//
//   - N is "" (solo) and the repo is namespaced: only this repo ever writes
//     solo rows into its repo-local catalog; foreign rows come from `swamp
//     datastore catalog pull`, which always names a namespace; or
//   - N is not "", catalog_meta has no foreign_synced:N key (its rows were
//     never pulled as another repo's catalog, swamp-format §3.9), no namespace manifest
//     {base}/N/.namespace.json names another repo (a non-empty repoId
//     different from this repo's), and at least one of its rows is for an
//     item (type, model id, data name) the walk found in this repo's data
//     root — model ids are definition UUIDs, so those are this repo's data
//     written under an earlier namespace (swamp-format §10.8, §9.18).
//
// Everything else is foreign and never touched, even rows that look like
// this repo's items: a namespace pulled as foreign stays foreign.
func classifyNamespaces(ctx context.Context, fsys fsx.FS, r *repo.Repo, c *catalog.Catalog, exp *Expected) ([]StaleNamespace, []ForeignNamespace, error) {
	stale, foreign := []StaleNamespace{}, []ForeignNamespace{}
	names, err := c.Namespaces(ctx)
	if err != nil {
		return nil, nil, err
	}
	md, err := c.Meta(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, ns := range names {
		if ns == r.Namespace {
			continue
		}
		rows, err := c.Rows(ctx, ns)
		if err != nil {
			return nil, nil, err
		}
		reason, isStale := staleReason(fsys, r, exp, ns, rows, md)
		if isStale {
			stale = append(stale, StaleNamespace{Namespace: ns, Rows: len(rows), Reason: reason})
		} else {
			foreign = append(foreign, ForeignNamespace{Namespace: ns, Rows: len(rows), Reason: reason})
		}
	}
	return stale, foreign, nil
}

func staleReason(fsys fsx.FS, r *repo.Repo, exp *Expected, ns string, rows []catalog.Row, md map[string]string) (string, bool) {
	if ns == "" {
		return "solo rows in a namespaced repo: written by this repo before its namespace was set", true
	}
	if _, ok := md["foreign_synced:"+ns]; ok {
		return "pulled as a foreign catalog (foreign_synced:" + ns + ")", false
	}
	if repo.ValidateNamespace(ns) == nil {
		m, found, err := repo.ReadManifest(fsys, r.Base, ns)
		switch {
		case err != nil:
			return "its namespace manifest cannot be read (" + err.Error() + "); kept to be safe", false
		case found && m.RepoID != "" && m.RepoID != r.RepoID:
			return "registered in this datastore by repo " + m.RepoID, false
		}
	}
	for _, row := range rows {
		if exp.HasItem(row.TypeNormalized, row.ModelID, row.DataName) {
			return fmt.Sprintf("rows for this repo's items (e.g. %s/%s/%s): written before a namespace change",
				row.TypeNormalized, row.ModelID, row.DataName), true
		}
	}
	return "no row is for an item of this repo", false
}
