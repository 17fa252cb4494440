package cache

// The cache repair, as one journaled intent (kind "cache-repair"), under
// the bucket's lock:
//
//	mkdir …      the quarantine directories, beside the cache:
//	             {cache}.swampj-quarantine/{UTC stamp}/{cache-relative dir}
//	barrier
//	rename …     every torn or stale cache file into quarantine: out of the
//	             push walk, and absent, so the next pull fetches the bucket's
//	             copy (a pull fetches every index entry the cache lacks)
//	write …      each stale `latest`: its old bytes into quarantine, then
//	             the pointer rewritten to the version the index names
//	write …      the sync-state sidecar with its fast path off (no remote
//	             ETag, no commitSeq), so that next pull walks the index
//	             instead of skipping it
//	barrier
//
// Nothing is deleted. Every step is an engine step, so a crash anywhere is
// finished or undone by `swampj recover` (the journal lives in the
// repo-local {repo}/.swamp/). The repair changes what swamp will push and
// pull, so it runs only while this process holds the datastore's global
// lock in the bucket, the lock every swamp push runs under; when the lock
// cannot be taken it refuses, and nothing changes.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/remote"
)

// IntentKind is the journal kind of a cache repair.
const IntentKind = "cache-repair"

type latestFix struct {
	file *cacheFile
	rel  string
	old  []byte
	want int
}

// cachePlan is what the cache repair changes.
type cachePlan struct {
	moves  []*cacheFile
	keep   []*cacheFile // copied into quarantine, left in place (moveOut)
	latest []latestFix
	disarm bool
}

func (p *cachePlan) nonEmpty() bool {
	return len(p.moves) > 0 || len(p.keep) > 0 || len(p.latest) > 0 || p.disarm
}

func (p *cachePlan) quarantine(f *cacheFile) {
	for _, m := range p.moves {
		if m.rel == f.rel {
			return
		}
	}
	p.moves = append(p.moves, f)
}

func (p *cachePlan) unquarantine(rel string) {
	out := p.moves[:0]
	for _, m := range p.moves {
		if m.rel != rel {
			out = append(out, m)
		}
	}
	p.moves = out
}

// describe fills d's moves and rewrites for a preview (the quarantine's
// stamp is not chosen yet).
func (p *cachePlan) describe(d *cacheDiagnosis) {
	for _, m := range p.moves {
		d.moves = append(d.moves, doctor.Move{From: m.abs, To: filepath.Join("{quarantine}", filepath.FromSlash(m.rel))})
	}
	for _, l := range p.latest {
		d.rewrites = append(d.rewrites, fmt.Sprintf("%s: %q -> %q", l.rel, string(l.old), strconv.Itoa(l.want)))
	}
}

// LockError: the datastore's lock in the bucket could not be taken,
// so the cache repair did not run and nothing changed.
type LockError struct {
	Key string
	Err error
}

func (e *LockError) Error() string {
	return fmt.Sprintf("the repair changes what swamp will push, so it runs only under the datastore's lock %q in the bucket, "+
		"and that lock could not be taken: %v; nothing was changed", e.Key, e.Err)
}
func (e *LockError) Unwrap() error { return e.Err }

// Code is lock_timeout when someone held the lock, the code of the cause
// when it has one (a bucket that cannot be used), remote_lock_unavailable
// otherwise.
func (e *LockError) Code() string {
	if errors.Is(e.Err, remote.ErrLockBusy) {
		return "lock_timeout"
	}
	if c := swampj.CauseOf(e.Err); c != nil {
		return c.Code()
	}
	return "remote_lock_unavailable"
}

// Class is swampj.ClassBusy when someone held the lock, else the class of
// the cause (a bucket that cannot be used) when it has one.
func (e *LockError) Class() swampj.Class {
	if errors.Is(e.Err, remote.ErrLockBusy) {
		return swampj.ClassBusy
	}
	if c := swampj.CauseOf(e.Err); c != nil {
		return c.Class()
	}
	return swampj.ClassFailed
}

// RepairError: the journaled cache repair failed; it was rolled back
// (or, when RollbackErr is set, stays open in the journal for recovery).
type RepairError struct {
	IntentID    uint64
	Err         error
	RollbackErr error
}

func (e *RepairError) Error() string {
	if e.RollbackErr != nil {
		return fmt.Sprintf("cache repair (intent %d) failed: %v; rolling it back failed too: %v; the intent stays open in the journal for recovery", e.IntentID, e.Err, e.RollbackErr)
	}
	return fmt.Sprintf("cache repair (intent %d) failed and was rolled back, so the cache is as it was: %v", e.IntentID, e.Err)
}
func (e *RepairError) Unwrap() error { return e.Err }

// cacheRepaired is what a confirmed cache repair did: the diagnosis made
// again under the lock, and the intent that ran its plan (0: none).
type cacheRepaired struct {
	d        *cacheDiagnosis
	intentID uint64
	lock     string
	warnings []string
}

// repairCache takes the bucket's lock, makes the diagnosis again from
// what the disk says now, and runs its plan as one intent. A nil result:
// nothing ran (the lock or the bucket refused, or the diagnosis failed).
func repairCache(ctx context.Context, fsys fsx.FS, c *remote.Cache, o doctor.Options) (done *cacheRepaired, err error) {
	locker := o.BucketLock
	if locker == nil {
		locker = remote.LockerFor(c, o.Env)
	}
	release, err := locker.Lock(ctx, c, o.SwampLockTimeout)
	if err != nil {
		var ae *remote.AccessError
		if errors.As(err, &ae) {
			return nil, ae // the bucket itself could not be used: not a lock matter
		}
		var me *remote.BucketClientMissingError
		if errors.As(err, &me) {
			return nil, me // no program to reach the bucket with: not a lock matter either
		}
		return nil, &LockError{Key: c.LockKey(), Err: err}
	}
	done = &cacheRepaired{lock: c.LockKey()}
	defer func() {
		if rerr := release(); rerr != nil {
			done.warnings = append(done.warnings, fmt.Sprintf("releasing the bucket lock: %v (it expires after its TTL)", rerr))
		}
	}()
	d, err := diagnoseCache(ctx, fsys, c, o)
	if err != nil {
		return nil, err
	}
	done.d = d
	if !d.plan.nonEmpty() {
		return done, nil
	}
	st, err := remote.ReadSyncState(fsys, c)
	if err != nil {
		return done, err
	}
	q := filepath.Join(c.QuarantineRoot(), o.Now().UTC().Format("20060102T150405.000Z"))
	in, err := repairIntent(fsys, c, &d.plan, st, q, o, d)
	if in == nil || err != nil {
		return done, err
	}
	if err := runCacheRepair(ctx, fsys, c, o, in); err != nil {
		return done, err
	}
	done.intentID = in.ID
	return done, nil
}

// repairIntent is the cache repair's plan as one intent (nil: nothing to
// do): quarantine directories, the moves and copies into quarantine, the
// `latest` rewrites, the sync state's fast path turned off, barriers.
func repairIntent(fsys fsx.FS, c *remote.Cache, p *cachePlan, st *remote.SyncState, q string, o doctor.Options, d *cacheDiagnosis) (*journal.Intent, error) {
	in := &journal.Intent{Kind: IntentKind, Repo: c.Repo, Command: o.Command}
	planned := map[string]bool{}
	var mk []journal.Step
	need := func(dir string) error {
		missing, err := protocol.MissingDirs(fsys, dir, planned)
		if err != nil {
			return err
		}
		for _, m := range missing {
			planned[m] = true
			mk = append(mk, journal.Step{Kind: protocol.KindMkdir, Path: m, Note: "create a quarantine directory"})
		}
		return nil
	}
	var body []journal.Step
	d.moves = nil
	for _, m := range p.moves {
		to := filepath.Join(q, filepath.FromSlash(m.rel))
		if err := need(filepath.Dir(to)); err != nil {
			return nil, err
		}
		body = append(body, journal.Step{Kind: protocol.KindRename, Path: m.abs, To: to, Note: "move a torn cache file into quarantine"})
		d.moves = append(d.moves, doctor.Move{From: m.abs, To: to})
	}
	for _, k := range p.keep {
		data, err := fsys.ReadFile(k.abs)
		if err != nil {
			return nil, err
		}
		to := filepath.Join(q, filepath.FromSlash(k.rel))
		if err := need(filepath.Dir(to)); err != nil {
			return nil, err
		}
		body = append(body, journal.Step{Kind: protocol.KindWrite, Path: to, Data: data, Note: "keep a copy of a torn cache file in quarantine"})
	}
	d.rewrites = nil
	for _, l := range p.latest {
		keep := filepath.Join(q, filepath.FromSlash(l.rel))
		if err := need(filepath.Dir(keep)); err != nil {
			return nil, err
		}
		body = append(body,
			journal.Step{Kind: protocol.KindWrite, Path: keep, Data: l.old, Note: "keep the stale latest in quarantine"},
			journal.Step{Kind: protocol.KindWrite, Path: l.file.abs, Data: []byte(strconv.Itoa(l.want)), OldData: l.old, OldExists: true,
				Note: fmt.Sprintf("point latest at version %d", l.want)})
		d.rewrites = append(d.rewrites, fmt.Sprintf("%s: %q -> %q", l.rel, string(l.old), strconv.Itoa(l.want)))
	}
	if st != nil && (len(p.moves) > 0 || p.disarm) {
		data, err := st.Disarmed()
		if err != nil {
			return nil, err
		}
		body = append(body, journal.Step{Kind: protocol.KindWrite, Path: c.SyncStatePath(), Data: data, OldData: st.Data, OldExists: true,
			Note: "turn the sync state's fast path off, so the next pull fetches what was quarantined"})
	}
	if len(body) == 0 {
		return nil, nil
	}
	if len(mk) > 0 {
		in.Steps = append(in.Steps, mk...)
		in.Steps = append(in.Steps, journal.Step{Kind: engine.KindBarrier, Note: "make the quarantine directories durable"})
	}
	in.Steps = append(in.Steps, body...)
	in.Steps = append(in.Steps, journal.Step{Kind: engine.KindBarrier, Note: "make the repair durable"})
	in.Summary = fmt.Sprintf("cache doctor: move %d cache file(s) into quarantine, rewrite %d latest pointer(s)", len(p.moves), len(p.latest))
	if len(p.moves) > 0 || len(p.keep) > 0 || len(p.latest) > 0 {
		d.quarantine = q
	}

	return in, nil
}

// runCacheRepair journals in and runs it in the journal session; a
// failure is rolled back here and now (*RepairError).
func runCacheRepair(ctx context.Context, fsys fsx.FS, c *remote.Cache, o doctor.Options, in *journal.Intent) (err error) {
	if err := fsx.MkdirAllDurable(fsys, filepath.Dir(c.JournalPath), fsx.DirMode); err != nil {
		return err
	}
	sess, err := session.Open(o.Common, c.JournalPath)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := sess.Close(); cerr != nil && err == nil && fsx.IsCrash(cerr) {
			err = cerr
		}
	}()
	if open, oerr := sess.Journal().OpenIntents(); oerr != nil {
		return oerr
	} else if len(open) > 0 {
		return fmt.Errorf("the journal %s holds %d unfinished intent(s); recovery must finish them before the cache is repaired", c.JournalPath, len(open))
	}
	env := &engine.Env{FS: fsys, Log: o.Logger}
	if _, err := sess.Execute(ctx, env, in, nil); err != nil {
		if sess.Crashed() {
			return err
		}
		if in.ID == 0 {
			return fmt.Errorf("recording the cache repair in the journal: %w", err)
		}
		re := &RepairError{IntentID: in.ID, Err: err}
		_, re.RollbackErr = engine.Drive(context.WithoutCancel(ctx), env, sess.Journal(), in, journal.Backward, nil)
		if sess.Note(re.RollbackErr); sess.Crashed() {
			return re.RollbackErr
		}
		return re
	}
	return nil
}
