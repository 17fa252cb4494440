package migrate

// The session-bound mutation the namespace commands and migration run in
// (nsMutation over session.Session), and the checks both make first.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/swampyaml"
	"github.com/swampj/swampj/ops/wrapped"
)

// refuseSeveralNamespaces is swamp's guard for unset: a datastore that holds
// more than one registered namespace must not fall back to the solo layout.
func refuseSeveralNamespaces(fsys fsx.FS, r *repo.Repo) error {
	ms, err := repo.ListNamespaces(fsys, r.Base)
	if err != nil {
		return err
	}
	if len(ms) > 1 {
		names := make([]string, len(ms))
		for i, m := range ms {
			names[i] = m.Namespace
		}
		return &MultipleNamespacesError{Namespaces: names}
	}
	return nil
}

// configEditStep is the journaled rewrite of .swamp.yaml that sets ns (or
// removes the namespace key when ns is ""), keeping the old bytes for undo.
func configEditStep(fsys fsx.FS, r *repo.Repo, ns string) (journal.Step, error) {
	src, err := fsys.ReadFile(r.ConfigPath)
	if err != nil {
		return journal.Step{}, fmt.Errorf("reading %s: %w", r.ConfigPath, err)
	}
	edited, err := swampyaml.EditNamespace(src, r.Dir, ns)
	if err != nil {
		if errors.Is(err, swampyaml.ErrNoNamespace) {
			return journal.Step{}, &NoNamespaceError{Msg: "No namespace is currently configured. Nothing to unset."}
		}
		return journal.Step{}, &repo.ConfigError{Path: r.ConfigPath, Msg: "cannot be rewritten", Err: err}
	}
	note := "set datastore.namespace"
	if ns == "" {
		note = "remove datastore.namespace"
	}
	return journal.Step{Kind: protocol.KindWrite, Path: r.ConfigPath, Data: edited, OldData: src, OldExists: true, Note: note}, nil
}

// checkNamespaceCommandAllowed refuses what no namespace command can work
// on: a SWAMP_DATASTORE override (it hides the namespace, swamp-format §9.14) and a
// datastore base that does not exist.
func checkNamespaceCommandAllowed(fsys fsx.FS, r *repo.Repo) error {
	if r.EnvOverride {
		return &EnvOverrideError{}
	}
	fi, err := fsys.Stat(r.Base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &BaseMissingError{Base: r.Base}
	case err != nil:
		return fmt.Errorf("datastore base %s: %w", r.Base, err)
	case !fi.IsDir():
		return &BaseMissingError{Base: r.Base, NotDir: true}
	}
	return nil
}

// nsMutation is one run of a mutating namespace command: swampj's journal
// held from start to end, and every intent a crash or failure left open
// finished first, so that the plan made afterwards starts from a settled
// disk. repo is the configuration as it reads after that.
type nsMutation struct {
	fsys      fsx.FS
	sess      *session.Session
	env       *engine.Env
	repo      *repo.Repo
	recovered []report.IntentOutcome
}

func startMutation(ctx context.Context, fsys fsx.FS, r *repo.Repo, c host.Common,
	cat protocol.CatalogOpener, getenv func(string) string) (*nsMutation, error) {
	// The format marker before the journal is opened (swamp-format §13.1).
	if err := repo.RefuseUnknownFormat(fsys, r.Base, true, nil); err != nil {
		return nil, err
	}
	// (journal.Open removes temp files of a creation that crashed before
	// its rename: they never held an intent.)
	sess, err := session.Open(c, r.JournalPath)
	if err != nil {
		return nil, err
	}
	if cat == nil {
		cat = protocol.RepoCatalog(fsys, r.Dir)
	}
	m := &nsMutation{fsys: fsys, sess: sess, env: &engine.Env{FS: fsys, Catalog: cat, Log: c.Logger}, repo: r}
	if err := m.finishOpen(ctx, getenv); err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

// finishOpen drives open intents forward and then reads the configuration
// again, under the journal lock: an interrupted unset --migrate rewrites
// .swamp.yaml, and so does a SetNamespace or UnsetNamespace (of this process
// or of swamp) since the caller loaded its *repo.Repo. The namespace
// operations plan from the configuration on disk, never from a stale Repo.
//
// First it refuses while a wrapped command (`swampj run`) is alive: that
// command keeps the datastore path it started with (wrapped.LiveRunError).
// Holding the journal alone, no new wrapped run can be recorded until the
// change is done.
func (m *nsMutation) finishOpen(ctx context.Context, getenv func(string) string) error {
	live, err := wrapped.LiveRuns(m.fsys, m.sess.Journal(), m.repo.JournalPath)
	if err != nil {
		return err
	}
	if len(live) > 0 {
		return &wrapped.LiveRunError{Runs: live}
	}
	open, err := m.sess.Journal().OpenIntents()
	if err != nil {
		return err
	}
	if len(open) > 0 {
		outs, err := m.sess.FinishOpen(ctx, m.env)
		m.recovered = outs
		if err != nil {
			if m.sess.Crashed() {
				return err
			}
			return &UnfinishedIntentError{Outcomes: outs, Err: err}
		}
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	r, err := repo.Load(m.fsys, m.repo.Dir, getenv)
	if err != nil {
		return err
	}
	m.repo = r
	return nil
}

func (m *nsMutation) execute(ctx context.Context, in *journal.Intent, progress func(int, int), live engine.LiveApply) (*engine.Result, error) {
	m.env.Progress = progress
	return m.sess.Execute(ctx, m.env, in, live)
}

// note records a crash of the run's work (the session then abandons).
func (m *nsMutation) note(err error) error { return m.sess.Note(err) }

func (m *nsMutation) crashed() bool { return m.sess.Crashed() }

func (m *nsMutation) finish() error {
	m.env.CloseCatalog()
	return m.sess.Close()
}

func (m *nsMutation) finishCompleted(done *MigrateCompleted) error {
	path := ""
	if j := m.sess.Journal(); j != nil {
		path = j.Path()
	}
	err := m.finish()
	if err == nil || m.crashed() {
		return err
	}
	done.Warnings = append(done.Warnings, MigrateWarning{Path: path, Message: fmt.Sprintf(
		"the migration is complete on disk, but recording that in the journal failed (%v): its intent stays open "+
			"until recovery (or the next swampj command) finds every step done and closes it", err), Remedy: report.RemedyRecover})
	return nil
}

func (m *nsMutation) close() {
	m.env.CloseCatalog()
	_ = m.sess.Close()
}

// topLevelDir reports whether path exists as a directory. A symlink there
// is refused: a namespace or subdirectory position must be a real directory
// inside the base, or swampj would move a link while the data stays put.
func topLevelDir(fsys fsx.FS, base, path string) (bool, error) {
	pos, err := positionKind(fsys, base, path)
	if err != nil {
		return false, err
	}
	if pos == posOther {
		return false, &NotADirectoryError{Path: path}
	}
	return pos == posDir, nil
}

func symlinkError(fsys fsx.FS, base, path string) error {
	target, err := fsys.EvalSymlinks(path)
	var oe *fsx.OutsideError
	if errors.As(err, &oe) {
		// The trust boundary would not resolve it: it leaves the repo.
		t, _ := fsys.Readlink(path)
		return &SymlinkedPathError{Path: path, Target: t, Outside: true}
	}
	if err != nil {
		return &SymlinkedPathError{Path: path, Dangling: true}
	}
	resolvedBase, err := fsys.EvalSymlinks(base)
	if err != nil {
		resolvedBase = base
	}
	return &SymlinkedPathError{Path: path, Target: target, Outside: !pathWithin(resolvedBase, target)}
}

// pathWithin reports whether p is root or below it (both cleaned, absolute).
func pathWithin(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func readIfExists(fsys fsx.FS, path string) ([]byte, bool, error) {
	b, err := fsys.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// UnfinishedIntentError: an open intent found at the start of a mutating
// command could not be finished, so the command did not plan anything.
type UnfinishedIntentError struct {
	Outcomes []report.IntentOutcome
	Err      error
}

func (e *UnfinishedIntentError) Error() string {
	which := "an interrupted operation"
	if n := len(e.Outcomes); n > 0 {
		o := e.Outcomes[n-1]
		which = fmt.Sprintf("interrupted operation %d (%s)", o.ID, o.Summary)
	}
	return fmt.Sprintf("%s must be finished before anything else, and it could not be: %v. "+
		"Fix the cause and run the operation again (it finishes the interrupted one first), or undo that one with a rollback recovery", which, e.Err)
}

func (e *UnfinishedIntentError) Unwrap() error { return e.Err }
