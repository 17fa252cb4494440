// Package recover finishes or rolls back whatever a crashed swampj left
// half done. Other tools call it as a startup hook:
//
//	rep, err := recover.Run(ctx, repoDir, recover.Options{})
//
// It never prints and never exits. On the clean path — no journal file, or
// no open intent — it creates nothing and returns quickly.
package recover

import (
	"context"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/repo"
)

// Options for Run.
type Options struct {
	// Rollback undoes open intents instead of finishing them.
	Rollback bool
	// DryRun reports what each open intent's steps observe, changing nothing.
	DryRun bool
	// LockTimeout bounds the wait for another swampj process (0: 10s).
	LockTimeout time.Duration
	// SwampLockTimeout bounds the wait for swamp's per-model lock of an
	// interrupted write or repair, which is finished only under it
	// (0: SWAMP_LOCK_TIMEOUT_MS, else 60 s). A timeout is an error
	// matching lock.ErrTimeout; the intent stays open.
	SwampLockTimeout time.Duration
	// FS is the disk (nil: the real one). The crash suite passes a fault FS.
	FS fsx.FS
	// Catalog opens the catalog for catalog steps (nil: the repo's own).
	Catalog ops.CatalogOpener
	// Command is recorded as the lock holder.
	Command []string
	// Warn receives warnings (a damaged journal moved aside).
	Warn func(string)
}

// Report is what Run found and did.
type Report struct {
	Repo          string              `json:"repo"`
	Journal       string              `json:"journal"`
	JournalExists bool                `json:"journalExists"`
	DryRun        bool                `json:"dryRun"`
	Rollback      bool                `json:"rollback"`
	Intents       []ops.IntentOutcome `json:"intents"`
	Finished      int                 `json:"finished"`
	RolledBack    int                 `json:"rolledBack"`
}

// JournalPath is where a repo's journal lives: repo-local, outside every
// namespaced subdirectory, so no migration ever moves it.
func JournalPath(repoDir string) string { return repo.JournalPathOf(repoDir) }

// Run recovers the repo at repoDir (the directory holding .swamp.yaml).
func Run(ctx context.Context, repoDir string, opts Options) (*Report, error) {
	fsys := opts.FS
	if fsys == nil {
		fsys = fsx.Real()
	}
	rep := &Report{Repo: repoDir, Journal: JournalPath(repoDir), DryRun: opts.DryRun, Rollback: opts.Rollback, Intents: []ops.IntentOutcome{}}
	exists, err := journal.Exists(fsys, rep.Journal)
	if err != nil {
		return rep, err
	}
	rep.JournalExists = exists
	if !exists {
		// A creation that crashed before its rename leaves only a temp file.
		return rep, journal.CleanCreationLeftovers(fsys, rep.Journal)
	}
	j, err := journal.Open(fsys, rep.Journal, journal.Options{LockTimeout: opts.LockTimeout, Command: opts.Command, Warn: opts.Warn})
	if err != nil {
		return rep, err
	}
	env := &ops.Env{FS: fsys, Catalog: opts.Catalog, SwampLockTimeout: opts.SwampLockTimeout}
	if env.Catalog == nil {
		env.Catalog = ops.RepoCatalog(fsys, repoDir)
	}
	defer env.CloseCatalog()
	if opts.DryRun {
		rep.Intents, err = ops.PreviewOpen(ctx, env, j, opts.Rollback)
		if err != nil {
			j.Abandon()
			return rep, err
		}
		return rep, j.Close()
	}
	outs, err := ops.RecoverOpen(ctx, env, j, opts.Rollback)
	if outs != nil {
		rep.Intents = outs
	}
	for _, o := range outs {
		switch o.Status {
		case journal.StatusDone:
			rep.Finished++
		case journal.StatusRolledBack:
			rep.RolledBack++
		}
	}
	if err != nil {
		if fsx.IsCrash(err) {
			j.Abandon()
			return rep, err
		}
		_ = j.Close()
		return rep, err
	}
	return rep, j.Close()
}
