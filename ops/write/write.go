package write

// Versioned data writes: the fix for issue #3955 at its root.
//
// What WriteVersions guarantees, for every version it is asked to write:
//
//   - A reader (swamp or swampj) never sees a partial version. The version's
//     raw and metadata.yaml are streamed into a hidden staging directory
//     ({itemDir}/.swampj-stage-{N}-{random}, skipped by swamp's readers),
//     fsynced there, and published by one rename that never replaces
//     anything.
//   - `latest` and the catalog row move to version N only after N is
//     complete and durable: the staged files and the staging directory are
//     fsynced before the publish rename, and the atomic replace of `latest`
//     fsyncs the item directory, which makes the publish rename durable in
//     the same flush. The catalog transaction commits after that.
//   - A version number is never reused: N is above every directory swamp
//     counts as a version (store.VersionDirs: crash remnants, uncommitted
//     deferred versions and streaming versions included, swamp-format §9.7/§9.8).
//   - The whole plan — item, N, the expected size and SHA-256 of raw when
//     known, the previous `latest` bytes and the catalog change — is in the
//     intent journal before anything a reader can see changes (only the
//     hidden staging is written while it commits, see below). Whatever stops the
//     write (crash, power cut, ENOSPC, EIO on fsync, Ctrl-C), the executor
//     or a later `swampj recover` decides from the disk: a complete version
//     N is rolled forward (`latest`, catalog); anything less is rolled back
//     (staging removed, `latest` and the catalog as they were). Either way
//     `latest` names a readable version afterwards.
//   - A write that fails in this process is rolled back in this process;
//     the caller gets a typed error and the item is as it was.
//   - Many versions can share one intent (one journal commit, one catalog
//     transaction, one fsync per directory touched).
//
// What it does not guarantee: that an unacknowledged write survives (it is
// rolled back, or forward when it turns out complete); that swamp's own
// non-durable writers (swamp-format §9.19) do not leave damage of their own.
//
// The write, step by step (one intent):
//
//	mkdir …               each missing ancestor of the item directory
//	barrier               fsync the parents of the new directories
//	stage S → N           live: mkdir S, stream raw (hashed on the way),
//	                      write metadata.yaml; their fsyncs wait (below)
//	rename S → N          no-replace
//	write latest = "N"    atomic replace (the item directory fsync below)
//	catalog-publish       upsert the rows, is_latest moves to N
//
// What runs together, and what waits (the serial flushes of one write of
// an existing item: the journal commit's two fdatasyncs, then one
// directory fsync, then the catalog's WAL fsync; the bare recipe has 5):
//
//   - The journal commit runs while the versions are staged (Recording,
//     exec.go): staging writes only hidden directories swamp never reads.
//     Before the first rename the executor joins it, and fsyncs, together,
//     every staged file, every staging directory and the temp files of the
//     `latest` writes (written ahead for that). So the intent is durable
//     before the publish rename, and a version's files and directory
//     before its name. (A new item's directories are created only after
//     the commit: they are visible.)
//   - The publish renames and the `latest` replaces share the flush of
//     their item directories, issued together for all items of a batch;
//     with the intent open, recovery reconciles whichever of them a power
//     cut keeps.
//   - The catalog transaction runs up to its COMMIT from the start; the
//     catalog step only commits, after that flush: a committed row always
//     names a durable version (ALICE's non-atomic rename, which can lose
//     both names of an un-flushed rename, rules out committing alongside).
//   - The done mark is lazy: it rides the next journal commit (a caller's
//     own journal) or the close (swampj data write), and a lost one only
//     makes recovery observe every step done again.
//
// A crash while the intent commits may leave staging directories and
// `latest` temp files no journal record names. Their names carry their
// writer ({N}-{pid}-{host}-{random}, stagename.go); once that process is
// gone, `recover` removes them, the next write of their item moves them
// into quarantine (sweepDeadStages), and doctor reports them.
//
// Under swamp's per-model lock (swamp-format §8) for the whole write. A caller that
// holds the journal (a long-lived tool) on the real disk gets the lock
// while its plan is journaled, and the plan is checked again under the
// lock (writeOverlapped).

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/swampj/swampj/ops/catalogwriters"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/internal/session"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
	"github.com/swampj/swampj/ops/wrapped"
)

// WriteVersions writes every version in one intent and returns them in the
// order given. It never prints. On error nothing of this call is visible:
// refused inputs change nothing; a failure after the intent is journaled is
// rolled back (a *WriteFailedError); a lock that cannot be had is a
// *lock.TimeoutError (errors.Is lock.ErrTimeout).
//
// When the datastore is shared (outside the repo's .swamp/), a write that
// succeeded rewrites swampj's writer token under .catalog-writers/
// afterwards (catalogwriters.Record, swamp-format §13.7), so that the other checkouts'
// catalogs (newer swamp's) invalidate themselves and see it; failing to is
// only a warning: the write stands.
func WriteVersions(ctx context.Context, r *repo.Repo, writes []VersionWrite, opts WriteOptions) ([]WrittenVersion, error) {
	// A lent journal is held by the caller: the settling repair could not
	// open its own, and recover settles the run instead.
	if opts.Journal == nil {
		if err := wrapped.SettleFirst(ctx, r, wrapped.SettleOptions{Common: opts.Common}); err != nil {
			return nil, err
		}
	}
	out, err := writeVersions(ctx, opts.FS, r, writes, opts)
	recordWriterToken(r, out, err, opts.withDefaults())
	return out, err
}

// recordWriterToken rewrites swampj's writer token after a write that
// succeeded on a shared datastore (see WriteVersions); failing to is only
// a warning.
func recordWriterToken(r *repo.Repo, out []WrittenVersion, err error, o WriteOptions) {
	if err != nil || len(out) == 0 || !catalogwriters.Shared(r) {
		return
	}
	if _, terr := catalogwriters.Record(o.fsys, r); terr != nil {
		o.warn(fmt.Sprintf("the versions are written, but other checkouts sharing the datastore may not see them until their catalog is rebuilt: %v", terr))
	}
}

func writeVersions(ctx context.Context, fsys fsx.FS, r *repo.Repo, writes []VersionWrite, opts WriteOptions) ([]WrittenVersion, error) {
	if len(writes) == 0 {
		return nil, nil
	}
	opts.fsys = fsys
	o := opts.withDefaults()
	fsys = o.fsys
	// 0. The datastore's format marker, before anything else (swamp-format §13.1).
	if err := repo.RefuseUnknownFormat(fsys, r.Base, true, nil); err != nil {
		return nil, err
	}
	var release func()
	o.token, release = session.NewOwnerToken()
	defer release()

	// 1. Inputs: addresses, containment, metadata templates — before any lock.
	ps := make([]*pendingVersion, len(writes))
	for i, w := range writes {
		p, err := prepareWrite(fsys, r, i, w, o)
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	// 2. Sources that can be hashed in advance: exact sizes in the journal.
	for _, p := range ps {
		if err := p.hashSource(ctx); err != nil {
			return nil, err
		}
	}

	env := &engine.Env{FS: fsys, Catalog: o.Catalog.Opener(), Log: o.Logger}
	if o.held != nil {
		env.ParkDone, env.Parked = o.held.park, o.held.isParked
	}
	ownCatalog := env.Catalog == nil
	if ownCatalog {
		env.Catalog = protocol.RepoCatalog(fsys, r.Dir)
		defer env.CloseCatalog()
	}
	// Data not migrated yet is refused before a lock file or an intent
	// exists (lockWriteModels checks again under the locks).
	if err := refuseUnmigrated(fsys, r, ps); err != nil {
		return nil, err
	}
	if o.Journal != nil && o.held == nil && fsx.Concurrent(fsys) {
		if out, err, ok := writeOverlapped(ctx, env, r, ps, o); ok {
			return out, err
		}
	}

	// 3. swamp's per-model locks, in path order (no deadlock between two
	// swampj writers of overlapping models).
	locks, err := lockWriteModels(ctx, fsys, r, ps, o)
	defer lock.ReleaseAll(locks, o.warn)
	if err != nil {
		return nil, err
	}
	ctx, stopWatch := lock.WatchLost(ctx, locks)
	defer stopWatch()

	// 4. The journal: a held handle's, caught up under these locks; else
	// the repo's own (openWriteSession), unless the host lent one.
	j := o.Journal
	var sess *session.Session
	releaseTurn := func() {}
	switch {
	case o.held != nil:
		if releaseTurn, err = o.held.catchUp(ctx, env, locks, o); err != nil {
			return nil, err
		}
	case j == nil:
		if sess, err = openWriteSession(ctx, fsys, r, env, locks, o); err != nil {
			return nil, err
		}
		j = sess.Journal()
		releaseTurn = j.Release
		defer closeWriteSession(sess, env, ownCatalog, o.warn)
	}

	// 4b. What writes that died before their intent was durable left in
	// these items goes to quarantine, now that nothing of these models is
	// left open.
	if err := sweepDeadStages(ctx, env, j, r, ps, o); err != nil {
		releaseTurn()
		return nil, sess.Note(err)
	}

	// 5. Plan under the locks: allocate numbers, record what `latest` holds.
	// (A shared journal's first turn is still held: planning and the
	// intent's commit follow the recovery with nothing committed between.)
	in, live, items, err := planWrite(ctx, fsys, r, ps, o, false)
	if err != nil {
		releaseTurn()
		return nil, sess.Note(err)
	}

	// 6. Journal and run: the journal commit is in flight while the
	// versions are staged; a failure is rolled back here and now. The
	// recording holds the turn from here to its commit.
	rec := engine.StartRecording(fsys, j, in)
	releaseTurn()
	out, err := runWrite(ctx, env, j, rec, live, items, ps)
	return out, sess.Note(err)
}

// openWriteSession opens the journal of a write the host lent none,
// shared with writers of other models (journal/hold.go): it finishes what
// earlier writers of these models left open, then sweeps what writes that
// died before their intent was durable left, saying each at level Warn.
// locks are the model locks this write holds, which recovery must not wait
// for.
func openWriteSession(ctx context.Context, fsys fsx.FS, r *repo.Repo, env *engine.Env, locks []*lock.Lock, o WriteOptions) (*session.Session, error) {
	env.HeldLocks = map[string]bool{}
	for _, l := range locks {
		env.HeldLocks[l.Path()] = true
	}
	sess, outs, removed, err := session.OpenForWrite(ctx, fsys, r.JournalPath,
		journal.Options{LockTimeout: o.JournalLockTimeout, Command: o.Command, Warn: o.warn}, env, r.DataRoot)
	for _, out := range outs {
		o.warn(out.Sentence() + ", before this write")
	}
	for _, p := range removed {
		o.warn("removed " + p + ", staged by a write that died before its intent was journaled (never published)")
	}
	var oe *session.OpenError
	switch {
	case errors.As(err, &oe) && oe.Phase == session.PhaseOpen:
		return nil, oe.Err
	case errors.As(err, &oe) && oe.Phase == session.PhaseSweep:
		return nil, fmt.Errorf("removing what a crashed write left, so nothing was written: %w", oe.Err)
	case errors.As(err, &oe):
		return nil, fmt.Errorf("an interrupted operation could not be finished, so nothing was written: %w", oe.Err)
	case err != nil:
		return nil, err
	}
	return sess, nil
}

// sweepDeadStages moves into quarantine the staging directories and
// `latest` temp files of dead writers in the items of ps
// (session.SweepDeadStages), under the write's model locks, and says each
// at level Warn. The quarantine is the doctor's layout,
// {base}/.swampj-quarantine/{UTC stamp}-write-{token}/{ns or _solo}/…,
// on the data tree's file system; the owner token keeps two writers of
// different models from sharing a directory that either might undo.
func sweepDeadStages(ctx context.Context, env *engine.Env, j *journal.Journal, r *repo.Repo, ps []*pendingVersion, o WriteOptions) error {
	var dirs []string
	seen := map[string]bool{}
	for _, p := range ps {
		if !seen[p.itemDir] {
			seen[p.itemDir] = true
			dirs = append(dirs, p.itemDir)
		}
	}
	base := r.Base
	if r.DataLocal {
		base = r.LocalDir
	}
	seg := r.Namespace
	if seg == "" {
		seg = "_solo"
	}
	shelf := filepath.Join(base, store.QuarantineDirName)
	run := time.Now().UTC().Format("20060102T150405Z") + "-write-" + o.token
	moved, err := session.SweepDeadStages(ctx, env, j, session.StageSweep{ItemDirs: dirs, DataRoot: r.DataRoot,
		Shelf: shelf, Quarantine: filepath.Join(shelf, run, seg), Locks: modelLockPaths(r, ps), Repo: r.Dir, Command: o.Command})
	for _, m := range moved {
		o.warn("moved " + m.From + " to " + m.To + ": staged by a write that died before its intent was journaled (never published)")
	}
	if err != nil && !fsx.IsCrash(err) {
		return fmt.Errorf("moving what a dead write staged into quarantine, so nothing was written: %w", err)
	}
	return err
}

// closeWriteSession closes the journal of a write that opened its own,
// committing the done mark. The catalog's close (a WAL checkpoint, with
// fsyncs of its own) needs nothing from the done mark: on the real disk it
// runs beside the done mark's commit instead of after it.
func closeWriteSession(sess *session.Session, env *engine.Env, ownCatalog bool, warn func(string)) {
	if sess.Crashed() {
		_ = sess.Close() // abandons: nothing more reaches the disk
		return
	}
	var catalogClosed chan struct{}
	if ownCatalog && fsx.Concurrent(env.FS) {
		catalogClosed = make(chan struct{})
		go func() { defer close(catalogClosed); env.CloseCatalog() }()
	}
	start := time.Now()
	err := sess.Close()
	engine.ObserveFlush("journal-commit", 2, start, time.Now())
	if catalogClosed != nil {
		<-catalogClosed
	}
	if err != nil {
		warn(fmt.Sprintf("the write is complete, but closing the journal failed: %v (the next recovery marks it done)", err))
	}
}

// writeOverlapped is the write of a long-lived caller (its own journal) on
// the real disk: swamp's per-model locks are taken while the plan is
// journaled, so the lock file's fsync and the journal commit are in flight
// together instead of one after the other.
// The plan is made from what the disk held before the locks; once they are
// held it is observed again, and if anything changed (a swamp writer got
// there first) the journaled plan is rolled back — nothing of it was
// applied — and the write is planned again under the locks. Nothing in the
// data tree is touched before the locks are held and the plan confirmed.
//
// It handles only items that exist and whose `latest` is a plain file, so
// that planning reads and never writes; otherwise it returns ok=false
// having done nothing, and the caller takes the locks first.
func writeOverlapped(ctx context.Context, env *engine.Env, r *repo.Repo, ps []*pendingVersion, o WriteOptions) (out []WrittenVersion, err error, ok bool) {
	fsys, j := env.FS, o.Journal
	if !plannableWithoutLock(fsys, ps) {
		return nil, nil, false
	}
	type held struct {
		locks []*lock.Lock
		err   error
	}
	got := make(chan held, 1)
	go func() {
		locks, err := lockWriteModels(ctx, fsys, r, ps, o)
		got <- held{locks, err}
	}()
	in, live, items, planErr := planWrite(ctx, fsys, r, ps, o, true)
	var rec *engine.Recording
	if planErr == nil {
		rec = engine.StartRecording(fsys, j, in)
		if o.recorded != nil {
			_ = rec.Wait() // the test hook acts once the plan is journaled
			o.recorded()
		}
	}
	h := <-got
	defer lock.ReleaseAll(h.locks, o.warn) // before a fallback takes them again
	// recordErr waits for the commit, where the plan will not run (the
	// staging waits for the locks and the check below, not for it).
	recordErr := func() error { return rec.Wait() }
	// abandon closes the journaled plan as rolled back without observing
	// the disk: no step of it ran, which this process knows for certain,
	// while the disk may meanwhile hold what others did (a version of the
	// same number, a symlink swapped in) that an observing rollback would
	// stop at, leaving an open intent for something never done. The
	// direction is journaled (synced) first: a crash before the mark
	// leaves an intent recovery rolls back, observing.
	abandon := func() error {
		if err := j.Decide(in.ID, journal.Backward); err != nil {
			return err
		}
		j.Finish(in.ID, journal.StatusRolledBack)
		return nil
	}
	switch {
	case planErr == nil && h.err != nil:
		if recordErr() == nil {
			if err := abandon(); err != nil {
				return nil, err, true
			}
		}
		return nil, h.err, true
	case h.err != nil:
		return nil, h.err, true
	case errors.Is(planErr, errNeedsLock):
		return nil, nil, false // the item changed shape since the first look
	case planErr != nil:
		return nil, planErr, true
	}
	ctx, stopWatch := lock.WatchLost(ctx, h.locks)
	defer stopWatch()

	same, err := stillPlanned(fsys, r, items)
	if err != nil || !same {
		if rerr := recordErr(); rerr != nil {
			return nil, fmt.Errorf("recording the write in the journal: %w", rerr), true
		}
		if aerr := abandon(); aerr != nil {
			return nil, aerr, true
		}
		if err != nil {
			return nil, err, true
		}
		if in, live, items, err = planWrite(ctx, fsys, r, ps, o, false); err != nil {
			return nil, err, true
		}
		rec = engine.StartRecording(fsys, j, in)
	}
	out, err = runWrite(ctx, env, j, rec, live, items, ps)
	return out, err, true
}

// runWrite drives a journaled write forward; a failure is rolled back here
// and now. The error is the executor's crash as it is (fsx.IsCrash), or a
// *WriteFailedError.
func runWrite(ctx context.Context, env *engine.Env, j *journal.Journal, rec *engine.Recording, live engine.LiveApply, items map[string]*writeItem, ps []*pendingVersion) ([]WrittenVersion, error) {
	in := rec.Intent()
	res, err := engine.DriveRecording(ctx, env, j, rec, live)
	if err != nil {
		if fsx.IsCrash(err) {
			return nil, err
		}
		var recErr *engine.RecordError
		if errors.As(err, &recErr) {
			return nil, fmt.Errorf("recording the write in the journal: %w; nothing was changed", recErr.Err)
		}
		if res == nil {
			// Stopped while only staging, before the intent was needed:
			// DriveRecording removed what was staged.
			return nil, &WriteFailedError{Summary: in.Summary, Err: writeCause(ctx, err)}
		}
		we := &WriteFailedError{IntentID: in.ID, Summary: in.Summary, Err: writeCause(ctx, err)}
		_, rerr := engine.Drive(context.WithoutCancel(ctx), env, j, in, journal.Backward, nil)
		if fsx.IsCrash(rerr) {
			return nil, rerr
		}
		we.RollbackErr = rerr
		if rerr != nil {
			we.Live = liveLatest(env.FS, items)
		}
		return nil, we
	}
	out := make([]WrittenVersion, len(ps))
	for i, p := range ps {
		out[i] = WrittenVersion{
			Address: p.w.Address, Version: p.md.Version, Dir: filepath.Join(p.itemDir, strconv.FormatInt(p.md.Version, 10)),
			Metadata: p.md, PreviousLatest: items[p.itemDir].prev, IntentID: res.IntentID,
			CatalogStale: res.CatalogStale,
		}
	}
	return out, nil
}

// liveLatest says which version each item's `latest` names now.
func liveLatest(fsys fsx.FS, items map[string]*writeItem) []string {
	var out []string
	for _, it := range items {
		p, err := store.ReadLatest(fsys, it.dir)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("latest of %s cannot be read (%v)", it.addr, err))
		case p.Version == it.prev:
			out = append(out, fmt.Sprintf("latest of %s names version %d, as before the write", it.addr, p.Version))
		default:
			out = append(out, fmt.Sprintf("latest of %s names version %d (was %d)", it.addr, p.Version, it.prev))
		}
	}
	sort.Strings(out)
	return out
}

// writeCause unwraps what the executor reports into the reason a user
// needs: the lost lock rather than "context canceled".
func writeCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && errors.Is(err, context.Canceled) && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}
