package ops

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
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// MigrateOptions configure Migrate.
type MigrateOptions struct {
	// Reverse moves {base}/{ns}/… back to the solo layout {base}/….
	Reverse bool
	// Unset is `namespace unset --migrate`: the reverse migration plus the
	// removal of the namespace from .swamp.yaml and of its manifest, in the
	// same intent. It implies Reverse.
	Unset bool
	// Confirm executes the plan; without it Migrate only previews.
	Confirm bool
	// FS is the disk (nil: the real one). The crash suite passes a fault FS.
	FS fsx.FS
	// LockTimeout bounds the wait for swampj's journal lock (0: 10 s).
	LockTimeout time.Duration
	// SwampLockTimeout bounds the wait for swamp's global datastore lock and
	// for live per-model locks (0: SWAMP_LOCK_TIMEOUT_MS, else 60 s).
	SwampLockTimeout time.Duration
	// Progress, if set, receives the run's phases: "planning" (files
	// walked), "moving" (steps applied of the plan's steps) and, before the
	// catalog commit, "restamping catalog".
	Progress Progress
	// Command is recorded as the lock holder and in the intent.
	Command []string
	// Catalog serves the catalog steps (nil: the repo's own catalog).
	Catalog *catalogsync.Handle
	// Getenv looks up SWAMP_LOCK_TIMEOUT_MS, SWAMP_LOCK_HOLDER_PID and
	// SWAMP_DATASTORE (nil: the process environment).
	Getenv func(string) string
	// Logger receives the executor's step records at level Debug (nil:
	// nothing is logged).
	Logger *slog.Logger
}

// DirectoryMove is one subdirectory the plan moves (swamp's preview entry).
// FileCount and TotalBytes count the files that change sides; catalog files
// are not counted.
type DirectoryMove struct {
	Subdir      string `json:"subdir"`
	Source      string `json:"source"`
	Destination string `json:"destination"`
	FileCount   int64  `json:"fileCount"`
	TotalBytes  int64  `json:"totalBytes"`
}

// MigrateWarning reports files the migration leaves where they are on
// purpose: catalog copies an older swamp moved into the namespace.
type MigrateWarning struct {
	Subdir  string   `json:"subdir"`
	Path    string   `json:"path"`
	Files   []string `json:"files"`
	Message string   `json:"message"`
	// Remedy is the action the message advises, when it is one of
	// swampj's own (the CLI appends its command); "" otherwise.
	Remedy Remedy `json:"remedy,omitempty"`
}

// MigratePreview is the plan: swamp's preview object plus the number of
// steps and of directory fsyncs the plan will make.
type MigratePreview struct {
	Namespace     string           `json:"namespace"`
	DatastorePath string           `json:"datastorePath"`
	Reverse       bool             `json:"reverse"`
	Confirm       bool             `json:"confirm"`
	Directories   []DirectoryMove  `json:"directories"`
	TotalFiles    int64            `json:"totalFiles"`
	TotalBytes    int64            `json:"totalBytes"`
	Steps         int              `json:"steps"`
	Fsyncs        int              `json:"fsyncs"`
	NothingToDo   bool             `json:"nothingToDo"`
	Warnings      []MigrateWarning `json:"warnings,omitempty"`
	// OpenIntents counts interrupted operations in the journal; a confirmed
	// run finishes them before it plans.
	OpenIntents int `json:"openIntents,omitempty"`
}

// MigrateCompleted is a confirmed run: swamp's completed object plus the
// intent, its step count, the directory fsyncs made and whether there was
// nothing to do.
type MigrateCompleted struct {
	Namespace           string   `json:"namespace"`
	DatastorePath       string   `json:"datastorePath"`
	Reverse             bool     `json:"reverse"`
	MigratedDirectories []string `json:"migratedDirectories"`
	TotalFiles          int64    `json:"totalFiles"`
	TotalBytes          int64    `json:"totalBytes"`
	IntentID            uint64   `json:"intentId"`
	Steps               int      `json:"steps"`
	DirFsyncs           int      `json:"dirFsyncs"`
	NothingToDo         bool     `json:"nothingToDo"`
	NamespaceUnset      bool     `json:"namespaceUnset,omitempty"`
	CatalogRestamped    bool     `json:"catalogRestamped,omitempty"`
	// CatalogBuilt: the catalog was not built yet (swamp invalidated it)
	// and the run filled it from the disk.
	CatalogBuilt bool             `json:"catalogBuilt,omitempty"`
	Warnings     []MigrateWarning `json:"warnings,omitempty"`
	// Recovered lists the interrupted operations finished before planning.
	Recovered []IntentOutcome `json:"recovered,omitempty"`
}

// MigrateResult is the plan (always) and, for a confirmed run, what it did.
type MigrateResult struct {
	Preview   *MigratePreview
	Completed *MigrateCompleted
}

// Migrate previews or (with Confirm) runs a namespace migration of the repo
// at r.Dir.
//
// It plans from the disk, configuration included: .swamp.yaml is read again
// (with opts.Getenv) before anything else, so a *repo.Repo loaded before a
// SetNamespace or UnsetNamespace — by this process or by swamp — is not
// stale here. Only r.Dir is taken from r.
func Migrate(ctx context.Context, r *repo.Repo, opts MigrateOptions) (*MigrateResult, error) {
	fsys := fsx.OrReal(opts.FS)
	opts.FS = fsys
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
	if err := checkNamespaceCommandAllowed(fsys, r); err != nil {
		return nil, err
	}
	if r.Namespace != "" && repo.IsReservedNamespace(r.Namespace) {
		return nil, &ReservedNamespaceError{Slug: r.Namespace}
	}
	if !opts.Confirm {
		return previewMigration(ctx, r, opts)
	}
	if r.Namespace != "" {
		// Refuse what can be seen without walking before anything — the
		// journal, a lock file — is created. The plan checks again later,
		// under the locks.
		if err := precheckPositions(fsys, r, opts.Reverse); err != nil {
			return nil, err
		}
	}
	return runMigration(ctx, r, opts)
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
		if err := refuseSeveralNamespaces(opts.FS, r); err != nil {
			return nil, err
		}
	}
	open, err := countOpenIntents(opts.FS, r.JournalPath, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	plan, err := planMigration(ctx, r, opts, previewStampRows(ctx, opts.FS, r.CatalogPath))
	if err != nil {
		return nil, err
	}
	pv := plan.preview(false)
	pv.OpenIntents = open
	return &MigrateResult{Preview: pv}, nil
}

// countOpenIntents peeks at the journal without creating one, or writing.
func countOpenIntents(fsys fsx.FS, path string, timeout time.Duration) (int, error) {
	j, open, err := session.Inspect(fsys, path, journal.Options{LockTimeout: timeout})
	if err != nil {
		return 0, err
	}
	return len(open), j.Close()
}

func runMigration(ctx context.Context, r *repo.Repo, opts MigrateOptions) (*MigrateResult, error) {
	fsys := opts.FS
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
	selfPid := lock.HolderPidFromEnv(opts.Getenv)
	global, err := lock.Acquire(ctx, fsys, lock.GlobalPath(r.Base, r.Namespace), lock.Options{Timeout: swampTimeout})
	if err != nil {
		return nil, err
	}
	heartbeatCtx, stopHeartbeat := context.WithCancel(ctx)
	global.StartHeartbeat(heartbeatCtx)
	crashed := false
	defer func() {
		stopHeartbeat()
		if !crashed {
			_ = global.Release()
		} else {
			global.Abandon() // a dead process leaves its lock behind; so does a simulated crash
		}
	}()

	sess, err := session.Open(fsys, r.JournalPath, journal.Options{LockTimeout: opts.LockTimeout, Command: opts.Command})
	if err != nil {
		crashed = fsx.IsCrash(err)
		return nil, err
	}
	cat := opts.Catalog.Opener()
	if cat == nil {
		cat = engine.RepoCatalog(fsys, r.Dir)
	}
	run := &nsMutation{fsys: fsys, sess: sess, env: &engine.Env{FS: fsys, Catalog: cat, HeldLocks: map[string]bool{global.Path(): true}, Log: opts.Logger}, repo: r}
	defer func() {
		crashed = crashed || run.crashed()
		run.close()
	}()

	// Interrupted operations first: they move data, so no swamp writer may
	// be active while they run.
	if open, err := sess.Journal().OpenIntents(); err != nil {
		return nil, err
	} else if len(open) > 0 {
		if err := lock.WaitNoLiveModelLocks(ctx, fsys, r.Base, r.Namespace, selfPid, swampTimeout, 0); err != nil {
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

	rows := runStampRows(ctx, run.env.Catalog)
	// The set-based restamp's statements run while the plan walks the tree
	// (on the real disk); its step only commits them (restampAhead).
	from, to := migrationStamps(r, opts)
	ahead := engine.StartRestampAhead(ctx, run.env, r.Dir, from, to)
	defer ahead.Abandon()
	plan, err := planWhileNoWriter(ctx, r, opts, swampTimeout, selfPid, rows, ahead.Abandon)
	if err != nil {
		return nil, run.note(err)
	}
	live := ahead.LiveApply(plan.steps)
	res := &MigrateResult{Preview: plan.preview(true)}
	done := &MigrateCompleted{Namespace: r.Namespace, DatastorePath: r.Base, Reverse: opts.Reverse,
		MigratedDirectories: []string{}, Warnings: plan.warnings, Recovered: run.recovered}
	res.Completed = done
	if len(plan.steps) == 0 {
		done.NothingToDo = len(run.recovered) == 0
		if err := buildCatalogAfter(ctx, run, done, opts.Getenv); err != nil {
			return nil, err
		}
		return res, run.finishCompleted(done)
	}

	// Recovery finishes or undoes a migration only under swamp's global
	// lock, as the migration itself runs.
	in := &journal.Intent{Kind: plan.intentKind(), Summary: plan.summary(), Repo: r.Dir, Steps: plan.steps, Locks: []string{global.Path()}}
	exec, err := run.execute(ctx, in, migrateStepProgress(opts.Progress, plan.steps), live)
	ahead.Abandon()
	if err != nil {
		if run.crashed() || in.ID == 0 {
			return nil, err // a crash, or nothing was journaled (and so nothing done)
		}
		return nil, plan.failure(in.ID, err, opts)
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

// buildCatalogAfter builds a catalog that is not built yet (swamp's own
// migrate invalidates it, §3.8; issue #9.4) once the data is where the
// configuration says, still under the run's locks. The catalog is derived
// state: a failure is a warning, never the run's failure (only a simulated
// crash is returned).
func buildCatalogAfter(ctx context.Context, run *nsMutation, done *MigrateCompleted, getenv func(string) string) error {
	r, err := repo.Load(run.fsys, run.repo.Dir, getenv)
	if err != nil {
		r = run.repo // the configuration the run ends with, if it reads back
	}
	built, err := catalogsync.BuildIfNotBuilt(ctx, run.fsys, r, run.env.Catalog)
	if fsx.IsCrash(err) {
		return run.note(err)
	}
	if err != nil {
		done.Warnings = append(done.Warnings, MigrateWarning{Path: r.CatalogPath, Message: fmt.Sprintf(
			"the catalog is not built yet and building it failed (%v); swamp builds it on its next read, or rebuild it now", err),
			Remedy: RemedyRebuildCatalog})
	}
	done.CatalogBuilt = built
	return nil
}

// planWhileNoWriter plans, and makes sure no swamp writer holds a live
// per-model lock while it does (swamp's structural commands wait for them,
// §8). The plan's walk already lists every directory of the source side of
// the data tree and notes any .lock file there, so only the other side is
// scanned on its own (concurrently); swamp's full scan (lock.LiveModelLocks)
// runs only when a lock file was seen, or the plan did not walk the source
// data. If a lock is live, wait until none is — a writer was active while
// the plan looked — and plan again.
//
// beforeWait runs before a full lock scan or a wait: whatever the run holds
// that a writer might wait for (the catalog write lock of a restamp being
// prepared) is let go there.
func planWhileNoWriter(ctx context.Context, r *repo.Repo, opts MigrateOptions, timeout time.Duration, selfPid int, rows stampRows, beforeWait func()) (*migrationPlan, error) {
	otherSide := filepath.Join(r.Base, r.Namespace) // holds the destination data root…
	if opts.Reverse {
		otherSide = r.Base // …{base}/{ns}/data forward, {base}/data in reverse
	}
	var otherLive []lock.Held
	var otherErr error
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		otherLive, otherErr = lock.LiveModelLocks(opts.FS, otherSide, "", time.Now(), selfPid)
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
	live, lerr := lock.LiveModelLocks(opts.FS, r.Base, r.Namespace, time.Now(), selfPid)
	if lerr != nil {
		return nil, lerr
	}
	if len(live) == 0 {
		return plan, err
	}
	if err := lock.WaitNoLiveModelLocks(ctx, opts.FS, r.Base, r.Namespace, selfPid, timeout, 0); err != nil {
		return nil, err
	}
	return planMigration(ctx, r, opts, rows)
}

// ---- the plan

// migrationPlan is what planMigration found on disk and the steps that
// bring it to the other side.
type migrationPlan struct {
	ns, base string
	reverse  bool
	unset    bool
	moves    []DirectoryMove
	steps    []journal.Step
	// stepSubdir[i] is the subdirectory step i moves ("" for the shared
	// steps after the barrier), to name what succeeded when a step fails.
	stepSubdir []string
	warnings   []MigrateWarning
	restamps   bool
	// lockFiles are files named like a per-model lock (.lock) that the
	// plan's walk came across; sourceDataWalked says the walk listed the
	// whole source side of the data tree (or there is none).
	lockFiles        []string
	sourceDataWalked bool
}

func (p *migrationPlan) intentKind() string {
	switch {
	case p.unset:
		return "unset-migrate"
	case p.reverse:
		return "reverse"
	}
	return "migrate"
}

func (p *migrationPlan) summary() string {
	names := make([]string, len(p.moves))
	for i, m := range p.moves {
		names[i] = m.Subdir
	}
	what := strings.Join(names, ", ")
	if what == "" {
		what = "no directories"
	}
	switch {
	case p.unset:
		return fmt.Sprintf("unset namespace %q, moving back %s", p.ns, what)
	case p.reverse:
		return fmt.Sprintf("move %s out of namespace %q", what, p.ns)
	}
	return fmt.Sprintf("move %s into namespace %q", what, p.ns)
}

func (p *migrationPlan) totals() (files, bytes int64) {
	for _, m := range p.moves {
		files += m.FileCount
		bytes += m.TotalBytes
	}
	return files, bytes
}

func (p *migrationPlan) preview(confirm bool) *MigratePreview {
	files, bytes := p.totals()
	dirs := append([]DirectoryMove{}, p.moves...)
	return &MigratePreview{Namespace: p.ns, DatastorePath: p.base, Reverse: p.reverse, Confirm: confirm,
		Directories: dirs, TotalFiles: files, TotalBytes: bytes, Steps: len(p.steps), Fsyncs: predictDirFsyncs(p.steps),
		NothingToDo: len(p.steps) == 0, Warnings: p.warnings}
}

// failure turns a failed step into the partial report: which subdirectories
// are fully on the other side, which one failed.
func (p *migrationPlan) failure(id uint64, err error, opts MigrateOptions) error {
	failedAt := -1
	var se *engine.StepError
	var ce *engine.ConflictError
	switch {
	case errors.As(err, &se):
		failedAt = se.Index
	case errors.As(err, &ce):
		failedAt = ce.Index
	}
	fe := &MigrateFailedError{Namespace: p.ns, DatastorePath: p.base, Reverse: p.reverse, IntentID: id,
		Succeeded: []string{}, Err: err, Rerun: rerunRemedy(opts)}
	if failedAt < 0 {
		return fe
	}
	lastStep := map[string]int{}
	for i, sub := range p.stepSubdir {
		if sub != "" {
			lastStep[sub] = i
		}
	}
	fe.Failed = p.stepSubdir[failedAt]
	for _, m := range p.moves {
		if last, ok := lastStep[m.Subdir]; ok && last < failedAt && m.Subdir != fe.Failed {
			fe.Succeeded = append(fe.Succeeded, m.Subdir)
		}
	}
	return fe
}

// rerunRemedy is the run that finishes a failed migration: the same one.
func rerunRemedy(opts MigrateOptions) Remedy {
	switch {
	case opts.Unset:
		return RemedyUnsetMigrate
	case opts.Reverse:
		return RemedyMigrateReverse
	}
	return RemedyMigrate
}

// migrationPlanner walks the two sides and collects the plan.
type migrationPlanner struct {
	progress    Progress
	ctx         context.Context
	fsys        fsx.FS
	r           *repo.Repo
	plan        *migrationPlan
	liveCatalog string // the directory holding the repo's own catalog
	rows        stampRows

	subdir     string          // the subdirectory being planned
	collisions []string        // "subdir/rel" of every non-identical clash
	counted    []countedTree   // subtrees whose files change sides
	gone       map[string]bool // subdirectories whose source the plan removes
	nsMkdir    string          // {base}/{ns} to create before the first move, if missing
	newDirs    []string        // directories the plan creates, not yet followed by a barrier
	emptied    []emptiedDir    // merged sources to remove after the barrier, deepest first
	copies     []string        // catalog copies an older swamp carried into the namespace
	qdir       string          // quarantineDir, once chosen
}

// emptiedDir is a merge source the plan removes once emptied.
type emptiedDir struct{ subdir, path string }

// countedTree is a moved path whose files are counted into moves[move].
type countedTree struct {
	move int
	path string
}

// planMigration reads the disk and returns the plan. hasRows says whether
// the catalog has rows of a namespace (read-only for a preview; the run's
// own catalog handle for a confirmed run, which the restamp step reuses).
func planMigration(ctx context.Context, r *repo.Repo, opts MigrateOptions, rows stampRows) (*migrationPlan, error) {
	fsys := opts.FS
	opts.Progress.Emit("planning", 0, 0, "files")
	p := &migrationPlanner{ctx: ctx, fsys: fsys, r: r, progress: opts.Progress, liveCatalog: filepath.Dir(r.CatalogPath), gone: map[string]bool{}, rows: rows,
		plan: &migrationPlan{ns: r.Namespace, base: r.Base, reverse: opts.Reverse, unset: opts.Unset}}
	nsDir := filepath.Join(r.Base, r.Namespace)
	nsExists, err := topLevelDir(fsys, r.Base, nsDir)
	if err != nil {
		return nil, err
	}

	if !opts.Reverse && !nsExists {
		p.nsMkdir = nsDir
	}
	if !opts.Reverse {
		if err := refuseForeignNamespaces(fsys, r); err != nil {
			return nil, err
		}
	}
	var subdirs []string
	if nsExists || !opts.Reverse {
		subdirs = migrationSubdirs(r, opts.Reverse)
	}
	for _, s := range subdirs {
		if err := p.planSubdir(s); err != nil {
			return nil, err
		}
	}
	if len(p.collisions) > 0 {
		sort.Strings(p.collisions)
		return nil, &CollisionError{Paths: p.collisions}
	}
	if err := p.count(); err != nil {
		return nil, err
	}
	if len(p.plan.steps) > 0 {
		p.add("", journal.Step{Kind: engine.KindBarrier, Note: "make every rename durable: one fsync per parent directory"})
	}
	for _, e := range p.emptied {
		p.add(e.subdir, journal.Step{Kind: engine.KindMoveRmdir, Path: e.path, Note: e.subdir + " (emptied)"})
	}
	if err := p.planQuarantine(); err != nil {
		return nil, err
	}
	if err := p.planTail(nsDir, opts); err != nil {
		return nil, err
	}
	return p.plan, nil
}

// migrateStepProgress reports the executor's steps as "moving", and the
// catalog steps (the restamp, whose commit is one long step) as
// "restamping catalog" before they run.
func migrateStepProgress(p Progress, steps []journal.Step) func(done, total int) {
	if p == nil {
		return nil
	}
	p.Emit("moving", 0, int64(len(steps)), "steps")
	return func(done, total int) {
		if done < len(steps) && steps[done].Kind == engine.KindCatalog {
			p.Emit("restamping catalog", 0, 0, "")
			return
		}
		p.Emit("moving", int64(done), int64(total), "steps")
	}
}

// migrationSubdirs is what a run looks at. Reverse: all 15 default
// subdirectories, since an older swamp carried secrets and bundles into the
// namespace too. Forward: only the namespaced tier (repo.Directories) —
// never secrets or bundles, never a subdirectory the exclude globs keep
// local.
func migrationSubdirs(r *repo.Repo, reverse bool) []string {
	if reverse {
		return repo.DefaultSubdirs
	}
	var out []string
	for _, s := range r.Directories {
		if !r.IsExcluded(s) {
			out = append(out, s)
		}
	}
	return out
}

// refuseForeignNamespaces keeps swamp's guard (§4.4 step 2): data of other
// namespaces under the base must not be absorbed into this one.
func refuseForeignNamespaces(fsys fsx.FS, r *repo.Repo) error {
	ms, err := repo.ListNamespaces(fsys, r.Base)
	if err != nil {
		return err
	}
	var others []string
	for _, m := range ms {
		if m.Namespace != r.Namespace {
			others = append(others, m.Namespace)
		}
	}
	if len(others) > 0 {
		return &ForeignNamespacesError{Namespaces: others}
	}
	return nil
}

// add appends a step. The first step of a forward run that moves
// something is preceded by the creation of {base}/{ns} when it is missing.
func (p *migrationPlanner) add(subdir string, s journal.Step) {
	if p.nsMkdir != "" && subdir != "" {
		mkdir := p.nsMkdir
		p.nsMkdir = ""
		p.add(subdir, journal.Step{Kind: engine.KindMoveMkdir, Path: mkdir, Note: "namespace directory"})
	}
	// A move into a directory this plan created waits until that
	// directory's own entry is durable: otherwise a power cut may keep the
	// move and lose the mkdir, and everything moved into it with it
	// (ALICE's omission of one un-fsynced operation; found by
	// TestMigrateALICECrashStates).
	switch s.Kind {
	case engine.KindMkdir, engine.KindMoveMkdir:
		p.newDirs = append(p.newDirs, s.Path)
	case engine.KindBarrier:
		p.newDirs = nil
	case engine.KindMove, engine.KindRename:
		for _, d := range p.newDirs {
			if to := filepath.Dir(s.To); to == d || strings.HasPrefix(to, d+string(filepath.Separator)) {
				p.newDirs = nil
				p.plan.steps = append(p.plan.steps, journal.Step{Kind: engine.KindBarrier, Note: "make the new directories durable before moving into them"})
				p.plan.stepSubdir = append(p.plan.stepSubdir, subdir)
				break
			}
		}
	}
	p.plan.steps = append(p.plan.steps, s)
	p.plan.stepSubdir = append(p.plan.stepSubdir, subdir)
}

func (p *migrationPlanner) sides(subdir string) (src, dst string) {
	ns := filepath.Join(p.r.Base, p.r.Namespace, subdir)
	solo := filepath.Join(p.r.Base, subdir)
	if p.plan.reverse {
		return ns, solo
	}
	return solo, ns
}

// planSubdir plans one subdirectory: a whole rename when the destination is
// free and the source holds no catalog, entry by entry around the catalog,
// or a merge when both sides hold the directory.
func (p *migrationPlanner) planSubdir(subdir string) error {
	p.subdir = subdir
	src, dst := p.sides(subdir)
	srcKind, err := positionKind(p.fsys, p.r.Base, src)
	if err != nil || srcKind != posDir {
		p.plan.sourceDataWalked = p.plan.sourceDataWalked || (err == nil && subdir == "data")
		return err // nothing to move (swamp skips a source that is not a directory)
	}
	if subdir == "data" {
		// Every entry below is either renamed (and its subtree counted),
		// merged (listed), or a catalog file: the walk sees it all.
		p.plan.sourceDataWalked = true
	}
	dstKind, err := positionKind(p.fsys, p.r.Base, dst)
	if err != nil {
		return err
	}
	if err := p.checkSameDevice(src, dst); err != nil {
		return err
	}
	ents, err := p.fsys.ReadDir(src)
	if err != nil {
		return err
	}
	var catalogFiles []string
	var movable []fs.DirEntry
	for _, e := range ents {
		if repo.IsCatalogFile(e.Name()) {
			catalogFiles = append(catalogFiles, e.Name())
		} else {
			movable = append(movable, e)
		}
	}
	if len(catalogFiles) > 0 && src != p.liveCatalog {
		p.warnCatalogCopies(src, catalogFiles)
		if len(movable) == 0 {
			return nil // only catalog copies: nothing to move
		}
	}
	// A destination that is a directory is merged into entry by entry, in
	// both directions (#3316 case C, issue #9.3): after ordinary use of a
	// namespaced repo swamp has written files at the un-namespaced path
	// (the .log of every method run lands in {base}/outputs), and a reverse
	// run that refused whenever the solo path held a data file could never
	// be run. Identical files are dropped from the source, files only at the
	// source are moved in, and only a real clash (same path, different
	// bytes, or a file facing a directory) refuses the whole run up front,
	// naming every such path (CollisionError) — nothing is overwritten.
	if dstKind == posDir {
		if catalogs, err := catalogNames(p.fsys, dst); err != nil {
			return err
		} else if len(catalogs) > 0 && dst != p.liveCatalog {
			p.warnCatalogCopies(dst, catalogs)
		}
	}

	move := len(p.plan.moves)
	p.plan.moves = append(p.plan.moves, DirectoryMove{Subdir: subdir, Source: src, Destination: dst})
	before := len(p.plan.steps)
	switch {
	case dstKind == posDir:
		if err := p.merge(move, src, dst, "", 0); err != nil {
			return err
		}
	case len(catalogFiles) == 0:
		// A destination that is a file is not merged into: the rename is
		// planned and fails at run time, leaving the intent open for a
		// re-run once the obstacle is gone.
		p.add(subdir, journal.Step{Kind: engine.KindMove, Path: src, To: dst, Note: subdir})
		p.counted = append(p.counted, countedTree{move, src})
		p.gone[subdir] = true
	case len(movable) > 0:
		p.add(subdir, journal.Step{Kind: engine.KindMoveMkdir, Path: dst, Note: subdir + " (the catalog stays in " + src + ")"})
		for _, e := range movable {
			from := filepath.Join(src, e.Name())
			p.add(subdir, journal.Step{Kind: engine.KindMove, Path: from, To: filepath.Join(dst, e.Name()), Note: subdir})
			p.counted = append(p.counted, countedTree{move, from})
		}
	}
	if len(p.plan.steps) == before {
		p.plan.moves = p.plan.moves[:move] // only catalog files: nothing to move
	}
	return nil
}

// merge plans src into dst, both directories: entries missing at dst are
// renamed whole, directories on both sides are merged recursively, files on
// both sides must be byte-identical (the source copy is dropped). The
// source directory is removed once empty — unless it keeps the catalog.
func (p *migrationPlanner) merge(move int, src, dst, rel string, depth int) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	ents, err := p.fsys.ReadDir(src)
	if err != nil {
		return err
	}
	keepsCatalog := false
	for _, e := range ents {
		name := e.Name()
		if depth == 0 && repo.IsCatalogFile(name) {
			keepsCatalog = true
			continue
		}
		from, to, relPath := filepath.Join(src, name), filepath.Join(dst, name), pathJoin(rel, name)
		if name == modelLockName {
			p.plan.lockFiles = append(p.plan.lockFiles, from)
		}
		toInfo, err := p.fsys.Lstat(to)
		if errors.Is(err, fs.ErrNotExist) {
			p.add(p.subdir, journal.Step{Kind: engine.KindMove, Path: from, To: to, Note: p.subdir})
			p.counted = append(p.counted, countedTree{move, from})
			continue
		}
		if err != nil {
			return err
		}
		fromInfo, err := p.fsys.Lstat(from)
		if err != nil {
			return err
		}
		switch {
		case fromInfo.IsDir() && toInfo.IsDir():
			if err := p.merge(move, from, to, relPath, depth+1); err != nil {
				return err
			}
		case fromInfo.Mode().IsRegular() && toInfo.Mode().IsRegular() && fromInfo.Size() == toInfo.Size():
			same, sum, err := sameContent(p.fsys, from, to)
			if err != nil {
				return err
			}
			if !same {
				p.collisions = append(p.collisions, p.subdir+"/"+relPath)
				continue
			}
			p.add(p.subdir, journal.Step{Kind: engine.KindDropDup, Path: from, To: to, Note: p.subdir,
				Files: []journal.FileExpect{{Name: name, Size: fromInfo.Size(), SHA256: sum}}})
			p.plan.moves[move].FileCount++
			p.plan.moves[move].TotalBytes += fromInfo.Size()
		default:
			p.collisions = append(p.collisions, p.subdir+"/"+relPath)
		}
	}
	if !keepsCatalog {
		// Removed only after the barrier: the renames out of src must be
		// durable before its removal is, or a power cut could keep the
		// rmdir (src's parent fsynced) and lose a rename into a
		// destination directory not fsynced yet — the entry would be in
		// neither place.
		p.emptied = append(p.emptied, emptiedDir{p.subdir, src})
		if depth == 0 {
			p.gone[p.subdir] = true
		}
	}
	return nil
}

// planTail adds the steps after the barrier: for unset --migrate the
// .swamp.yaml edit, the manifest removal and the now empty namespace
// directory; for every run that moves something, the catalog restamp.
func (p *migrationPlanner) planTail(nsDir string, opts MigrateOptions) error {
	moved := len(p.plan.steps) > 0
	var tail []journal.Step
	removesManifest := false
	if opts.Unset {
		yamlStep, err := configEditStep(p.fsys, p.r, "")
		if err != nil {
			return err
		}
		tail = append(tail, yamlStep)
		manifest := repo.ManifestPath(p.r.Base, p.r.Namespace)
		if old, ok, err := readIfExists(p.fsys, manifest); err != nil {
			return err
		} else if ok {
			tail = append(tail, engine.RemoveFileStep(manifest, old, "namespace manifest"))
			removesManifest = true
		}
	}
	if moved || opts.Unset {
		from, to := migrationStamps(p.r, opts)
		// One set-based step, "rows stamped from become to", when no row
		// carries the new stamp yet: its undo then moves back exactly the
		// rows it moved (CatalogChange.FromRows). Otherwise (rare) the step
		// names the items it restamps, as the catalog holds them now, so an
		// undo moves back exactly those and never rows that carried the new
		// stamp before the run.
		if n := p.rows.count(from); n > 0 {
			if p.rows.count(to) == 0 {
				tail = append(tail, engine.MoveStampStep(from, to, n))
				p.plan.restamps = true
			} else if keys := p.rows.keys(from); len(keys) > 0 {
				tail = append(tail, engine.CatalogStep(fmt.Sprintf("restamp %d items %q -> %q", len(keys), from, to),
					engine.CatalogChange{Op: "restamp", From: from, To: to, Keys: keys}))
				p.plan.restamps = true
			}
		}
	}
	if opts.Unset {
		empty, err := p.emptyAfterPlan(nsDir, removesManifest)
		if err != nil {
			return err
		}
		if empty {
			tail = append(tail, journal.Step{Kind: engine.KindMoveRmdir, Path: nsDir, Note: "namespace directory (emptied)"})
		}
	}
	for _, s := range tail {
		p.add("", s)
	}
	return nil
}

// emptyAfterPlan reports whether nsDir holds nothing once the plan has run.
func (p *migrationPlanner) emptyAfterPlan(nsDir string, removesManifest bool) (bool, error) {
	ents, err := p.fsys.ReadDir(nsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if (e.Name() == repo.ManifestName && removesManifest) || p.gone[e.Name()] {
			continue
		}
		return false, nil
	}
	return true, nil
}

func (p *migrationPlanner) warnCatalogCopies(dir string, names []string) {
	if !p.plan.reverse && dir == filepath.Join(p.r.Base, p.r.Namespace, "data") {
		// Forward into the namespace: the copies swamp's own migrate
		// carried there go to quarantine in this run (planQuarantine).
		for _, n := range names {
			p.copies = append(p.copies, filepath.Join(dir, n))
		}
		p.plan.warnings = append(p.plan.warnings, MigrateWarning{Subdir: p.subdir, Path: dir, Files: names,
			Message: fmt.Sprintf("%s holds catalog files (%s) that swamp's own migrate carried there with the data; nothing reads them "+
				"(the live catalog is %s). This run moves them, together, to %s (nothing is deleted)",
				dir, strings.Join(names, ", "), p.r.CatalogPath, p.quarantineDir())})
		return
	}
	p.plan.warnings = append(p.plan.warnings, MigrateWarning{Subdir: p.subdir, Path: dir, Files: names,
		Message: fmt.Sprintf("%s holds catalog files (%s) that an older swamp moved with the data. "+
			"They are not data and are left where they are; the live catalog is %s. "+
			"The doctor's repair moves them to quarantine",
			dir, strings.Join(names, ", "), p.r.CatalogPath), Remedy: RemedyRepair})
}

// quarantineDir is where a forward run puts the catalog copies it finds in
// {base}/{ns}/data, beside the doctor's quarantine: one stamped directory
// per run, chosen when the plan is made and journaled with it.
func (p *migrationPlanner) quarantineDir() string {
	if p.qdir == "" {
		top := filepath.Join(p.r.Base, store.QuarantineDirName)
		stamp := time.Now().UTC().Format("20060102T150405Z") + "-migrate"
		name := stamp
		for i := 2; ; i++ {
			if ok, err := fsx.Exists(p.fsys, filepath.Join(top, name)); err != nil || !ok {
				break
			}
			name = fmt.Sprintf("%s-%d", stamp, i)
		}
		p.qdir = filepath.Join(top, name, p.r.Namespace, "data")
	}
	return p.qdir
}

// planQuarantine moves the catalog copies found in {base}/{ns}/data into
// quarantine, as one unit (a catalog and its sidecars are never separated).
// Without it the state swamp's own migrate leaves stays a doctor finding
// after swampj has finished the migration (#3316, issue #9).
func (p *migrationPlanner) planQuarantine() error {
	if len(p.copies) == 0 {
		return nil
	}
	q := p.quarantineDir()
	dirs, err := engine.MissingDirs(p.fsys, q, nil)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		p.add("data", journal.Step{Kind: engine.KindMoveMkdir, Path: d, Note: "quarantine for swamp's catalog copies"})
	}
	for _, c := range p.copies {
		p.add("data", journal.Step{Kind: engine.KindMove, Path: c, To: filepath.Join(q, filepath.Base(c)), Note: "catalog copy to quarantine"})
	}
	p.add("", journal.Step{Kind: engine.KindBarrier, Note: "make the quarantine moves durable"})
	return nil
}

// checkSameDevice refuses before anything is journaled when a rename would
// cross file systems (it would fail with EXDEV half way through).
func (p *migrationPlanner) checkSameDevice(src, dst string) error {
	target := existingAncestor(p.fsys, dst)
	same, err := sameDevice(p.fsys, src, target)
	if err != nil {
		return err
	}
	if !same {
		return &CrossDeviceError{Source: src, Destination: dst}
	}
	return nil
}

func existingAncestor(fsys fsx.FS, path string) string {
	for {
		if _, err := fsys.Lstat(path); err == nil {
			return path
		}
		parent := filepath.Dir(path)
		if parent == path {
			return path
		}
		path = parent
	}
}

// count adds up the files and bytes of every subtree that changes sides.
// The subtrees are walked in parallel: it is the only walk a plan makes of
// data it does not merge, and on a large datastore it dominates the run.
func (p *migrationPlanner) count() error {
	paths := make([]string, len(p.counted))
	for i, c := range p.counted {
		paths[i] = c.path
	}
	walked := &report.Counter{Progress: p.progress, Phase: "planning", Unit: "files"}
	files, bytes, locks, err := countTrees(p.ctx, p.fsys, paths, walked)
	if err != nil {
		return err
	}
	p.plan.lockFiles = append(p.plan.lockFiles, locks...)
	for i, c := range p.counted {
		p.plan.moves[c.move].FileCount += files[i]
		p.plan.moves[c.move].TotalBytes += bytes[i]
	}
	return nil
}

// modelLockName is the file name of swamp's per-model locks (§8).
const modelLockName = ".lock"

// countTrees counts the non-directory entries below each root (a root that
// is itself a file counts as one) and their sizes, without following
// symlinks, and lists the files named like a per-model lock on the way.
// Directories are spread over a few goroutines: it is the only walk a plan
// makes of data it moves whole, and on a large datastore it dominates.
func countTrees(ctx context.Context, fsys fsx.FS, roots []string, walked *report.Counter) (files, bytes []int64, locks []string, err error) {
	files, bytes = make([]int64, len(roots)), make([]int64, len(roots))
	var firstErr atomic.Pointer[error]
	fail := func(e error) { firstErr.CompareAndSwap(nil, &e) }
	var locksMu sync.Mutex
	workers := make(chan struct{}, 4*runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	var walk func(i int, dir string)
	walk = func(i int, dir string) {
		if firstErr.Load() != nil || ctx.Err() != nil {
			return
		}
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			fail(err)
			return
		}
		var n, size int64
		for _, e := range ents {
			path := filepath.Join(dir, e.Name())
			if e.IsDir() {
				select {
				case workers <- struct{}{}:
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer func() { <-workers }()
						walk(i, path)
					}()
				default:
					walk(i, path)
				}
				continue
			}
			fi, err := fsys.Lstat(path)
			if err != nil {
				fail(err)
				return
			}
			n++
			size += fi.Size()
			if e.Name() == modelLockName {
				locksMu.Lock()
				locks = append(locks, path)
				locksMu.Unlock()
			}
		}
		atomic.AddInt64(&files[i], n)
		atomic.AddInt64(&bytes[i], size)
		walked.Add(n)
	}
	for i, root := range roots {
		fi, err := fsys.Lstat(root)
		if err != nil {
			return nil, nil, nil, err
		}
		if !fi.IsDir() {
			files[i], bytes[i] = 1, fi.Size()
			if filepath.Base(root) == modelLockName {
				locks = append(locks, root)
			}
			continue
		}
		walk(i, root)
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return nil, nil, nil, *e
	}
	return files, bytes, locks, ctx.Err()
}

// ---- disk observations used by the planner

type subdirPosition int

const (
	posAbsent subdirPosition = iota
	posDir
	posOther
)

// positionKind looks at a subdirectory position (source or destination). A
// symlink there is refused (topLevelDir).
func positionKind(fsys fsx.FS, base, path string) (subdirPosition, error) {
	fi, err := fsys.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return posAbsent, nil
	case err != nil:
		return posAbsent, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return posAbsent, symlinkError(fsys, base, path)
	case fi.IsDir():
		return posDir, nil
	}
	return posOther, nil
}

func catalogNames(fsys fsx.FS, dir string) ([]string, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if repo.IsCatalogFile(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// sameContent compares two regular files of equal size by SHA-256 and
// returns the digest (the drop-duplicate step re-checks it at run time).
func sameContent(fsys fsx.FS, a, b string) (bool, string, error) {
	sa, err := store.HashFile(fsys, a)
	if err != nil {
		return false, "", err
	}
	sb, err := store.HashFile(fsys, b)
	if err != nil {
		return false, "", err
	}
	return sa == sb, sa, nil
}

// stampRows is how the planner reads the catalog: rows per stamp, and the
// items of a stamp (for a keyed restamp). A catalog that cannot be read
// counts as empty: the catalog is derived state and never stops a plan.
type stampRows struct {
	count func(ns string) int64
	keys  func(ns string) []catalog.ItemKey
}

// migrationStamps is the stamp a migration moves rows from and the one it
// moves them to.
func migrationStamps(r *repo.Repo, opts MigrateOptions) (from, to string) {
	if opts.Reverse {
		return r.Namespace, ""
	}
	return "", r.Namespace
}

// previewStampRows reads the catalog, if it exists, opened read-only for
// each question (a preview changes nothing).
func previewStampRows(ctx context.Context, fsys fsx.FS, path string) stampRows {
	open := func() *catalog.Catalog {
		if ok, err := fsx.Exists(fsys, path); err != nil || !ok {
			return nil
		}
		c, err := catalog.Open(ctx, fsys, path, catalog.Options{Mode: catalog.ModeReport, NoIntegrityCheck: true})
		if err != nil {
			return nil
		}
		return c
	}
	return stampRows{
		count: func(ns string) int64 {
			c := open()
			if c == nil {
				return 0
			}
			defer c.Close()
			n, _ := c.CountStamped(ctx, ns)
			return n
		},
		keys: func(ns string) []catalog.ItemKey {
			c := open()
			if c == nil {
				return nil
			}
			defer c.Close()
			keys, _ := engine.ItemKeys(ctx, c, ns)
			return keys
		},
	}
}

// runStampRows reads through the run's own catalog handle, so a confirmed
// run opens the catalog once. A missing catalog is not created: without
// rows there is no restamp step to open it for.
func runStampRows(ctx context.Context, cat engine.CatalogOpener) stampRows {
	return stampRows{
		count: func(ns string) int64 {
			c, ok, err := cat.Existing(ctx)
			if err != nil || !ok {
				return 0
			}
			n, _ := c.CountStamped(ctx, ns)
			return n
		},
		keys: func(ns string) []catalog.ItemKey {
			c, ok, err := cat.Existing(ctx)
			if err != nil || !ok {
				return nil
			}
			keys, _ := engine.ItemKeys(ctx, c, ns)
			return keys
		},
	}
}

func pathJoin(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// predictDirFsyncs counts the directory fsyncs running steps will make,
// by the executor's rules (exec.go Dirty): renames, mkdirs, rmdirs and
// removals mark parents dirty; a barrier and the end of the run fsync each
// dirty directory that still exists once; a small-file write fsyncs its
// own directory.
func predictDirFsyncs(steps []journal.Step) int {
	n := 0
	var order []string
	dirty := map[string]bool{}
	removed := map[string]bool{}
	mark := func(dirs ...string) {
		for _, d := range dirs {
			if !dirty[d] {
				dirty[d] = true
				order = append(order, d)
			}
		}
	}
	flush := func() {
		for _, d := range order {
			if !removed[d] {
				n++
			}
		}
		order, dirty = nil, map[string]bool{}
	}
	for _, s := range steps {
		switch s.Kind {
		case engine.KindMkdir, engine.KindMoveMkdir:
			mark(filepath.Dir(s.Path))
			delete(removed, s.Path)
		case engine.KindRename, engine.KindMove:
			mark(filepath.Dir(s.Path), filepath.Dir(s.To))
			removed[s.Path] = true
			delete(removed, s.To)
		case engine.KindRmdir, engine.KindMoveRmdir:
			mark(filepath.Dir(s.Path))
			removed[s.Path] = true
		case engine.KindDropDup, engine.KindRemoveFile:
			mark(filepath.Dir(s.Path))
		case engine.KindWrite:
			d := filepath.Dir(s.Path)
			if dirty[d] {
				delete(dirty, d)
				for i, x := range order {
					if x == d {
						order = append(order[:i], order[i+1:]...)
						break
					}
				}
			}
			n++
		case engine.KindBarrier:
			flush()
		}
	}
	flush()
	return n
}

// ---- errors

// CollisionError: files exist on both sides with different content (or a
// file faces a directory). Nothing was touched.
type CollisionError struct{ Paths []string }

func (e *CollisionError) Error() string {
	return fmt.Sprintf("Cannot migrate: %d path(s) exist on both sides with different content and would be lost in a merge. "+
		"Nothing was changed. Remove or rename the conflicting files first:\n  %s", len(e.Paths), strings.Join(e.Paths, "\n  "))
}
func (e *CollisionError) Code() string { return "collision" }

// ForeignNamespacesError: other namespaces are registered under the base
// (swamp's guard, §4.4 step 2; G12).
type ForeignNamespacesError struct{ Namespaces []string }

func (e *ForeignNamespacesError) Error() string {
	return fmt.Sprintf("Cannot migrate: the datastore also holds other namespaces (%s). Their data must not be absorbed into "+
		"this namespace, and the un-namespaced paths may hold data of theirs. Nothing was changed. Move this repo's "+
		"un-namespaced data by hand, or remove the other namespaces' manifests if they are stale", strings.Join(e.Namespaces, ", "))
}
func (e *ForeignNamespacesError) Code() string { return "foreign_namespaces" }

// CrossDeviceError: source and destination are on different file systems,
// so renames would fail with EXDEV. Nothing was touched.
type CrossDeviceError struct{ Source, Destination string }

func (e *CrossDeviceError) Error() string {
	return fmt.Sprintf("Cannot migrate: %s and %s are on different file systems, and swampj only moves by rename. Nothing was changed. "+
		"Put the namespace directory on the same file system as the data", e.Source, e.Destination)
}
func (e *CrossDeviceError) Unwrap() error { return syscall.EXDEV }
func (e *CrossDeviceError) Code() string  { return "cross_device" }

// MigrateFailedError: a step failed part way. The intent stays open; the
// error names both ways out.
type MigrateFailedError struct {
	Namespace     string   `json:"namespace"`
	DatastorePath string   `json:"datastorePath"`
	Reverse       bool     `json:"reverse"`
	IntentID      uint64   `json:"intentId"`
	Succeeded     []string `json:"succeededDirectories"`
	Failed        string   `json:"failedDirectory"`
	Err           error    `json:"-"`
	// Rerun is the run that finishes the job: this same migration again.
	Rerun Remedy `json:"-"`
}

func (e *MigrateFailedError) Error() string {
	what := "Failed to finish the migration"
	if e.Failed != "" {
		what = fmt.Sprintf("Failed to migrate %q", e.Failed)
	}
	return fmt.Sprintf("%s: %v. Partially migrated: %d directory(s) moved before the failure. "+
		"The run is journaled as intent %d and stays open: fix the cause and run the same migration again to finish it, "+
		"or roll it back to return to the starting layout", what, e.Err, len(e.Succeeded), e.IntentID)
}
func (e *MigrateFailedError) Unwrap() error { return e.Err }
