package remote

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
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/internal/session"
)

// IntentKind is the journal kind of a cache repair.
const IntentKind = "cache-repair"

type latestFix struct {
	file *cacheFile
	rel  string
	old  []byte
	want int
}

type plan struct {
	moves  []*cacheFile
	keep   []*cacheFile // copied into quarantine, left in place (moveOut)
	latest []latestFix
	disarm bool
}

func (p *plan) nonEmpty() bool {
	return len(p.moves) > 0 || len(p.keep) > 0 || len(p.latest) > 0 || p.disarm
}

func (p *plan) quarantine(f *cacheFile) {
	for _, m := range p.moves {
		if m.rel == f.rel {
			return
		}
	}
	p.moves = append(p.moves, f)
}

func (p *plan) unquarantine(rel string) {
	out := p.moves[:0]
	for _, m := range p.moves {
		if m.rel != rel {
			out = append(out, m)
		}
	}
	p.moves = out
}

func (p *plan) describe(rep *Report) {
	for _, m := range p.moves {
		rep.Moves = append(rep.Moves, Move{From: m.abs, To: filepath.Join("{quarantine}", filepath.FromSlash(m.rel))})
	}
	for _, l := range p.latest {
		rep.Rewrites = append(rep.Rewrites, fmt.Sprintf("%s: %q -> %q", l.rel, string(l.old), strconv.Itoa(l.want)))
	}
}

// LockError: the datastore's lock could not be taken, so the repair did
// not run and nothing changed.
type LockError struct {
	Key string
	Err error
}

func (e *LockError) Error() string {
	return fmt.Sprintf("the repair changes what swamp will push, so it runs only under the datastore's lock %q in the bucket, "+
		"and that lock could not be taken: %v; nothing was changed", e.Key, e.Err)
}
func (e *LockError) Unwrap() error { return e.Err }

// Code is the error code of the CLI: lock_timeout when someone held the
// lock, remote_lock_unavailable otherwise.
func (e *LockError) Code() string {
	if errors.Is(e.Err, ErrLockBusy) {
		return "lock_timeout"
	}
	return "remote_lock_unavailable"
}

// RepairError: the journaled repair failed; it was rolled back.
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

func repair(ctx context.Context, fsys fsx.FS, c *Cache, _ *plan, o DoctorOptions, rep *Report) (err error) {
	locker := o.Lock
	if locker == nil {
		locker = lockerFor(c, o.Env)
	}
	timeout := o.LockTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	release, err := locker.Lock(ctx, c, timeout)
	if err != nil {
		var ae *AccessError
		if errors.As(err, &ae) {
			return ae // the bucket itself could not be used: not a lock matter
		}
		return &LockError{Key: c.LockKey(), Err: err}
	}
	rep.Lock = c.LockKey()
	defer func() {
		if rerr := release(); rerr != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("releasing the bucket lock: %v (it expires after its TTL)", rerr))
		}
	}()

	// Plan again from what the disk says now, under the lock.
	o2 := o
	o2.Repair, o2.Confirm = true, false
	again, err := Doctor(ctx, c, o2)
	if err != nil {
		return err
	}
	*rep = *again
	rep.Mode, rep.Lock = "repair", c.LockKey()
	p := again.plan
	if p == nil || !p.nonEmpty() {
		return nil
	}
	st, err := ReadSyncState(fsys, c)
	if err != nil {
		return err
	}

	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	q := filepath.Join(c.QuarantineRoot(), now().UTC().Format("20060102T150405.000Z"))
	in, err := repairIntent(fsys, c, p, st, q, o, rep)
	if in == nil || err != nil {
		return err
	}
	if err := runRepair(ctx, fsys, c, o, in); err != nil {
		return err
	}
	rep.IntentID = in.ID
	rep.Remaining = 0
	for i := range rep.Findings {
		if rep.Findings[i].Repairable {
			rep.Findings[i].Status = StatusRepaired
		} else {
			rep.Remaining++
		}
	}
	return nil
}

// repairIntent is the cache repair's plan as one intent (nil: nothing to
// do): quarantine directories, the moves and copies into quarantine, the
// `latest` rewrites, the sync state's fast path turned off, barriers.
func repairIntent(fsys fsx.FS, c *Cache, p *plan, st *SyncState, q string, o DoctorOptions, rep *Report) (*journal.Intent, error) {
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
	rep.Moves = nil
	for _, m := range p.moves {
		to := filepath.Join(q, filepath.FromSlash(m.rel))
		if err := need(filepath.Dir(to)); err != nil {
			return nil, err
		}
		body = append(body, journal.Step{Kind: protocol.KindRename, Path: m.abs, To: to, Note: "move a torn cache file into quarantine"})
		rep.Moves = append(rep.Moves, Move{From: m.abs, To: to})
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
	rep.Rewrites = nil
	for _, l := range p.latest {
		keep := filepath.Join(q, filepath.FromSlash(l.rel))
		if err := need(filepath.Dir(keep)); err != nil {
			return nil, err
		}
		body = append(body,
			journal.Step{Kind: protocol.KindWrite, Path: keep, Data: l.old, Note: "keep the stale latest in quarantine"},
			journal.Step{Kind: protocol.KindWrite, Path: l.file.abs, Data: []byte(strconv.Itoa(l.want)), OldData: l.old, OldExists: true,
				Note: fmt.Sprintf("point latest at version %d", l.want)})
		rep.Rewrites = append(rep.Rewrites, fmt.Sprintf("%s: %q -> %q", l.rel, string(l.old), strconv.Itoa(l.want)))
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
		rep.Quarantine = q
	}

	return in, nil
}

// runRepair journals in and runs it in the journal session; a failure is
// rolled back here and now (*RepairError).
func runRepair(ctx context.Context, fsys fsx.FS, c *Cache, o DoctorOptions, in *journal.Intent) (err error) {
	if err := fsx.MkdirAllDurable(fsys, filepath.Dir(c.JournalPath), fsx.DirMode); err != nil {
		return err
	}
	sess, err := session.Open(fsys, c.JournalPath, journal.Options{LockTimeout: o.LockTimeout, Command: o.Command})
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
