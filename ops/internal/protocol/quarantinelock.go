package protocol

// The quarantine-lock step kind: a dead swamp lock moved aside by a doctor
// repair (ops/doctor/locks.go), only while it is still dead.

import (
	"context"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/lock"
)

// KindQuarantineLock moves a dead lock file Path to To. OldData is the
// content it was judged dead with; the move happens only while the file
// still holds those bytes and is still dead (lock.StillDeadWithin, newer
// swamp's window for an empty lock).
const KindQuarantineLock = "quarantine-lock"

func observeQuarantineLock(_ context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	from, err := fsx.Exists(env.FS, s.Path)
	if err != nil {
		return engine.Conflict, "", err
	}
	to, err := fsx.Exists(env.FS, s.To)
	if err != nil {
		return engine.Conflict, "", err
	}
	switch {
	case to:
		// Moved. A file at Path too is a lock someone took since: theirs.
		return engine.Done, "", nil
	case from:
		return engine.NotDone, "", nil
	default:
		// Gone without our move: released or taken over and released by
		// its owner; there is nothing left to move or to put back.
		return engine.Done, "", nil
	}
}

func applyQuarantineLock(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	// Newer swamp's rule (swamp-format §13.3): an empty or unreadable lock younger than
	// the TTL is a writer at work, not dead.
	ok, detail, err := lock.StillDeadWithin(env.FS, s.Path, s.OldData, time.Now(), lock.InFlightWindow)
	if err != nil {
		return err
	}
	if !ok {
		return &lock.ChangedError{Path: s.Path, Detail: detail}
	}
	if err := env.FS.RenameNoReplace(s.Path, s.To); err != nil {
		return err
	}
	d.Add(filepath.Dir(s.Path), filepath.Dir(s.To))
	return nil
}

func undoQuarantineLock(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if ok, err := fsx.Exists(env.FS, s.To); err != nil || !ok {
		return err
	}
	if ok, err := fsx.Exists(env.FS, s.Path); err != nil {
		return err
	} else if ok {
		// A live lock took its place: putting a dead one back would wedge
		// that holder's model. It stays in quarantine.
		return nil
	}
	if err := env.FS.RenameNoReplace(s.To, s.Path); err != nil {
		return err
	}
	d.Add(filepath.Dir(s.Path), filepath.Dir(s.To))
	return nil
}
