package doctor

// Dead lock files. swamp creates a lock file and writes its JSON
// in a second call, without fsync (swamp-format §8), so a crash or power cut leaves a
// zero-byte lock, and a torn write an unparseable one; swamp never removes
// either, and every later command on that model (or, for the datastore lock,
// every structural command) times out with exit 75. A lock naming a pid that
// no longer exists on this host is dead too (swamp itself would take that
// one over, but only when it next tries; until then `swamp datastore lock
// status` shows a holder that is gone).
//
// The doctor judges every lock file with lock.JudgeWithin and newer swamp's
// window (lock.InFlightWindow, swamp-format §13.3: an empty or unreadable lock younger
// than the TTL is a holder between create and write, or mid-heartbeat,
// reported in flight and never repaired) and reports each one that is
// provably dead (CodeLockDead). The repair moves them into
// quarantine rather than deleting them: a lock file is not user data, but a
// rename is a journaled step recovery can undo with the existing machinery,
// it keeps the bytes for whoever investigates the crash, and it costs the
// same as a remove. The quarantine is outside every tree swamp's lock drain
// matches ({base}/.swampj-quarantine/{stamp}/locks/…, never
// data/<type>/<id>/.lock relative to the base).
//
// Order: the dead locks are moved in an intent of their own, before the
// per-model locks are taken — a model whose lock file is dead can then be
// locked and repaired in the same run. That intent holds only the journal
// lock (never waiting on a model lock while holding it, the order every
// swampj writer keeps), and each move re-reads the file first and refuses
// if it changed or is no longer dead (protocol.KindQuarantineLock).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
)

// lockMove is one dead lock and where it goes.
type lockMove struct {
	Move
	data []byte
}

// lockQPath is where a lock file under the base goes in quarantine.
func (s *survey) lockQPath(p string) string {
	base := s.r.Base
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		rel = filepath.Base(p)
	}
	return filepath.Join(s.qstamp, "locks", rel)
}

// surveyLocks judges every swamp lock file of the repo: dead ones become
// units repaired by the lock intent; every judgement is kept for the
// in-flight test (s.locks).
func (s *survey) surveyLocks(ctx context.Context) error {
	found, err := lock.FindLockFiles(s.fsys, s.r.Base, s.r.Namespace)
	return s.judgeLocks(ctx, found, err, nil)
}

// checkLocks judges every lock file, found in the listings the walk and
// the scan made (the directories they did not list are listed now), and
// swampj's own journal holder record.
func (s *survey) checkLocks(ctx context.Context) error {
	found, err := lock.FindLockFilesListed(s.fsys, s.r.Base, s.r.Namespace, func(dir string) ([]fs.DirEntry, error) {
		if ents, ok := s.w.listings[dir]; ok {
			return ents, nil
		}
		return s.fsys.ReadDir(dir)
	})
	if err := s.judgeLocks(ctx, found, err, s.w.early); err != nil {
		return err
	}
	s.surveyJournalHolder()
	return nil
}

// earlyLock is a lock file judged while the walk listed its model
// directory (before any of the model's items was scanned).
type earlyLock struct {
	j       lock.Judgement
	missing bool
	err     error
}

// judgeEarly judges the model lock in a directory the walk has just
// listed, if there is one, into early.
func (s *survey) judgeEarly(dir string, entries []fs.DirEntry, early map[string]earlyLock) {
	p := lock.ModelLockIn(s.r.Base, s.r.Namespace, dir, entries)
	if p == "" {
		return
	}
	// mtimes and heartbeats are real time, whatever the stamp clock says
	j, missing, err := lock.JudgeWithin(s.fsys, p, time.Now(), lock.InFlightWindow)
	early[p] = earlyLock{j, missing, err}
}

// judgeLocks judges the lock files found (err: the search's, reported as a
// warning), taking the judgement of a lock in early when there is one.
func (s *survey) judgeLocks(ctx context.Context, found []lock.Found, err error, early map[string]earlyLock) error {
	s.locks = map[string]lock.Judgement{}
	if err != nil {
		if fsx.IsCrash(err) || ctx.Err() != nil {
			return err
		}
		s.warnings = append(s.warnings, "lock files not all checked: "+err.Error())
	}
	now := time.Now() // mtimes and heartbeats are real time, whatever the stamp clock says
	for _, f := range found {
		e, seen := early[f.Path]
		if !seen {
			e.j, e.missing, e.err = lock.JudgeWithin(s.fsys, f.Path, now, lock.InFlightWindow)
		}
		j, missing, err := e.j, e.missing, e.err
		if err != nil {
			if fsx.IsCrash(err) {
				return err
			}
			s.warnings = append(s.warnings, fmt.Sprintf("lock %s not checked: %v", f.Path, err))
			continue
		}
		if missing {
			continue
		}
		s.lockCount++
		s.locks[f.Path] = j
		if j.InFlight {
			// Newer swamp's rule (swamp-format §13.3): empty or unreadable and younger
			// than the TTL is a live holder between create and write, or
			// mid-heartbeat: work in progress, never repaired.
			item := ""
			if f.Scope == "model" {
				item = f.Type + "/" + f.ModelID
			}
			s.inFlight = append(s.inFlight, InFlight{Item: item, Path: f.Path, Lock: f.Path,
				Message: fmt.Sprintf("lock %s is in flight: %s; it is left alone (dead only once older than %s)", f.Path, j.Why, lock.InFlightWindow)})
			continue
		}
		if !j.Dead {
			continue
		}
		what := "swamp's datastore lock"
		blocks := "every structural swamp command (datastore compact, data gc, data prune) waits on it and exits 75"
		item := ""
		if f.Scope == "model" {
			what = "swamp's lock of model " + f.Type + "/" + f.ModelID
			blocks = "every 'swamp model method run', workflow step, data delete and rename of that model waits on it and exits 75"
			item = f.Type + "/" + f.ModelID
			if j.Info != nil {
				blocks = "swamp takes it over on its next try, but until then 'swamp datastore lock status' names a holder that is gone"
			}
		} else if j.Info != nil {
			blocks = "swamp takes it over on its next structural command; until then lock status names a holder that is gone"
		}
		dest := s.lockQPath(f.Path)
		u := &unit{}
		u.lockMoves = append(u.lockMoves, lockMove{Move: Move{From: f.Path, To: dest}, data: j.Data})
		u.add(Finding{Code: CodeLockDead, Path: f.Path, Item: item,
			Message: fmt.Sprintf("%s is dead: %s; %s", what, j.Why, blocks),
			Fix:     "move it to " + dest + " (lock files are not data; nothing else changes)"}, true)
		s.units = append(s.units, u)
	}
	return nil
}

// surveyJournalHolder reports a journal holder record whose process is gone
// or that cannot be read. The journal lock itself is a bbolt flock, which
// the kernel releases with its process: it cannot be left behind. A
// confirmed repair replaces the record (journal.Open writes its own) and
// removes it when it closes.
func (s *survey) surveyJournalHolder() {
	p := journal.HolderPath(s.r.JournalPath)
	data, err := s.fsys.ReadFile(p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.warnings = append(s.warnings, fmt.Sprintf("journal holder record %s not checked: %v", p, err))
		}
		return
	}
	why := ""
	var h journal.Holder
	if jerr := json.Unmarshal(data, &h); jerr != nil || h.PID <= 0 {
		fi, err := s.fsys.Stat(p)
		if err != nil || time.Since(fi.ModTime()) <= lock.WriteWindow {
			return
		}
		why = fmt.Sprintf("it is not a holder record (%d bytes)", len(data))
	} else if host := hostname(); h.Host == host && !fsx.ProcessExists(h.PID) {
		why = fmt.Sprintf("it names pid %d on this host (started %s, %s), which does not exist",
			h.PID, h.StartedAt.Format(time.RFC3339), strings.Join(h.Command, " "))
	}
	if why == "" {
		return
	}
	u := &unit{holderFix: true}
	u.add(Finding{Code: CodeJournalHolderStale, Path: p,
		Message: "swampj's journal holder record is stale: " + why + "; nothing is blocked (the journal lock is a flock its process released), but a lock timeout would name this holder",
		Fix:     "replace it: the repair's own journal lock writes a fresh record and removes it when done"}, true)
	s.units = append(s.units, u)
}

// lockRepair runs the lock intent: every dead lock of a fresh look, under
// the journal lock only. It returns what it moved and the intent id (0:
// nothing to do).
func lockRepair(ctx context.Context, fsys fsx.FS, r *repo.Repo, o Options) (fixed []unitFix, moves []Move, id uint64, qstamp string, err error) {
	sess, err := openRepairSession(r, o)
	if err != nil {
		return nil, nil, 0, "", err
	}
	defer func() {
		if cerr := closeRepairSession(sess, o, "the lock repair"); cerr != nil {
			fixed, moves, id, qstamp, err = nil, nil, 0, "", cerr
		}
	}()
	open, err := sess.Journal().OpenIntents()
	if err != nil {
		return nil, nil, 0, "", err
	}
	if len(open) > 0 {
		return nil, nil, 0, "", report.NewOpenIntentsError(open, "run the doctor again")
	}
	s := &survey{fsys: fsys, r: r, o: o}
	if err := s.chooseQuarantine(); err != nil {
		return nil, nil, 0, "", sess.Note(err)
	}
	if err := s.surveyLocks(ctx); err != nil {
		return nil, nil, 0, "", sess.Note(err)
	}
	in := &journal.Intent{Kind: IntentKindRepair, Repo: r.Dir, Command: o.Command}
	planned := map[string]bool{}
	var steps []journal.Step
	for _, u := range s.units {
		for _, m := range u.lockMoves {
			missing, err := protocol.MissingDirs(fsys, filepath.Dir(m.To), planned)
			if err != nil {
				return nil, nil, 0, "", sess.Note(err)
			}
			for _, d := range missing {
				in.Steps = append(in.Steps, journal.Step{Kind: protocol.KindMkdir, Path: d, Note: "create a quarantine directory"})
			}
			steps = append(steps, journal.Step{Kind: protocol.KindQuarantineLock, Path: m.From, To: m.To, OldData: m.data,
				Note: "move a dead lock file into quarantine"})
			moves = append(moves, m.Move)
		}
		fixed = append(fixed, u.findings...)
	}
	if len(steps) == 0 {
		return fixed, nil, 0, "", nil
	}
	if len(in.Steps) > 0 {
		in.Steps = append(in.Steps, journal.Step{Kind: engine.KindBarrier, Note: "make the quarantine directories durable"})
	}
	in.Steps = append(in.Steps, steps...)
	in.Steps = append(in.Steps, journal.Step{Kind: engine.KindBarrier, Note: "make the moves durable"})
	in.Summary = fmt.Sprintf("doctor: move %d dead lock file(s) into quarantine", len(steps))

	env := &engine.Env{FS: fsys, Log: o.Logger}
	if err := runRepairIntent(ctx, sess, env, in, "the lock repair"); err != nil {
		return nil, nil, 0, "", err
	}
	return fixed, moves, in.ID, s.qstamp, nil
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
