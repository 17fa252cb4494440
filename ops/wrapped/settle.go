package wrapped

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
)

// SettleOptions configure Settle.
type SettleOptions struct {
	host.Common
}

// Settled is what settling one dead run found and did.
type Settled struct {
	Run *journal.Run `json:"run"`
	// Changed is how many paths its change log held; Scope the item
	// directories and records the doctor looked at (nil with Whole).
	Changed int      `json:"changed"`
	Scope   []string `json:"scope"`
	// Whole: the run went without the barrier, so the whole datastore was
	// doctored.
	Whole bool `json:"whole"`
	// Findings the doctor made; Moves what it quarantined (never deleted).
	Findings []doctor.Finding `json:"findings"`
	Moves    []doctor.Move    `json:"moves"`
	// Remaining are findings the repair could not fix (the run is closed
	// all the same: `swampj doctor` shows them).
	Remaining int `json:"remaining"`
	// InFlight are versions the doctor left alone because a live process
	// holds their model's lock: the run stays open (Deferred) and the next
	// command settles it again, once that lock is free or dead.
	InFlight []doctor.InFlight `json:"inFlight,omitempty"`
	Deferred bool              `json:"deferred,omitempty"`
}

// Sentence says in one line what was settled.
func (s Settled) Sentence() string {
	what := fmt.Sprintf("%d changed path(s)", s.Changed)
	if s.Whole {
		what = "the whole datastore (it ran without the barrier)"
	}
	cmd := ""
	if s.Run != nil && len(s.Run.Command) > 0 {
		cmd = fmt.Sprintf(" of %q (pid %d, started %s)", s.Run.Command, s.Run.PID, s.Run.Started.Format(time.RFC3339))
	}
	verb := "settled"
	if s.Deferred {
		verb = "checked"
	}
	out := fmt.Sprintf("%s a wrapped run%s that ended without its final barrier: doctored %s", verb, cmd, what)
	switch {
	case len(s.Moves) > 0:
		out += fmt.Sprintf(", repaired %d finding(s) (%d file(s) moved to quarantine)", len(s.Findings)-s.Remaining, len(s.Moves))
	case len(s.Findings) == 0:
		out += ", nothing damaged"
	}
	if s.Remaining > 0 {
		out += fmt.Sprintf("; %d finding(s) remain, which the doctor reports", s.Remaining)
	}
	if s.Deferred {
		out += fmt.Sprintf("; %d version(s) are being written under a live lock, so the run stays open and the next command settles it again", len(s.InFlight))
	}
	return out
}

// Pending reports, from one directory listing, whether a wrapped run
// whose wrapper is gone is waiting to be settled: what a command that
// needs a settled repo checks first, at the cost of a readdir of .swamp.
func Pending(fsys fsx.FS, journalPath string) bool {
	logs, err := journal.RunLogs(fsys, journalPath)
	if err != nil {
		return false
	}
	for _, l := range logs {
		if !journal.RunLive(l) {
			return true
		}
	}
	return false
}

// CountPending is how many wrapped runs whose wrapper died wait to be
// settled (Pending, counted: what a preview reports).
func CountPending(fsys fsx.FS, journalPath string) int {
	logs, err := journal.RunLogs(fsys, journalPath)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range logs {
		if !journal.RunLive(l) {
			n++
		}
	}
	return n
}

// Settle finishes every wrapped run whose wrapper died (no final barrier,
// no doctor): it doctors and repairs exactly what that run's change log
// says the command was about to change — quarantine, never delete — and
// closes the record. Live runs are left alone. A caller holding the
// journal must close it first: the repair opens its own session.
func Settle(ctx context.Context, r *repo.Repo, opts SettleOptions) ([]Settled, error) {
	fsys := fsx.OrReal(opts.FS)
	logs, err := journal.RunLogs(fsys, r.JournalPath)
	if err != nil {
		return nil, err
	}
	var out []Settled
	for _, l := range logs {
		if journal.RunLive(l) {
			continue
		}
		s, err := settleOne(ctx, fsys, r, l, opts)
		if s != nil {
			out = append(out, *s)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func settleOne(ctx context.Context, fsys fsx.FS, r *repo.Repo, log string, opts SettleOptions) (*Settled, error) {
	wopts := Options{Common: host.Common{Command: opts.Command, JournalLockTimeout: opts.JournalLockTimeout, Logger: opts.Logger, FS: fsys}}
	var rec *journal.Run
	if err := withJournal(fsys, r.Dir, wopts, func(j *journal.Journal) error {
		var err error
		rec, err = j.RunByLog(log)
		return err
	}); err != nil {
		return nil, err
	}
	if rec == nil {
		// The log was made but its record never committed: the command
		// never started. Nothing to doctor.
		if err := fsys.Remove(log); err != nil {
			return nil, err
		}
		return nil, fsys.SyncDir(r.LocalDir)
	}
	paths, err := readLog(fsys, log)
	if err != nil {
		return nil, fmt.Errorf("reading the change log %s of wrapped run %d: %w", log, rec.ID, err)
	}
	s := &Settled{Run: rec, Changed: len(paths), Whole: !rec.Guarded}
	var only []string
	if rec.Guarded {
		only = Scope(fsys, r, paths)
		s.Scope = only
		if only == nil {
			only = []string{} // a scope of nothing, not the whole datastore
		}
	}
	if len(paths) > 0 || !rec.Guarded {
		rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: opts.JournalLockTimeout, SwampLockTimeout: opts.SwampLockTimeout, Command: opts.Command, Logger: opts.Logger, FS: fsys}, Repair: true, Confirm: true, VerifyChecksum: true, Only: only})
		if err != nil {
			return s, fmt.Errorf("doctoring what wrapped run %d changed: %w", rec.ID, err)
		}
		s.Findings, s.Moves, s.Remaining, s.InFlight = rep.Findings, rep.Moves, rep.Remaining, rep.InFlight
	}
	if len(s.InFlight) > 0 {
		// A version the dead command may have left half-written is under a
		// lock some process still holds: it cannot be judged yet, and
		// closing the run would leave it unjudged for good.
		s.Deferred = true
		return s, nil
	}
	outcome := "settled after its wrapper died: " + s.Sentence()
	if err := withJournal(fsys, r.Dir, wopts, func(j *journal.Journal) error { return j.CloseRun(rec.ID, outcome) }); err != nil {
		return s, err
	}
	if err := fsys.Remove(log); err != nil {
		return s, err
	}
	return s, fsys.SyncDir(r.LocalDir)
}

// SettleChecked closes every dead run of the repo at repoDir whose changes
// the caller has just checked by other means (a remote datastore's cache
// doctor, which checks every cached file the next push could upload): the
// records close with outcome and their logs go. Live runs are left alone.
func SettleChecked(ctx context.Context, repoDir, journalPath string, outcome string, opts SettleOptions) ([]Settled, error) {
	fsys := fsx.OrReal(opts.FS)
	logs, err := journal.RunLogs(fsys, journalPath)
	if err != nil {
		return nil, err
	}
	wopts := Options{Common: host.Common{Command: opts.Command, JournalLockTimeout: opts.JournalLockTimeout, Logger: opts.Logger, FS: fsys}}
	var out []Settled
	for _, l := range logs {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if journal.RunLive(l) {
			continue
		}
		var rec *journal.Run
		if err := withJournal(fsys, repoDir, wopts, func(j *journal.Journal) error {
			var err error
			if rec, err = j.RunByLog(l); err != nil || rec == nil {
				return err
			}
			return j.CloseRun(rec.ID, outcome)
		}); err != nil {
			return out, err
		}
		if rec != nil {
			paths, _ := readLog(fsys, l)
			out = append(out, Settled{Run: rec, Changed: len(paths)})
		}
		if err := fsys.Remove(l); err != nil {
			return out, err
		}
		if err := fsys.SyncDir(filepath.Dir(l)); err != nil {
			return out, err
		}
	}
	return out, nil
}
