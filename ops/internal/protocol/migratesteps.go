package protocol

// The step kinds of a namespace migration. They are the plain mkdir,
// rename and rmdir, except that debris a swamp writer leaves in a path the
// migration fills or empties is not taken for somebody's data.
//
// A writer that starts while a migration runs creates its per-model lock
// {base}[/{ns}]/data/{type}/{model}/.lock — and with it every missing
// parent directory — before it sees the migration's global lock and backs
// off (lockWriteModels). Under the namespace destination that leaves empty
// directories where the plan expected nothing; a writer that crashed there
// leaves a dead lock file too. A plain rename then sees both sides and
// recovery stops in both directions ("the disk matches neither…"). These
// kinds treat a tree that holds only directories and dead swamp lock files
// (lock.Dead) as absent: observing, it does not count; applying or undoing,
// it is removed first. A live lock in such a tree is a writer still
// backing off: the move waits for it (waitForBackingOffWriter), bounded.
//
// A lock file is never created in place: its record is written and
// fsynced in a hidden temp file beside it, .{32 hex}.tmp, which is then
// hard-linked as the lock (lock.createExclusive). Until the link, that temp
// is the only trace of the writer in the tree, so it is a lock in progress
// too: waited for while its writer may still link it, debris once it
// cannot (lock.TempDead: its holder gone, or older than any writer keeps
// one). A writer can be descheduled in that window for seconds on a loaded
// machine; taking its temp for data would end the move at once with a
// conflict instead of waiting for it to back off.
//
// Anything else in the tree — a file of any other name, a temp that holds
// something other than a lock record, a lock that stays live, a symlink —
// is data, keeps the step a conflict and is never removed.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/lock"
)

const (
	KindMove      = "move"       // rename Path to To; debris at the other side does not count
	KindMoveMkdir = "move-mkdir" // mkdir Path; undone even if debris appeared inside
	KindMoveRmdir = "move-rmdir" // remove Path once emptied, debris included
)

// modelLockName is the file name of swamp's per-model locks (swamp-format §8).
const modelLockName = ".lock"

func observeMove(ctx context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	o, detail, err := observeRename(ctx, env, s)
	if err != nil || o != engine.Conflict {
		return o, detail, err
	}
	// Both exist: one side may be only a writer's debris, or a writer's
	// live lock that is about to become debris.
	if fsx.Concurrent(env.FS) {
		waitForBackingOffWriter(env.FS, s.To)
		waitForBackingOffWriter(env.FS, s.Path)
	}
	if deb, err := onlyDebris(env.FS, s.To); err != nil {
		return engine.Conflict, "", err
	} else if deb {
		return engine.NotDone, s.To + " holds only empty directories or dead lock files", nil
	}
	if deb, err := onlyDebris(env.FS, s.Path); err != nil {
		return engine.Conflict, "", err
	} else if deb {
		return engine.Done, s.Path + " holds only empty directories or dead lock files", nil
	}
	if p, ok := FileWhereDirectory(env.FS, s.Path, s.To); ok {
		return engine.Conflict, FileWhereDirectoryText(p), nil
	}
	return engine.Conflict, detail + ", and both hold data", nil
}

// FileWhereDirectory reports the path, of a move's two, that is not a
// directory while the other is: a plain file standing where the moved
// directory must go (or a file the move would carry onto a directory).
func FileWhereDirectory(fsys fsx.FS, from, to string) (string, bool) {
	fa, errA := fsys.Lstat(from)
	fb, errB := fsys.Lstat(to)
	if errA != nil || errB != nil || fa.IsDir() == fb.IsDir() {
		return "", false
	}
	if fa.IsDir() {
		return to, true
	}
	return from, true
}

// FileWhereDirectoryText says what stops a migration at a plain file
// where a directory must go, and what ends it.
func FileWhereDirectoryText(path string) string {
	return fmt.Sprintf("a regular file stands where a directory must go: %s; move it away, then run the migration again", path)
}

func applyMove(ctx context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	for attempt := 1; ; attempt++ {
		if err := removeDebris(env.FS, s.To, d); err != nil {
			return err
		}
		err := applyRename(ctx, env, s, d)
		// A writer of a model below To, taking its lock while this
		// migration already held the datastore's, may have made the lock's
		// directories (and its lock file) there after the debris was looked
		// at; it backs off at once. Wait for it, as a re-run's observation
		// would, and try again, rather than stop with the intent open.
		if err == nil || attempt == 3 || !errors.Is(err, fs.ErrExist) || !fsx.Concurrent(env.FS) {
			return err
		}
		waitForBackingOffWriter(env.FS, s.To)
	}
}

func undoMove(ctx context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if err := removeDebris(env.FS, s.Path, d); err != nil {
		return err
	}
	return undoRename(ctx, env, s, d)
}

// removeDirWithDebris removes the directory s.Path if it holds nothing but
// debris; anything else in it is left, and reported.
func removeDirWithDebris(ctx context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if fsx.Concurrent(env.FS) {
		waitForBackingOffWriter(env.FS, s.Path)
	}
	deb, err := onlyDebris(env.FS, s.Path)
	if err != nil {
		return err
	}
	if !deb {
		return undoMkdir(ctx, env, s, d) // reports what it holds, removes nothing
	}
	return removeDebris(env.FS, s.Path, d)
}

// backingOffWait bounds how long a move waits for the live lock of a
// writer that is backing off. Such a writer releases its lock as soon as it
// has re-read the datastore lock; the bound only matters on a machine so
// loaded that the writer is not scheduled for seconds (the race test at a
// load of 25 on two cores hit this window, and before this wait the step
// reported the live lock as data at once).
const backingOffWait = 10 * time.Second

// waitForBackingOffWriter waits, up to backingOffWait, while path holds
// nothing but directories, swamp lock files and the temps they are linked
// from, of which at least one is live. While a structural command holds
// the datastore lock, a live per-model lock (or its temp) in a path it
// moves can only belong to a writer that created it before re-reading the
// datastore lock and is about to back off (the ordering argument on
// lockWriteModels); once it has, the tree is debris. Anything else in the
// tree ends the wait at once: that is data, and the observation says so.
func waitForBackingOffWriter(fsys fsx.FS, path string) {
	for deadline := time.Now().Add(backingOffWait); time.Now().Before(deadline); {
		locksOnly, err := onlyLocks(fsys, path, true)
		if err != nil || !locksOnly {
			return
		}
		if dead, err := onlyDebris(fsys, path); err != nil || dead {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// onlyDebris reports whether path is a directory (not a symlink) whose
// whole tree holds only directories and dead swamp lock files (and dead
// lock temps). A missing path is not debris (there is nothing to remove).
func onlyDebris(fsys fsx.FS, path string) (bool, error) {
	return onlyLocks(fsys, path, false)
}

// onlyLocks reports whether path is a directory (not a symlink) whose whole
// tree holds only directories, swamp lock files and lock temps — dead ones
// only, unless live is true.
func onlyLocks(fsys fsx.FS, path string, live bool) (bool, error) {
	fi, err := fsys.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.IsDir() {
		return false, nil
	}
	ents, err := fsys.ReadDir(path)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		p := filepath.Join(path, e.Name())
		switch {
		case e.IsDir():
			if ok, err := onlyLocks(fsys, p, live); err != nil || !ok {
				return false, err
			}
		default:
			isLock, dead, err := lockEntry(fsys, p, e, !live)
			if err != nil || !isLock || (!live && !dead) {
				return false, err
			}
		}
	}
	return true, nil
}

// lockEntry reports whether the directory entry e at p is a swamp lock
// file or a lock temp (lock.IsTempName, holding a lock record or nothing:
// lock.TempDead), and, when judge is set or it is a temp, whether it is
// dead.
func lockEntry(fsys fsx.FS, p string, e fs.DirEntry, judge bool) (isLock, dead bool, err error) {
	switch {
	case !e.Type().IsRegular():
		return false, false, nil
	case e.Name() == modelLockName:
		if !judge {
			return true, false, nil
		}
		dead, err := lock.Dead(fsys, p)
		return true, dead, err
	case lock.IsTempName(e.Name()):
		return lock.TempDead(fsys, p, time.Now())
	}
	return false, false, nil
}

// removeDebris removes path if it is debris (onlyDebris): dead lock files
// and lock temps, then directories bottom-up. A missing path is fine. Each
// file is judged again right before it is removed (a writer may link or
// write one meanwhile), and removing a directory fails if something
// appeared in it, so nothing but debris is ever removed; a path that is
// not debris is an error naming it.
func removeDebris(fsys fsx.FS, path string, d *engine.Dirty) error {
	err := removeDebrisOnce(fsys, path, d)
	if err == nil || !fsx.Concurrent(fsys) {
		return err
	}
	// A writer racing the structural command may be between creating its
	// per-model lock (and the lock's parent directories) and seeing swamp's
	// datastore lock, after which it backs off and removes the lock file;
	// the directories it leaves are debris. Give it a moment rather than
	// leave the intent open: a real file stays in the way, and the error
	// says so after the wait.
	for deadline := time.Now().Add(backingOffWait); err != nil && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		err = removeDebrisOnce(fsys, path, d)
	}
	return err
}

func removeDebrisOnce(fsys fsx.FS, path string, d *engine.Dirty) error {
	deb, err := onlyDebris(fsys, path)
	if err != nil {
		return err
	}
	if !deb {
		if ok, _ := fsx.Exists(fsys, path); !ok {
			return nil
		}
		return fmt.Errorf("%s is in the way and holds data (not only empty directories or dead lock files); leaving it", path)
	}
	var rm func(dir string) error
	rm = func(dir string) error {
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if e.IsDir() {
				if err := rm(p); err != nil {
					return err
				}
				continue
			}
			if isLock, dead, err := lockEntry(fsys, p, e, true); err != nil {
				return err
			} else if !isLock || !dead {
				return fmt.Errorf("%s appeared in %s while it was being removed as debris (a writer's lock, or data); leaving it", p, path)
			}
			if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return fsys.Remove(dir)
	}
	if err := rm(path); err != nil {
		return err
	}
	d.Add(filepath.Dir(path))
	return nil
}
