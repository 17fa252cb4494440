package doctor

// The catalog as a whole: the journal's stale-catalog mark (a swampj
// operation finished its data change but could not update the catalog)
// and swamp's catalog_completeness check (items on disk the catalog does
// not index). Neither is about one item, so the per-item repair cannot
// fix them; a confirmed repair ends both by rebuilding the catalog from
// the disk after the data repair: the rebuild compares the whole catalog
// with the disk, fixes every difference in one transaction and clears the
// mark (catalogsync.Rebuild). A catalog this user cannot open stays a
// finding for a person (make it usable, then repair); so does a rebuild
// that refuses (data on both sides of a namespace: migrate first).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
)

// staleFinding is the finding of the journal's stale-catalog mark.
func staleFinding(cs *journal.CatalogStale) Finding {
	return Finding{Code: CodeCatalogStale, Path: cs.Catalog,
		Message: fmt.Sprintf("the catalog has missed changes on disk since %s (intents %v): %s; swamp's data query does not see them",
			cs.Since.Format(time.RFC3339), cs.Intents, cs.Reason),
		Fix:    "the repair rebuilds the catalog from the disk, which clears the mark (rebuilding the catalog does the same)",
		Remedy: report.RemedyRepair}
}

// wholeCatalog reports, in a check or a preview, the findings only a
// rebuild of the whole catalog ends: the stale mark (added here) and a
// failing catalog_completeness check (already a finding). st is the status
// of a finding the repair fixes in this mode.
func (rep *Report) wholeCatalog(cs *journal.CatalogStale, o Options, st Status) {
	if cs != nil {
		rep.Findings = append(rep.Findings, staleFinding(cs))
		rep.Remaining++
	}
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if !f.rebuildFixes() {
			continue
		}
		switch {
		case rep.catalogUnopenable():
			f.Status, f.Remedy, f.Then = StatusManual, report.RemedyFixAccess, report.RemedyRepair
			f.Fix = "make the catalog a file this user can read and write (see catalog_unusable); the repair then rebuilds it from the disk"
		case o.Only != nil:
			f.Status = st
			f.Reason = "only what the command changed was checked; a repair of the whole repo rebuilds the catalog"
		default:
			f.Status = st
		}
	}
}

// rebuildFixes: a rebuild of the whole catalog is what ends f.
func (f *Finding) rebuildFixes() bool {
	return f.Code == CodeCatalogStale || (f.Code == CodeSwampCheck && f.swampCheck == SwampCheckCompleteness)
}

// catalogUnopenable: the catalog is there but cannot be opened for a
// reason a rebuild does not repair (a directory at its path, no
// permission); a damaged file is another matter (catalogDamaged).
func (rep *Report) catalogUnopenable() bool {
	for _, f := range rep.Findings {
		if f.Code == CodeCatalogUnusable && f.Remedy == report.RemedyFixAccess {
			return true
		}
	}
	return false
}

// settleCatalog ends, after a confirmed repair of the data, what only a
// rebuild of the whole catalog ends: the stale mark as the journal holds
// it now (the repair itself may have left one) and a failing
// catalog_completeness check. It works in the repair's session sess
// (nil: the mark is read, and the catalog rebuilt, each in a session of
// its own). A rebuild that fails leaves them for a person, saying why;
// only a crash or a cancel is returned.
func settleCatalog(ctx context.Context, r *repo.Repo, o Options, rep *Report, before *journal.CatalogStale, sess *session.Session) error {
	cs, err := staleMark(r, o, sess)
	if err != nil {
		return err
	}
	if cs == nil {
		cs = before // cleared by the damaged catalog's rebuild, or not there
	}
	need := cs != nil
	for _, f := range rep.Findings {
		need = need || f.rebuildFixes()
	}
	if !need {
		return nil
	}
	var why error
	switch {
	case o.Only != nil:
	case rep.catalogUnopenable():
		why = errors.New("the catalog cannot be opened")
	case !rep.catalogRebuilt:
		_, why = rebuildCatalog(ctx, sess, r, o)
		if why != nil && (fsx.IsCrash(why) || ctx.Err() != nil) {
			return why
		}
		rep.catalogRebuilt = why == nil
	}
	if cs != nil {
		rep.Findings = append(rep.Findings, staleFinding(cs))
		rep.Remaining++
		if rep.catalogRebuilt {
			// The rebuild clears the mark; ask the journal, not the plan.
			if left, err := staleMark(r, o, sess); err != nil {
				return err
			} else if left != nil {
				why = errors.New("the catalog was rebuilt, but the journal's stale mark could not be cleared")
			}
		}
	}
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if !f.rebuildFixes() || f.Status == StatusRepaired {
			continue
		}
		switch {
		case o.Only != nil:
			f.Status = StatusSkipped
			f.Reason = "only what the command changed was checked; a repair of the whole repo rebuilds the catalog"
		case rep.catalogRebuilt && why == nil:
			f.Status, f.Fix = StatusRepaired, "the catalog was rebuilt from the disk"
			if f.Code == CodeCatalogStale {
				f.Fix += "; the mark is cleared"
			}
			rep.Remaining--
		default:
			f.Status = StatusManual
			f.Fix, f.Remedy, f.Then = manualRebuild(why)
		}
	}
	return nil
}

// staleMark is the journal's stale-catalog mark: read in the repair's
// session sess, or, with none, from a read-only look.
func staleMark(r *repo.Repo, o Options, sess *session.Session) (*journal.CatalogStale, error) {
	if sess != nil {
		return sess.Journal().CatalogStale()
	}
	_, cs, err := journalState(r, o)
	return cs, err
}

// manualRebuild is what a person does when the repair's rebuild of the
// catalog failed with err, and which remedies follow.
func manualRebuild(err error) (fix string, r, then report.Remedy) {
	var un *catalogsync.UnmigratedError
	if errors.As(err, &un) {
		return fmt.Sprintf("the repair could not rebuild the catalog (%v); finish the namespace migration", err),
			report.RemedyMigrate, report.RemedyRepair
	}
	return fmt.Sprintf("the repair could not rebuild the catalog (%v); make the catalog a file this user can read and write", err),
		report.RemedyFixAccess, report.RemedyRepair
}
