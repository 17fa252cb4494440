package migrate

// Namespace migration: `datastore namespace migrate [--reverse]` and
// `datastore namespace unset --migrate` (swamp-format §4), the root fix of
// swamp #3316.
//
// What Migrate guarantees:
//
//   - One code path. The plan is computed from the disk as it is now, after
//     every intent left open by a crash or a failure has been finished. A
//     first run, a re-run after success, a resume after a failure and a tree
//     half migrated by an older swamp all reduce to "move what is still on
//     the wrong side"; when nothing is, the run says so and exits cleanly.
//   - The catalog never moves. _catalog.db and its sidecars
//     (repo.IsCatalogFile) are repo-local infrastructure, not data: they are
//     never moved, never count as data and never collide. A directory that
//     holds the catalog is emptied entry by entry around it; catalog copies
//     an older swamp carried into {base}/{ns}/data are left alone and
//     reported as a warning.
//   - Nothing is overwritten or lost. Renames never replace. Where both sides
//     hold a directory the two are merged entry by entry; a file present on
//     both sides is dropped from the source only when byte-identical, and
//     any other clash refuses the whole run before anything is touched,
//     naming every clashing path.
//   - All or nothing, across crashes. The whole plan — every rename, merge
//     entry, dropped duplicate and rmdir, the .swamp.yaml and manifest
//     changes of unset --migrate and the catalog restamp — is one intent,
//     journaled (one synced commit) before the first rename. After a crash
//     `swampj recover` finishes it, `swampj recover --rollback` restores the
//     starting layout, and re-running the command finishes it too.
//   - Durable at the cost of one fsync per parent directory touched, not per
//     entry: renames only mark their parents dirty and a single barrier
//     after the last rename fsyncs each dirty directory once.
//   - Exclusive. swampj's journal lock and swamp's global lock are held for
//     the whole run, and the run waits (bounded) while a swamp writer holds
//     a live per-model lock.
//
// Migrate returns typed results and errors; it never prints and never exits.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/wrapped"
)

// Migrate previews or (with Confirm) runs a namespace migration of the repo
// at r.Dir.
//
// It plans from the disk, configuration included: .swamp.yaml is read again
// (with opts.Getenv) before anything else, so a *repo.Repo loaded before a
// SetNamespace or UnsetNamespace — by this process or by swamp — is not
// stale here. Only r.Dir is taken from r. fsys is the disk (nil: the real
// one; the crash suite passes a fault FS).
func Migrate(ctx context.Context, r *repo.Repo, opts MigrateOptions) (*MigrateResult, error) {
	fsys := opts.Disk()
	opts.fsys = fsys
	if opts.Unset {
		opts.Reverse = true
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	r, err := repo.Load(fsys, r.Dir, opts.Getenv)
	if err != nil {
		return nil, err
	}
	// The format marker before any lock or journal (swamp-format §13.1); a preview only
	// reads.
	if err := repo.RefuseUnknownFormat(fsys, r.Base, opts.Confirm, session.WarnTo(opts.Logger)); err != nil {
		return nil, err
	}
	if err := checkNamespaceCommandAllowed(fsys, r); err != nil {
		return nil, err
	}
	if r.Namespace != "" && repo.IsReservedNamespace(r.Namespace) {
		return nil, &ReservedNamespaceError{Slug: r.Namespace}
	}
	if !opts.Confirm {
		res, err := previewMigration(ctx, r, opts)
		return res, interrupted(ctx, err, "the preview", opts)
	}
	if err := wrapped.SettleFirst(ctx, r, wrapped.SettleOptions{Common: host.Common{JournalLockTimeout: opts.JournalLockTimeout, SwampLockTimeout: opts.SwampLockTimeout, Command: opts.Command, Logger: opts.Logger, FS: fsys}}); err != nil {
		return nil, err
	}
	if r.Namespace != "" {
		// Refuse what can be seen without walking before anything — the
		// journal, a lock file — is created. The plan checks again later,
		// under the locks.
		if err := precheckPositions(fsys, r, opts.Reverse); err != nil {
			return nil, err
		}
	}
	res, err := runMigration(ctx, r, opts)
	return res, interrupted(ctx, err, "the planning, before anything was moved", opts)
}

// interrupted turns an error that is the cancelled context (Ctrl-C,
// SIGTERM) into a MigrateInterruptedError: before the intent was journaled
// nothing of the migration changed. An interruption once the intent was
// journaled is one already (migrateLocked).
func interrupted(ctx context.Context, err error, phase string, opts MigrateOptions) error {
	var mi *MigrateInterruptedError
	var failed *MigrateFailedError
	var unfinished *UnfinishedIntentError
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) || errors.As(err, &mi) ||
		errors.As(err, &failed) || errors.As(err, &unfinished) {
		return err // not an interrupt, or one with an intent of its own to name
	}
	return &MigrateInterruptedError{Phase: phase, Rerun: rerunRemedy(opts), Err: err}
}

// precheckPositions looks at the namespace directory and every
// subdirectory position: a symlink there, another namespace's manifest
// (forward) or a device boundary refuses the run.
func precheckPositions(fsys fsx.FS, r *repo.Repo, reverse bool) error {
	nsDir := filepath.Join(r.Base, r.Namespace)
	if _, err := topLevelDir(fsys, r.Base, nsDir); err != nil {
		return err
	}
	if !reverse {
		if err := refuseForeignNamespaces(fsys, r); err != nil {
			return err
		}
	}
	p := &migrationPlanner{fsys: fsys, r: r, plan: &migrationPlan{reverse: reverse}}
	for _, subdir := range migrationSubdirs(r, reverse) {
		src, dst := p.sides(subdir)
		srcKind, err := positionKind(fsys, r.Base, src)
		if err != nil {
			return err
		}
		if _, err := positionKind(fsys, r.Base, dst); err != nil {
			return err
		}
		if srcKind == posDir {
			if err := p.checkSameDevice(src, dst); err != nil {
				return err
			}
		}
	}
	return nil
}

func noNamespace(opts MigrateOptions) error {
	if opts.Unset {
		return &NoNamespaceError{Msg: "No namespace is configured. Nothing to unset or migrate."}
	}
	return &NoNamespaceError{Msg: "No namespace is configured; set one first.", NeedSet: true}
}

func previewMigration(ctx context.Context, r *repo.Repo, opts MigrateOptions) (*MigrateResult, error) {
	if r.Namespace == "" {
		return nil, noNamespace(opts)
	}
	if opts.Unset {
		if err := refuseSeveralNamespaces(opts.fsys, r); err != nil {
			return nil, err
		}
	}
	open, err := countOpenIntents(opts.Common, r.JournalPath)
	if err != nil {
		return nil, err
	}
	plan, err := planMigration(ctx, r, opts, previewStampRows(ctx, opts.fsys, r.CatalogPath))
	if err != nil {
		return nil, err
	}
	pv := plan.preview(false)
	pv.OpenIntents = open
	return &MigrateResult{Preview: pv}, nil
}

// countOpenIntents peeks at the journal without creating one, or writing.
func countOpenIntents(c host.Common, path string) (int, error) {
	j, open, err := session.Inspect(c, path)
	if err != nil {
		return 0, err
	}
	return len(open), j.Close()
}

func runMigration(ctx context.Context, r *repo.Repo, opts MigrateOptions) (*MigrateResult, error) {
	fsys := opts.fsys
	if r.Namespace == "" {
		// Without a namespace only an interrupted run (an unset --migrate
		// whose .swamp.yaml step was done) can leave work behind.
		if ok, err := journal.Exists(fsys, r.JournalPath); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			return nil, noNamespace(opts)
		}
	}
	// swamp's global lock first, then swampj's journal: the order every
	// swampj command takes swamp's locks and its own.
	swampTimeout := opts.SwampLockTimeout
	if swampTimeout <= 0 {
		swampTimeout = lock.TimeoutFromEnv(opts.Getenv)
	}
	// Per-model locks an ancestor swamp process holds (under either
	// version's variables) are its own child's to work under, not writers
	// to wait for.
	lends := lock.AncestryFromEnv(opts.Getenv).Lends
	// Both global locks of a namespace (06b6147's {base}/.locks/{ns}.lock,
	// then newer swamp's {base}/{ns}/.datastore.lock; swamp-format §13.2), in that
	// order: each swamp version takes only its own, so a run that took one
	// would not exclude the other version's writers.
	globals, err := lock.AcquireGlobal(ctx, fsys, r.Base, r.Namespace, lock.Options{Timeout: swampTimeout})
	if err != nil {
		return nil, err
	}
	heartbeatCtx, stopHeartbeat := context.WithCancel(ctx)
	held := map[string]bool{}
	var globalPaths []string
	for _, g := range globals {
		g.StartHeartbeat(heartbeatCtx)
		held[g.Path()] = true
		globalPaths = append(globalPaths, g.Path())
	}
	crashed := false
	defer func() {
		stopHeartbeat()
		if crashed {
			for _, g := range globals {
				g.Abandon() // a dead process leaves its locks behind; so does a simulated crash
			}
			return
		}
		// An unset --migrate empties {base}/{ns}/ but for newer swamp's
		// lock, held there until now: the directory is left, empty, once
		// the lock is released (its plan cannot remove a directory that
		// holds a lock it holds, and an rmdir after the intent would be a
		// change no intent records: a crash before it would leave the same
		// empty directory, so it is always left).
		lock.ReleaseAll(globals, nil)
	}()

	sess, err := session.Open(opts.Common, r.JournalPath)
	if err != nil {
		crashed = fsx.IsCrash(err)
		return nil, err
	}
	cat := opts.Catalog.Opener()
	if cat == nil {
		cat = protocol.RepoCatalog(fsys, r.Dir)
	}
	run := &nsMutation{fsys: fsys, sess: sess, env: &engine.Env{FS: fsys, Catalog: cat, HeldLocks: held, Log: opts.Logger}, repo: r}
	defer func() {
		crashed = crashed || run.crashed()
		run.close()
	}()

	return migrateLocked(ctx, run, r, opts, globalPaths, swampTimeout, lends)
}

// migrateLocked is the migration once swamp's global lock and the journal
// are held: finish what is open, plan while no swamp writer runs, journal
// and run the plan, then build the catalog if swamp's reader would.
func migrateLocked(ctx context.Context, run *nsMutation, r *repo.Repo, opts MigrateOptions, globals []string, swampTimeout time.Duration, lends func(lock.Info) bool) (*MigrateResult, error) {
	fsys := run.fsys
	// Interrupted operations first: they move data, so no swamp writer may
	// be active while they run.
	if open, err := run.sess.Journal().OpenIntents(); err != nil {
		return nil, err
	} else if len(open) > 0 {
		if err := lock.WaitNoLiveModelLocksSkipping(ctx, fsys, r.Base, r.Namespace, lends, swampTimeout, 0); err != nil {
			return nil, err
		}
		if err := run.finishOpen(ctx, opts.Getenv); err != nil {
			return nil, err
		}
		r = run.repo
	}
	if r.Namespace == "" {
		if len(run.recovered) > 0 {
			// The interrupted run was all there was to do.
			done := &MigrateCompleted{DatastorePath: r.Base, Reverse: opts.Reverse,
				MigratedDirectories: []string{}, Recovered: run.recovered}
			return &MigrateResult{Completed: done}, run.finishCompleted(done)
		}
		return nil, noNamespace(opts)
	}
	if err := checkNamespaceCommandAllowed(fsys, r); err != nil {
		return nil, err
	}
	if opts.Unset {
		if err := refuseSeveralNamespaces(fsys, r); err != nil {
			return nil, err
		}
	}

	rows := runStampRows(ctx, protocol.OpenerOf(run.env))
	// The set-based restamp's statements run while the plan walks the tree
	// (on the real disk); its step only commits them (restampAhead).
	from, to := migrationStamps(r, opts)
	ahead := protocol.StartRestampAhead(ctx, run.env, r.Dir, from, to)
	defer ahead.Abandon()
	plan, err := planWhileNoWriter(ctx, r, opts, swampTimeout, lends, rows, ahead.Abandon)
	if err != nil {
		return nil, run.note(err)
	}
	live := ahead.LiveApply(plan.steps)
	res := &MigrateResult{Preview: plan.preview(true)}
	done := &MigrateCompleted{Namespace: r.Namespace, DatastorePath: r.Base, Reverse: opts.Reverse,
		MigratedDirectories: []string{}, Warnings: plan.warnings, Recovered: run.recovered}
	res.Completed = done
	if opts.Reverse && !opts.Unset {
		noteNamespaceStillSet(r, done)
	}
	if len(plan.steps) == 0 {
		done.NothingToDo = len(run.recovered) == 0
		if err := buildCatalogAfter(ctx, run, done, opts.Getenv); err != nil {
			return nil, err
		}
		return res, run.finishCompleted(done)
	}

	// Recovery finishes or undoes a migration only under swamp's global
	// locks, both of them, in the same order, as the migration itself runs.
	in := &journal.Intent{Kind: plan.intentKind(), Summary: plan.summary(), Repo: r.Dir, Steps: plan.steps, Locks: append([]string(nil), globals...)}
	exec, err := run.execute(ctx, in, migrateStepProgress(opts.Progress, plan.steps), live)
	ahead.Abandon()
	if err != nil {
		if run.crashed() || in.ID == 0 {
			return nil, err // a crash, or nothing was journaled (and so nothing done)
		}
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			done := 0
			if exec != nil {
				done = exec.Applied + exec.Skipped
			}
			return nil, &MigrateInterruptedError{Phase: "the moves", IntentID: in.ID, Done: done, Rerun: rerunRemedy(opts), Err: err}
		}
		return nil, plan.failure(in.ID, err, opts)
	}
	if ctx.Err() != nil {
		// Past the point of no return the run does not stop: every step
		// is done. Said, so an operator who pressed Ctrl-C knows.
		done.Warnings = append(done.Warnings, MigrateWarning{Message: "interrupted after the point of no return: every move was already done, so the migration was finished"})
	}
	for _, m := range plan.moves {
		done.MigratedDirectories = append(done.MigratedDirectories, m.Subdir)
	}
	done.TotalFiles, done.TotalBytes = plan.totals()
	done.IntentID, done.Steps, done.DirFsyncs = in.ID, exec.Steps, exec.DirSyncs
	done.NamespaceUnset = opts.Unset
	done.CatalogRestamped = plan.restamps
	if err := buildCatalogAfter(ctx, run, done, opts.Getenv); err != nil {
		return nil, err
	}
	return res, run.finishCompleted(done)
}

// noteNamespaceStillSet says, after a reverse migration that left the
// namespace in .swamp.yaml, what swamp reads now: the namespace's data
// root, which the reverse emptied, so swamp finds no data until the
// namespace is unset.
func noteNamespaceStillSet(r *repo.Repo, done *MigrateCompleted) {
	done.NamespaceStillSet = true
	done.SwampReads = r.DataRoot
}

// buildCatalogAfter builds a catalog that is not built yet (swamp's own
// migrate invalidates it, swamp-format §3.8) once the data is where the
// configuration says, still under the run's locks. The catalog is derived
// state: a failure is a warning, never the run's failure (only a simulated
// crash is returned).
func buildCatalogAfter(ctx context.Context, run *nsMutation, done *MigrateCompleted, getenv func(string) string) error {
	r, err := repo.Load(run.fsys, run.repo.Dir, getenv)
	if err != nil {
		r = run.repo // the configuration the run ends with, if it reads back
	}
	built, err := catalogsync.BuildIfNotBuilt(ctx, r, protocol.OpenerOf(run.env), host.Common{FS: run.fsys})
	if fsx.IsCrash(err) {
		return run.note(err)
	}
	if err != nil {
		done.Warnings = append(done.Warnings, MigrateWarning{Path: r.CatalogPath, Message: fmt.Sprintf(
			"the catalog is not built yet and building it failed (%v); swamp builds it on its next read, or rebuild it now", err),
			Remedy: report.RemedyRebuildCatalog})
	}
	done.CatalogBuilt = built
	return nil
}

// planWhileNoWriter plans, and makes sure no swamp writer holds a live
// per-model lock while it does (swamp's structural commands wait for them,
// swamp-format §8). The plan's walk already lists every directory of the source side of
// the data tree and notes any .lock file there, so only the other side is
// scanned on its own (concurrently); swamp's full scan (lock.LiveModelLocks)
// runs only when a lock file was seen, or the plan did not walk the source
// data. If a lock is live, wait until none is — a writer was active while
// the plan looked — and plan again.
//
// beforeWait runs before a full lock scan or a wait: whatever the run holds
// that a writer might wait for (the catalog write lock of a restamp being
// prepared) is let go there.
func planWhileNoWriter(ctx context.Context, r *repo.Repo, opts MigrateOptions, timeout time.Duration, lends func(lock.Info) bool, rows stampRows, beforeWait func()) (*migrationPlan, error) {
	otherSide := filepath.Join(r.Base, r.Namespace) // holds the destination data root…
	if opts.Reverse {
		otherSide = r.Base // …{base}/{ns}/data forward, {base}/data in reverse
	}
	var otherLive []lock.Held
	var otherErr error
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		otherLive, otherErr = lock.LiveModelLocksSkipping(opts.fsys, otherSide, "", time.Now(), lends)
	}()
	plan, err := planMigration(ctx, r, opts, rows)
	<-scanned
	if otherErr != nil {
		return nil, otherErr
	}
	if err == nil && len(otherLive) == 0 && plan.sourceDataWalked && len(plan.lockFiles) == 0 {
		return plan, nil
	}
	beforeWait()
	live, lerr := lock.LiveModelLocksSkipping(opts.fsys, r.Base, r.Namespace, time.Now(), lends)
	if lerr != nil {
		return nil, lerr
	}
	if len(live) == 0 {
		if err == nil && len(plan.lockFiles) > 0 {
			// The walk saw a lock file, and none is live now: a dead
			// lock (it moves with the data), or a writer's that was
			// gone again a moment later (a writer takes its lock, sees
			// the global lock and lets its lock go): planned, it would
			// stop the run at a rename that finds neither name. Plan
			// again from the disk as it is now.
			return planMigration(ctx, r, opts, rows)
		}
		return plan, err
	}
	if err := lock.WaitNoLiveModelLocksSkipping(ctx, opts.fsys, r.Base, r.Namespace, lends, timeout, 0); err != nil {
		return nil, err
	}
	return planMigration(ctx, r, opts, rows)
}
