package journal

// Who holds the journal, and for how long (writers of different
// models run side by side).
//
// Two locks, both flock(2) locks that the kernel releases when their holder
// dies (a crash, a power cut, a SIGKILL):
//
//   - The repo lock, {journal}.lock, held from Open to Close. Writers of
//     data (Options.Shared) hold it shared, so any number of them run at
//     once; everything else that opens the journal for writing — a
//     migration, a namespace change, recover, a repair, a catalog rebuild —
//     holds it exclusively, so it runs alone, as every command did before.
//   - The file lock of the bbolt file itself, the journal's turn: an
//     exclusive holder keeps it from Open to Close (as bbolt always did); a
//     shared holder takes it only for its own transactions (Hold) and lets
//     it go between them, while its data is staged, published and
//     catalogued. Waiting for it blocks in the kernel: bbolt alone would
//     poll in 50 ms sleeps, longer than a whole write.
//
// What a shared holder may do with another writer's open intent: only what
// the lock rules of its intent allow (Intent.Concurrent): an intent made
// under the shared lock may belong to a live writer, so a shared holder
// drives it only while it holds one of the swamp locks that intent was
// planned under (its writer would hold it were it alive); an exclusive
// holder drives every open intent, since no writer can be alive beside it.
// Package engine applies that rule (RecoverOpen); this file provides the
// locks it rests on.
//
// The holder record ({journal}.holder) is written when the turn is taken
// and removed when it is let go, by either kind of holder, so a record
// found by whoever takes the turn next means its last holder died holding
// it; a shared holder takes the turn before it stages anything (see
// engine.StartRecording), so a writer that dies with hidden staging and no
// durable intent always leaves that evidence (CrashLeftoversUnchecked).

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/swampj/swampj/fsx"
)

// RepoLockPath is the repo lock beside the journal.
func RepoLockPath(journalPath string) string { return journalPath + ".lock" }

// repoGatePath is the repo lock's gate: an exclusive holder-to-be takes it
// before it waits for the repo lock, and a shared one passes through it
// (takes it shared, then lets go) before taking the repo lock, so that a
// stream of writers, each holding the repo lock shared for a moment, can
// never keep a waiting migration or recover out for ever (flock(2) grants
// a shared request while an exclusive one waits).
func repoGatePath(journalPath string) string { return journalPath + ".gate" }

// Shared reports whether the journal is held only for its own
// transactions (Options.Shared), beside other shared holders.
func (j *Journal) Shared() bool { return j != nil && j.shared }

// Hold takes the journal's turn, if this holder does not hold it already,
// and keeps it until release is called (every Hold needs its release;
// holds nest). An exclusive journal holds its turn from Open to Close:
// Hold is then a no-op. Recovery of other writers' intents and a write's
// first commit run under one Hold, so nothing another writer commits can
// come between what they read and what they do.
func (j *Journal) Hold() (release func(), err error) {
	if !j.shared {
		return func() {}, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, fmt.Errorf("journal %s: used after Close", j.path)
	}
	if j.db == nil {
		if err := j.takeTurn(); err != nil {
			return nil, err
		}
	}
	j.holds++
	return j.releaser(), nil
}

// releaser is the release of one hold (called with the hold counted).
func (j *Journal) releaser() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			j.mu.Lock()
			defer j.mu.Unlock()
			if j.holds--; j.holds == 0 && !j.closed {
				j.letTurnGo()
			}
		})
	}
}

// Release lets go of the turn a shared Open returned holding (see Open).
// A no-op for an exclusive journal, or called twice.
func (j *Journal) Release() {
	if r := j.openHold; r != nil {
		j.openHold = nil
		r()
	}
}

// takeTurn opens the bbolt file (its file lock is the turn) and writes the
// holder record. Called with j.mu held and no turn held.
func (j *Journal) takeTurn() error {
	db, err := openBolt(j.fsys, j.path, j.opts.LockTimeout, false)
	if err != nil {
		return err
	}
	j.db = db
	if err := j.recordHolder(); err != nil {
		j.db = nil
		_ = db.Close()
		return err
	}
	return nil
}

// letTurnGo removes the holder record and closes the bbolt file. Lazy
// marks stay pending: they ride along with this holder's next commit, or
// Close commits them.
func (j *Journal) letTurnGo() {
	if j.db == nil {
		return
	}
	if !j.crashed.Load() {
		_ = j.fsys.Remove(HolderPath(j.path))
	}
	_ = j.db.Close()
	j.db = nil
}

// view and update run one bbolt transaction under the turn.
func (j *Journal) view(fn func(tx *bolt.Tx) error) error {
	release, err := j.Hold()
	if err != nil {
		return err
	}
	defer release()
	return j.db.View(fn)
}

func (j *Journal) updateTx(fn func(tx *bolt.Tx) error) error {
	release, err := j.Hold()
	if err != nil {
		return err
	}
	defer release()
	return j.noteCrash(j.db.Update(fn))
}

// failpoint is the file system's failpoint of that name (the crash suite's
// cut points inside the journal's commits).
func (j *Journal) failpoint(name string) error { return j.noteCrash(j.fsys.Failpoint(name)) }

// noteCrash remembers a simulated crash (fsx.IsCrash): from then on this
// holder behaves as a dead process would, leaving its holder record in
// place when its turn is let go.
func (j *Journal) noteCrash(err error) error {
	if err != nil && fsx.IsCrash(err) {
		j.crashed.Store(true)
	}
	return err
}

// repoLock is the flock on RepoLockPath. The lock files are opened with
// package os, not through fsx, as bbolt opens the journal itself: they hold
// no data (their content is never read or written) and the kernel drops
// their locks at a crash, so there is no state of theirs a crash test
// could cut.
type repoLock struct{ f *os.File }

// lockRepo takes the repo lock, shared or exclusive, waiting at most
// timeout (the kernel wakes the waiter; no polling).
func lockRepo(journalPath string, shared bool, timeout time.Duration) (*repoLock, error) {
	deadline := time.Now().Add(timeout)
	gate, err := lockFile(repoGatePath(journalPath), !shared, timeout)
	if err != nil {
		return nil, err
	}
	defer gate.Close() // through the gate: let it go once the repo lock is held (or not)
	f, err := lockFile(RepoLockPath(journalPath), !shared, max(time.Until(deadline), time.Millisecond))
	if err != nil {
		return nil, err
	}
	return &repoLock{f: f}, nil
}

// lockFile opens (creating) path and takes its flock, waiting at most
// timeout.
func lockFile(path string, exclusive bool, timeout time.Duration) (*os.File, error) {
	f, err := fsx.OpenPlain(path, os.O_RDWR|os.O_CREATE, fsx.FileMode)
	if err != nil {
		return nil, lockFileError(path, err)
	}
	if err := flockWait(f, exclusive, timeout); err != nil {
		if !errors.Is(err, errFlockTimeout) {
			_ = f.Close()
		}
		return nil, err
	}
	return f, nil
}

// lockFileError says what to do about a lock file that is not one: a
// symlink or a FIFO planted at its name is never followed or waited on.
func lockFileError(path string, err error) error {
	var nr *fsx.NotRegularError
	if errors.As(err, &nr) {
		return fmt.Errorf("%w; swampj keeps only its own empty lock file there: remove %s (nothing is lost) and run the command again", err, path)
	}
	return err
}

func (l *repoLock) unlock() {
	if l != nil && l.f != nil {
		_ = l.f.Close() // closing the last descriptor releases the flock
		l.f = nil
	}
}

// errFlockTimeout: the lock stayed held for the whole wait (bbolt's own
// timeout error, so openBolt reports it as bbolt's). The descriptor then
// belongs to the waiter left behind, which closes it (flockWait).
var errFlockTimeout = bolterrors.ErrTimeout

// boltOpenFile is bbolt's OpenFile for the journal: it opens the file and
// waits, in the kernel, for its flock, so that bbolt's own flock (the same
// open file description) succeeds at once instead of polling.
func boltOpenFile(timeout time.Duration, exclusive bool) func(string, int, os.FileMode) (*os.File, error) {
	return func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := fsx.OpenPlain(name, flag, perm)
		if err != nil {
			return nil, err
		}
		if err := flockWait(f, exclusive, timeout); err != nil {
			if !errors.Is(err, errFlockTimeout) {
				_ = f.Close()
			}
			return nil, err
		}
		return f, nil
	}
}

// liveHere holds the intents that journals of this process have begun
// and not yet finished, abandoned or closed: "path\x00id".
var liveHere sync.Map

func liveKey(path string, id uint64) string { return path + "\x00" + fmt.Sprint(id) }

// IntentLive reports whether the writer of an open intent is certainly
// alive, so that the intent is a write in progress rather than an
// interrupted one: it was begun beside other writers (Concurrent), on this
// host, by a process that still exists — or, begun by this process, by a
// journal that has not finished, abandoned or closed it. Inspections (the
// doctor, journal list) use it; recovery never does (it goes by locks:
// engine.RecoverOpen). A writer on another host is never known alive here.
func IntentLive(journalPath string, in *Intent) bool {
	if !in.Concurrent || !in.Open() {
		return false
	}
	if host, _ := os.Hostname(); in.Host != host {
		return false
	}
	if in.PID == os.Getpid() {
		_, ok := liveHere.Load(liveKey(journalPath, in.ID))
		return ok
	}
	return fsx.ProcessExists(in.PID)
}
