// Package session is the journal session every mutating entry point of ops
// runs in, written once: open the journal (swampj's repo lock, held for the
// whole operation), finish what earlier runs left open, sweep what writes
// that died before their intent was durable left, run intents, and close
// (commit the done marks) or abandon (a simulated crash: write nothing
// more). Inspect is its read-only twin for commands that only look.
//
// Reading order: session.go (this), recovery.go (RecoverOpen and
// PreviewOpen, what finishing an open intent reports), stagename.go (the
// owner tokens in staging names, and the leftover sweep), log.go.
package session

import (
	"context"
	"errors"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/report"
)

// Session is one operation's exclusive hold on the journal. It remembers
// whether the process model crashed under it (fsx.IsCrash): a crashed
// session is abandoned, never closed, so nothing after the cut reaches the
// disk, as with a real crash.
type Session struct {
	j       *journal.Journal
	crashed bool
}

// JournalOptions are the journal's options of a command's shared options,
// built here once: the journal lock's timeout, the command recorded as its
// holder, and the logger's Warn for what opening the journal warns about.
func JournalOptions(c host.Common) journal.Options {
	return journal.Options{LockTimeout: c.JournalLockTimeout, Command: c.Command, Warn: WarnTo(c.Logger)}
}

// Open opens (creating if need be) the journal at path on c's file system
// and takes its exclusive lock, waiting up to c.JournalLockTimeout.
func Open(c host.Common, path string) (*Session, error) {
	return open(c.Disk(), path, JournalOptions(c))
}

func open(fsys fsx.FS, path string, opts journal.Options) (*Session, error) {
	j, err := journal.Open(fsys, path, opts)
	if err != nil {
		return nil, err
	}
	return &Session{j: j}, nil
}

// Journal is the session's journal.
// OpenForWrite opens the journal for a writer of data, beside other such
// writers (journal.Options.Shared: the repo lock shared, the journal's turn
// only for its own commits), and finishes in that first turn what earlier
// writers of its models left open (env.HeldLocks are its swamp locks), then
// sweeps what crashed writers staged (SweepLeftovers). An open intent only a
// process holding the repo alone may finish (engine.NeedsExclusiveError: a
// crashed migration, say) is finished by opening the journal exclusively
// once — waiting for the writers running beside it to end — before the
// shared open is made again. It returns the session, with
// the outcomes of every intent it drove and the leftovers it removed. The
// session is returned still holding that first turn, so the writer plans in
// it and hands it on to its intent's commit (engine.StartRecording holds the
// turn too) without letting go in between: the caller calls
// Journal().Release once the commit holds it, or Close.
func OpenForWrite(ctx context.Context, fsys fsx.FS, path string, opts journal.Options, env *engine.Env, dataRoot string) (*Session, []report.IntentOutcome, []string, error) {
	var outs []report.IntentOutcome
	var removed []string
	for attempt := 0; ; attempt++ {
		opts.Shared = true
		s, err := open(fsys, path, opts)
		if err != nil {
			return nil, outs, removed, &OpenError{Phase: PhaseOpen, Err: err}
		}
		o, err := s.FinishOpen(ctx, env)
		outs = append(outs, o...)
		var ne *engine.NeedsExclusiveError
		if errors.As(err, &ne) && attempt == 0 {
			if cerr := s.Close(); cerr != nil {
				return nil, outs, removed, &OpenError{Phase: PhaseFinish, Err: cerr}
			}
			o, r, err := finishExclusively(ctx, fsys, path, opts, env, dataRoot)
			outs, removed = append(outs, o...), append(removed, r...)
			if err != nil {
				return nil, outs, removed, err
			}
			continue
		}
		if err != nil {
			_ = s.Close()
			return nil, outs, removed, &OpenError{Phase: PhaseFinish, Err: err}
		}
		r, err := s.SweepLeftovers(ctx, fsys, dataRoot)
		removed = append(removed, r...)
		if err != nil {
			_ = s.Close()
			return nil, outs, removed, &OpenError{Phase: PhaseSweep, Err: err}
		}
		return s, outs, removed, nil
	}
}

// OpenError is OpenForWrite's failure, with the phase it failed in.
type OpenError struct {
	Phase string // PhaseOpen, PhaseFinish or PhaseSweep
	Err   error
}

// The phases of OpenForWrite.
const (
	PhaseOpen   = "open"   // opening the journal (a lock timeout, a damaged file)
	PhaseFinish = "finish" // finishing an open intent
	PhaseSweep  = "sweep"  // removing a crashed writer's staging
)

func (e *OpenError) Error() string { return e.Err.Error() }
func (e *OpenError) Unwrap() error { return e.Err }

// finishExclusively is OpenForWrite's exclusive turn: open alone, finish
// every open intent, sweep, close.
func finishExclusively(ctx context.Context, fsys fsx.FS, path string, opts journal.Options, env *engine.Env, dataRoot string) ([]report.IntentOutcome, []string, error) {
	opts.Shared = false
	s, err := open(fsys, path, opts)
	if err != nil {
		return nil, nil, &OpenError{Phase: PhaseOpen, Err: err}
	}
	defer s.Close()
	outs, err := s.FinishOpen(ctx, env)
	if err != nil {
		return outs, nil, &OpenError{Phase: PhaseFinish, Err: err}
	}
	removed, err := s.SweepLeftovers(ctx, fsys, dataRoot)
	if err != nil {
		return outs, removed, &OpenError{Phase: PhaseSweep, Err: err}
	}
	return outs, removed, nil
}

func (s *Session) Journal() *journal.Journal { return s.j }

// Note records err's crash, if it is one, and returns err: every error of
// the session's work passes through it, so Close knows to abandon. A nil
// Session (an operation on a journal its host lent it) notes nothing.
func (s *Session) Note(err error) error {
	if s != nil && fsx.IsCrash(err) {
		s.crashed = true
	}
	return err
}

// Crashed says whether the process model crashed under the session.
func (s *Session) Crashed() bool { return s != nil && s.crashed }

// FinishOpen drives every open intent forward on env (recovery's own
// loop, under the locks the caller holds), before the caller plans its own
// intent: resume and re-run are one path. It returns what happened to
// each; on error the intent it stopped at stays open.
func (s *Session) FinishOpen(ctx context.Context, env *engine.Env) ([]report.IntentOutcome, error) {
	outs, err := RecoverOpen(ctx, env, s.j, false)
	return outs, s.Note(err)
}

// SweepLeftovers removes what writes that died before their intent was
// durable left under dataRoot (RemoveCrashLeftovers), once the open
// intents are finished.
func (s *Session) SweepLeftovers(ctx context.Context, fsys fsx.FS, dataRoot string) ([]string, error) {
	removed, err := RemoveCrashLeftovers(ctx, fsys, s.j, dataRoot)
	return removed, s.Note(err)
}

// Execute journals in with one synced commit and runs it (engine.Execute).
func (s *Session) Execute(ctx context.Context, env *engine.Env, in *journal.Intent, live engine.LiveApply) (*engine.Result, error) {
	res, err := engine.Execute(ctx, env, s.j, in, live)
	return res, s.Note(err)
}

// Close ends the session. A crashed session is abandoned (nil is
// returned: the crash was reported where it happened). Otherwise the
// journal is closed, which commits the done marks: a failure there loses
// nothing but those marks (the next recovery observes every step done and
// closes the intent), so callers whose work is on disk report it as a
// warning, unless fsx.IsCrash says the process model died right there.
// Close is idempotent.
func (s *Session) Close() error {
	if s == nil || s.j == nil {
		return nil
	}
	j := s.j
	s.j = nil
	if s.crashed {
		j.Abandon()
		return nil
	}
	return s.Note(j.Close())
}

// Inspect opens an existing journal read-only for commands that only
// look, and lists its open intents. It creates no journal: with none, it
// returns a nil journal (whose Close is a no-op) and no intents. Its
// shared lock keeps every swampj that changes the repo (they hold the
// exclusive lock for their whole run) out until Close, without writing, so
// it works on read-only media.
func Inspect(c host.Common, path string) (*journal.Journal, []*journal.Intent, error) {
	ok, err := journal.Exists(c.Disk(), path)
	if err != nil || !ok {
		return nil, nil, err
	}
	j, err := OpenReadOnly(c, path)
	if err != nil {
		return nil, nil, err
	}
	open, err := j.OpenIntents()
	if err != nil {
		_ = j.Close()
		return nil, nil, err
	}
	return j, open, nil
}

// OpenReadOnly opens the existing journal at path read-only
// (journal.OpenReadOnly), waiting up to c.JournalLockTimeout for a swampj
// that holds it exclusively.
func OpenReadOnly(c host.Common, path string) (*journal.Journal, error) {
	return journal.OpenReadOnly(c.Disk(), path, JournalOptions(c))
}

// InspectState is Inspect for a look that ends at once: the open intents
// and the journal's stale-catalog mark, with the journal closed again.
func InspectState(c host.Common, path string) ([]*journal.Intent, *journal.CatalogStale, error) {
	j, open, err := Inspect(c, path)
	if err != nil || j == nil {
		return nil, nil, err
	}
	stale, err := j.CatalogStale()
	if cerr := j.Close(); err == nil {
		err = cerr
	}
	return open, stale, err
}
