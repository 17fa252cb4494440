package doctor

// The other data root. With a namespace set, swamp reads {base}/{ns}/…
// only, but data can sit at the un-namespaced {base}/… too: before the
// forward migration, and after a reverse migration that left the
// namespace set. Damage there is damage all the same (a zero-byte version,
// a dead model lock the migration would carry along), so the doctor checks
// that root as well, and says when the root swamp reads is empty while the
// data sits at the other: swamp then finds no data at all.

import (
	"context"
	"fmt"
	"strings"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
)

// CodeDataAtOtherRoot: the data root swamp reads (the namespace's) holds
// no data item while the un-namespaced root holds some: swamp finds no
// data until the namespace is unset or the data migrated into it.
const CodeDataAtOtherRoot Code = "data_at_other_root"

// otherRootView is the repo as a solo repo would see it, when a namespace
// is set and the un-namespaced data root is another directory; nil
// otherwise (solo, a data root that is repo-local either way, or a check
// limited to what a command changed).
func otherRootView(r *repo.Repo, o Options) *repo.Repo {
	if r.Namespace == "" || o.Only != nil || o.otherRoot {
		return nil
	}
	v := *r
	v.Namespace = ""
	v.DataRoot = v.ResolvePath("data")
	if v.DataRoot == r.DataRoot {
		return nil
	}
	return &v
}

// checkOtherRoot surveys the un-namespaced root of a namespaced repo (in
// the same mode as the run) and takes its findings into rep, each saying
// where it lies; then it reports a configured root that is empty while the
// data is at the other.
func (rep *Report) checkOtherRoot(ctx context.Context, fsys fsx.FS, r *repo.Repo, o Options) error {
	v := otherRootView(r, o)
	if v == nil {
		return nil
	}
	if fi, err := fsys.Stat(v.DataRoot); err != nil || !fi.IsDir() {
		return nil // nothing there (an unreadable root is not this check's)
	}
	o.otherRoot = true
	other, err := runDoctor(ctx, fsys, v, o, nil)
	if err != nil {
		return err
	}
	rep.OtherDataRoot, rep.OtherItems, rep.OtherVersions = other.DataRoot, other.Items, other.Versions
	where := fmt.Sprintf("at the un-namespaced data root %s, which swamp does not read while namespace %q is set: ", other.DataRoot, r.Namespace)
	seen := map[string]bool{}
	for _, f := range rep.Findings {
		seen[string(f.Code)+"\x00"+f.Path] = true
	}
	for _, f := range other.Findings {
		if seen[string(f.Code)+"\x00"+f.Path] {
			continue // repo-wide (the catalog, the journal): reported once
		}
		f.Message = where + f.Message
		rep.Findings = append(rep.Findings, f)
	}
	rep.Moves = append(rep.Moves, other.Moves...)
	if rep.Quarantine == "" {
		rep.Quarantine = other.Quarantine
	}
	if rep.IntentID == 0 {
		rep.IntentID = other.IntentID
	}
	if rep.LockIntentID == 0 {
		rep.LockIntentID = other.LockIntentID
	}
	rep.Locks += other.Locks
	rep.Records += other.Records
	rep.InFlight = append(rep.InFlight, other.InFlight...)
	for _, w := range other.Warnings {
		rep.Warnings = append(rep.Warnings, w)
		rep.Notices = append(rep.Notices, warningNotice(w))
	}
	if rep.Items == 0 && other.Items > 0 {
		rep.Findings = append(rep.Findings, Finding{Code: CodeDataAtOtherRoot, Path: r.DataRoot, Status: StatusManual,
			Message: fmt.Sprintf("swamp reads the data root of namespace %q, %s, which holds no data item, while %d item(s) sit at the un-namespaced root %s: "+
				"swamp finds no data", r.Namespace, r.DataRoot, other.Items, other.DataRoot),
			Fix: "unset the namespace so that swamp reads the data where it is " +
				"(or, to keep the namespace, move the data into it with the forward migration)",
			Remedy: report.RemedyUnsetNamespace})
		// swamp's namespace_migration note said the same as a layout, with
		// the forward migration as its only remedy: the finding replaces it.
		rep.dropNotes(func(n Notice) bool {
			return strings.HasPrefix(n.Message, "swamp's "+SwampCheckMigration+" check fails")
		})
	}
	rep.Remaining = 0
	for _, f := range rep.Findings {
		if f.Status != StatusRepaired {
			rep.Remaining++
		}
	}
	return nil
}

// dropNotes removes the notes drop matches (from Notes and Notices).
func (rep *Report) dropNotes(drop func(Notice) bool) {
	notes, notices := []string{}, []Notice{}
	for _, n := range rep.Notices {
		if n.Kind == NoticeNote && drop(n) {
			continue
		}
		if n.Kind == NoticeNote {
			notes = append(notes, n.Message)
		}
		notices = append(notices, n)
	}
	rep.Notes, rep.Notices = notes, notices
}
