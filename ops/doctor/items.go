package doctor

// The items check family: each item's versions and its `latest` (version_unreadable,
// latest_unreadable, latest_not_found, latest_damaged), and the unit that repairs them.

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/store"
)

// modelLockPath is swamp's per-model lock of the model holding itemDir, or
// "" when the model directory does not exist (nothing to lock: taking the
// lock would create directories for a model that is not there).
func (s *survey) modelLockPath(typ, modelID, modelDir string) string {
	if modelDir == "" {
		return ""
	}
	// One stat per model, not per item (a survey asks for every item).
	isDir, ok := s.modelDirs[modelDir]
	if !ok {
		fi, err := s.fsys.Stat(modelDir)
		isDir = err == nil && fi.IsDir()
		if s.modelDirs == nil {
			s.modelDirs = map[string]bool{}
		}
		s.modelDirs[modelDir] = isDir
	}
	if !isDir {
		return ""
	}
	return lock.ModelPath(s.r.Base, s.r.Namespace, meta.NormalizeType(typ), modelID)
}

// pointerCodes maps store's item-level `latest` codes to findings.
var pointerCodes = map[store.Code]Code{
	store.CodeLatestUnreadable: CodeLatestUnreadable,
	store.CodeLatestNotFound:   CodeLatestNotFound,
	store.CodeLatestMissing:    CodeLatestDamaged,
	store.CodeLatestEmpty:      CodeLatestDamaged,
	store.CodeLatestUnparsable: CodeLatestDamaged,
	store.CodeLatestInvalid:    CodeLatestDamaged,
}

// analyzeItem decides an item's findings and repair.
func (s *survey) analyzeItem(di *surveyItem) *unit {
	u := &unit{}
	modelDir := ""
	if di.item.Dir != "" {
		modelDir = filepath.Dir(di.item.Dir)
	}
	u.lockPath = s.modelLockPath(di.item.Type, di.item.ModelID, modelDir)
	st := di.st
	name := di.item.Key()

	// The version the repair leaves as latest: the last readable one at or
	// below what `latest` designates, else (nothing there) the highest
	// readable one. Versions above `latest` may be uncommitted deferred
	// writes (swamp-format §9.8), so they are used only when nothing else is readable.
	var target *store.Version
	if st != nil {
		target = st.LastGood
		if target == nil {
			target = st.HighestReadable
		}
		for _, p := range st.Problems {
			if p.Code == store.CodeMetadataUnreadable || p.Code == store.CodeRawUnreadable {
				cause := p.Err
				var pe *fs.PathError
				if errors.As(cause, &pe) {
					cause = pe.Err
				}
				u.blocked = fmt.Sprintf("%s cannot be read (%v), which says nothing about its bytes; "+
					"fix the access problem and run the doctor again", p.Path, cause)
				break
			}
		}
		s.analyzeVersions(u, di)
		s.analyzeLatest(u, di, target)
	}
	s.analyzeCatalog(u, di, target)

	if u.blocked != "" {
		for i := range u.findings {
			u.findings[i].auto = false
			u.findings[i].Fix = "none: " + u.blocked
			u.findings[i].Remedy, u.findings[i].Then = u.blockedBy, report.RemedyCheckAgain
			if u.blockedBy == "" {
				u.findings[i].Remedy = report.RemedyFixAccess
			}
		}
		u.moves, u.keepLatest, u.latest, u.catalog = nil, nil, nil, nil
	}
	for i := range u.findings {
		u.findings[i].Item = name
	}
	return u
}

// analyzeVersions quarantines every unreadable version directory (and a
// non-directory at the version path `latest` designates).
func (s *survey) analyzeVersions(u *unit, di *surveyItem) {
	st := di.st
	unreadable := append([]*store.Version(nil), st.Versions...)
	if l := st.Latest; l != nil && l.State == store.StateDamaged && st.LatestReadable == nil && hasCode(l.Problems, store.CodeVersionNotDir) {
		unreadable = append(unreadable, l) // a file named like the version
	}
	for _, p := range st.Problems {
		if p.Code != store.CodeVersionDirBeyondMax {
			continue
		}
		// Not a version anyone can read, and the one swamp's fallback and
		// next write trip over: damage, moved aside like an unreadable
		// version (nothing deleted).
		dest := s.qpath(p.Path)
		u.moves = append(u.moves, Move{From: p.Path, To: dest})
		u.add(Finding{Code: CodeVersionUnreadable, Path: p.Path, Message: p.Message, Fix: "move it to " + dest}, true)
	}
	for _, v := range unreadable {
		if v.Readable() || s.isInFlight(u, di, v) {
			continue
		}
		dest := s.qpath(v.Dir)
		u.moves = append(u.moves, Move{From: v.Dir, To: dest})
		u.add(Finding{Code: CodeVersionUnreadable, Path: v.Dir, Version: v.Number,
			Message: fmt.Sprintf("version %d is %s: %s", v.Number, v.State, problemMessages(v.Problems)),
			Fix:     "move it to " + dest}, true)
	}
}

// allInFlight: every version of the item is a recorded write in progress.
func (s *survey) allInFlight(di *surveyItem) bool {
	n := 0
	for _, f := range s.inFlight {
		if f.Item == di.item.Key() {
			n++
		}
	}
	return n > 0 && n == len(di.st.Versions)
}

// analyzeLatest rewrites a `latest` that does not designate a readable
// version, or moves it into quarantine when no readable version remains.
func (s *survey) analyzeLatest(u *unit, di *surveyItem, target *store.Version) {
	st := di.st
	var problems []store.Problem
	for _, p := range st.Problems {
		if _, ok := pointerCodes[p.Code]; ok {
			problems = append(problems, p)
		}
	}
	if len(problems) == 0 {
		return
	}
	if _, live := s.liveHolder(u); live && committedLatest(st) == 0 && st.HighestReadable == nil && s.allInFlight(di) {
		return // the first write of the item: swamp writes latest last
	}
	path := filepath.Join(di.item.Dir, "latest")
	fi, err := s.fsys.Lstat(path)
	exists := err == nil
	fix, auto := "", true
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		u.blocked = "cannot inspect latest: " + err.Error()
	case exists && fi.Mode()&fs.ModeSymlink != 0 && isOutside(statErr(s.fsys, path)):
		// Not swamp's legacy `latest -> N`: a link out of the repo, never
		// followed (fsx/confine.go) and never rewritten by the repair.
		u.blocked, u.blockedBy = fmt.Sprintf("latest is a symlink out of the repo (%v); remove it by hand (swampj never reads what it names), then run the doctor again", statErr(s.fsys, path)), report.RemedyInspect
	case exists && fi.Mode()&fs.ModeSymlink != 0:
		u.blocked, u.blockedBy = "latest is a legacy symlink; run 'swamp repo upgrade' (it rewrites it as a file), then the doctor again", report.RemedySwampUpgrade
	case exists && !fi.Mode().IsRegular():
		u.blocked, u.blockedBy = "latest is not a regular file; move it away by hand, then run the doctor again", report.RemedyInspect
	case target != nil:
		var old []byte
		if exists {
			if old, err = s.fsys.ReadFile(path); err != nil {
				u.blocked = "cannot read latest: " + err.Error()
				var tl *fsx.TooLargeError
				if errors.As(err, &tl) {
					u.blocked, u.blockedBy = fmt.Sprintf("latest is %d bytes, far more than a version number: look at it and move it away by hand, then run the doctor again", tl.Size), report.RemedyInspect
				}
				break
			}
		}
		data := []byte(strconv.FormatInt(target.Number, 10))
		u.latest = &journal.Step{Kind: protocol.KindWrite, Path: path, Data: data, OldData: old, OldExists: exists,
			Note: fmt.Sprintf("point latest of %s at version %d, its last readable version", di.item.Key(), target.Number)}
		fix = fmt.Sprintf("rewrite latest to %d", target.Number)
		if exists {
			keep := s.qpath(path)
			u.keepLatest = &journal.Step{Kind: protocol.KindWrite, Path: keep, Data: old,
				Note: fmt.Sprintf("keep the old latest of %s (%q) in quarantine", di.item.Key(), shortText(old))}
			fix += fmt.Sprintf(" (its old content %q is kept at %s)", shortText(old), keep)
		}
		if st.HighestReadable != nil && st.LastGood == nil {
			fix += "; the only readable versions are above the old latest (possibly an uncommitted deferred write)"
		}
	case exists:
		dest := s.qpath(path)
		u.moves = append(u.moves, Move{From: path, To: dest})
		fix = "move latest to " + dest + " (no readable version remains)"
	default:
		fix = "nothing to rewrite: no readable version remains and there is no latest"
		auto = len(u.moves) > 0
	}
	for _, p := range problems {
		u.add(Finding{Code: pointerCodes[p.Code], Path: path, Version: st.Pointer.Version,
			Message: p.Message, Fix: fix}, auto)
	}
}
