package write

// A repo held open for writing, for a host that writes often (a server, a
// workflow runner): opened once, safe for concurrent use, closed once, in
// the style of sql.DB and bolt.DB.
//
// What it saves each write, against WriteVersions opening the repo itself:
//
//   - the journal's open (the repo lock, the bbolt file) and the recovery
//     of what earlier processes left open, done once by Open;
//   - the catalog's open and close (a WAL checkpoint with fsyncs of its
//     own), done once by Open and Close;
//   - the catalog commit's fsync: the handle's catalog commits lazily
//     (synchronous=NORMAL), and the journal is its redo log. Each write's
//     intent stays open, parked, until a sync of the catalog has made its
//     row durable: one fsync of the WAL for up to settleEvery writes, or
//     after settleAfter, or at Close. A power cut before it loses the row
//     and leaves the intent open, and recovery redoes the row. Until
//     then the handle's own writes leave parked intents alone; a writer in
//     another process that finishes one syncs the catalog first
//     (engine/catalogdurable.go);
//   - the done mark's own commit: once the sync has made its row durable,
//     it rides the next commit of any writer of the handle, or Close;
//   - most of the journal commit under concurrency: writers whose intents
//     are ready while a commit is in flight share the next one
//     (journal/groupcommit.go), so six goroutines pay about one commit's
//     two fdatasyncs where six processes pay six.
//
// What it keeps from WriteVersions: every guarantee of write.go, for each
// write on its own. Writers of one model still queue on swamp's per-model
// lock, and a write still recovers first, under that lock, any intent a
// crashed process left open for its models (the journal is held shared:
// `swampj data write` and other hosts write beside it; a migration, a
// recovery or a repair waits until the handle is closed).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swampj/swampj"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/wrapped"
)

// Handle is a repo held open for writing (Open). Its methods are safe for
// concurrent use.
type Handle struct {
	r    *repo.Repo
	fsys fsx.FS
	opts WriteOptions // defaults applied; Journal and Catalog are the handle's
	sess *session.Session
	cat  *catalogsync.Handle

	// mu: writes hold it shared, Close exclusively, so Close waits for
	// the writes in flight and no write starts after it.
	mu     sync.RWMutex
	closed bool
	// noteMu serialises noting a crash on the session (writes in flight
	// may all be cut by one simulated crash).
	noteMu sync.Mutex

	// parkMu guards parked (the intents whose rows wait for a catalog
	// sync, by id) and settleTimer (armed while any is parked).
	parkMu      sync.Mutex
	parked      map[uint64]bool
	settleTimer *time.Timer
	// settleMu serialises settling (the timer's and Close's).
	settleMu sync.Mutex
	// inflight counts the writes running: the timer commits the marks
	// itself only when none is, else they ride that write's next commit.
	inflight atomic.Int32
}

// settleEvery is how many parked intents make a write sync the catalog
// at once; settleAfter how long one may wait for the timer to.
const (
	settleEvery = 64
	settleAfter = 250 * time.Millisecond
)

// ErrHandleClosed is returned by a write on a closed Handle: a use after
// Close, the caller's mistake (class usage); nothing was written.
var ErrHandleClosed error = swampj.NewClassError(swampj.ClassUsage, "handle_closed", "write handle is closed; nothing was written")

// Open holds the repo open for writing: it settles what a wrapped command
// that died left (as WriteVersions does), opens the journal shared with
// other writers, finishes what earlier writers left open and removes what
// crashed ones staged (each said at level Warn). opts are every write's
// options; its Journal and Catalog must be nil (the handle holds its own).
// opts.FS nil is the real disk.
func Open(ctx context.Context, r *repo.Repo, opts WriteOptions) (*Handle, error) {
	if opts.Journal != nil || opts.Catalog != nil {
		return nil, errors.New("write.Open: the handle holds its own journal and catalog (WriteOptions.Journal and Catalog must be nil)")
	}
	if err := repo.RefuseUnknownFormat(opts.Disk(), r.Base, true, nil); err != nil {
		return nil, err
	}
	if err := wrapped.SettleFirst(ctx, r, wrapped.SettleOptions{Common: opts.Common}); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	cat := catalogsync.OpenLazyHandle(o.fsys, r.Dir)
	env := &engine.Env{FS: o.fsys, Catalog: cat.Opener(), Log: o.Logger}
	sess, err := openWriteSession(ctx, o.fsys, r, env, nil, o)
	if err != nil {
		_ = cat.Close()
		return nil, err
	}
	sess.Journal().Release()
	o.Journal, o.Catalog = sess.Journal(), cat
	h := &Handle{r: r, fsys: o.fsys, opts: o, sess: sess, cat: cat, parked: map[uint64]bool{}}
	return h, nil
}

// WriteVersions is the package's WriteVersions on the held repo: every
// version in one intent, returned in the order given, with the same
// errors. A write on a closed handle returns ErrHandleClosed.
func (h *Handle) WriteVersions(ctx context.Context, writes []VersionWrite) ([]WrittenVersion, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, ErrHandleClosed
	}
	h.inflight.Add(1)
	defer h.inflight.Add(-1)
	o := h.opts
	o.held = h
	out, err := writeVersions(ctx, h.fsys, h.r, writes, o)
	if err != nil && fsx.IsCrash(err) {
		h.noteMu.Lock()
		h.sess.Note(err)
		h.noteMu.Unlock()
	}
	recordWriterToken(h.r, out, err, o)
	return out, err
}

// catchUp runs before a held write plans, under its swamp locks: it takes
// the journal's turn (kept until release, so the plan and its commit
// follow the recovery with nothing committed between) and finishes what
// crashed writers of these models left open.
func (h *Handle) catchUp(ctx context.Context, env *engine.Env, locks []*lock.Lock, o WriteOptions) (release func(), err error) {
	j := h.sess.Journal()
	release, err = j.Hold()
	if err != nil {
		return nil, err
	}
	env.HeldLocks = map[string]bool{}
	for _, l := range locks {
		env.HeldLocks[l.Path()] = true
	}
	outs, err := session.RecoverOpen(ctx, env, j, false)
	for _, out := range outs {
		o.warn(out.Sentence() + ", before this write")
	}
	var ne *engine.NeedsExclusiveError
	switch {
	case errors.As(err, &ne):
		// Only a process holding the repo alone may finish it, and the
		// handle holds the repo shared until it is closed.
		release()
		return nil, fmt.Errorf("an interrupted operation must be finished before this write, and only a process holding the repo alone may finish it: %w; "+
			"close the write handle and run recovery", err)
	case err != nil:
		release()
		return nil, fmt.Errorf("an interrupted operation could not be finished, so nothing was written: %w", err)
	}
	return release, nil
}

// Close waits for the writes in flight, then syncs the catalog, commits
// the pending done marks and closes the journal and the catalog. A
// failure loses only done marks (the next recovery observes those intents
// done, syncs the catalog and marks them).
// Close is idempotent.
func (h *Handle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	h.parkMu.Lock()
	if h.settleTimer != nil {
		h.settleTimer.Stop()
	}
	h.parkMu.Unlock()
	if h.sess.Crashed() {
		_ = h.sess.Close()
		_ = h.cat.Close()
		return nil
	}
	err := h.settle(context.Background())
	if cerr := h.sess.Close(); err == nil {
		err = cerr
	}
	if cerr := h.cat.Close(); err == nil {
		err = cerr
	}
	return err
}

// park takes the done mark of a write whose catalog row is not durable
// yet (engine.Env.ParkDone). The write that parks the settleEvery-th
// settles them all; otherwise the timer does.
func (h *Handle) park(id uint64) {
	h.parkMu.Lock()
	h.parked[id] = true
	full := len(h.parked) >= settleEvery
	if !full && h.settleTimer == nil && !h.opts.noSettleTimer {
		h.settleTimer = time.AfterFunc(settleAfter, h.settleLater)
	}
	h.parkMu.Unlock()
	if full {
		if err := h.settle(context.Background()); err != nil && !fsx.IsCrash(err) {
			h.opts.warn("the catalog could not be synced; its rows stay covered by their open intents: " + err.Error())
		}
	}
}

// isParked reports whether the intent is parked here (engine.Env.Parked).
func (h *Handle) isParked(id uint64) bool {
	h.parkMu.Lock()
	defer h.parkMu.Unlock()
	return h.parked[id]
}

// settleLater is the timer's settle. When no write is running it also
// commits the marks, so that a handle that has stopped writing leaves no
// intent open; else they ride the next write's journal commit (and a
// write that parks arms the timer again).
func (h *Handle) settleLater() {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed || h.sess.Crashed() {
		return
	}
	err := h.settle(context.Background())
	if err == nil && h.inflight.Load() == 0 {
		err = h.sess.Journal().Flush()
	}
	if err != nil && !fsx.IsCrash(err) {
		h.opts.warn("settling the write handle's intents: " + err.Error())
	}
}

// settle syncs the catalog, which makes every parked intent's row
// durable, and only then marks those intents done (lazily: the marks ride
// the next journal commit). On a failure they stay parked.
func (h *Handle) settle(ctx context.Context) error {
	h.settleMu.Lock()
	defer h.settleMu.Unlock()
	h.parkMu.Lock()
	ids := make([]uint64, 0, len(h.parked))
	for id := range h.parked {
		ids = append(ids, id)
	}
	if h.settleTimer != nil {
		h.settleTimer.Stop()
		h.settleTimer = nil
	}
	h.parkMu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	if err := h.syncCatalog(ctx); err != nil {
		return err
	}
	j := h.sess.Journal()
	h.parkMu.Lock()
	for _, id := range ids {
		delete(h.parked, id)
		j.Finish(id, journal.StatusDone)
	}
	h.parkMu.Unlock()
	return nil
}

// syncCatalog is one fsync of the catalog's WAL.
func (h *Handle) syncCatalog(ctx context.Context) error {
	cs, ok := h.cat.Opener().(engine.CatalogSyncer)
	if !ok {
		return fmt.Errorf("write handle: its catalog (%T) cannot be synced", h.cat.Opener())
	}
	return cs.SyncCatalog(ctx)
}
