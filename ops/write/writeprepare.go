package write

// A version write's inputs and locks: each VersionWrite checked and hashed, its tags
// and owner, swamp's per-model locks taken in path order, and the checks made under them.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogrow"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
)

// prepareWrite checks one write and builds its metadata template.
func prepareWrite(fsys fsx.FS, r *repo.Repo, i int, w VersionWrite, o WriteOptions) (*pendingVersion, error) {
	bad := func(err error) (*pendingVersion, error) {
		return nil, &InvalidWriteError{Index: i, Address: w.Address.String(), Err: err}
	}
	// The address must be canonical: re-parsing its string form gives it back.
	a, err := repo.ParseAddress(w.Address.String())
	if err != nil {
		return bad(err)
	}
	if a != w.Address {
		return bad(fmt.Errorf("address is not in canonical form (normalised it reads %s)", a))
	}
	if err := meta.ValidateDataName(a.DataName); err != nil {
		return bad(err)
	}
	if w.Content == nil {
		return bad(errors.New("no content"))
	}
	itemDir, err := r.ItemDir(fsys, a)
	if err != nil {
		return bad(err)
	}

	ownerType, ownerRef := newItemOwner(w)
	m := &meta.Metadata{
		ID:                o.newID(),
		Name:              a.DataName,
		Version:           1, // placeholder until allocation
		ContentType:       orDefault(w.ContentType, DefaultContentType),
		Lifetime:          meta.NormalizeLifetime(orDefault(w.Lifetime, DefaultLifetime)),
		GarbageCollection: w.GarbageCollection,
		// Owner and the modelName/specName tags are provisional (a new
		// item's, to check the caller's values early): planWrite sets them
		// from what the item holds, under the lock (applyDefaults).
		Tags: writeTags(w, w.ModelName, orDefault(w.SpecName, a.DataName)),
		Owner: meta.Owner{
			OwnerType:     ownerType,
			OwnerRef:      ownerRef,
			WorkflowID:    w.Workflow.ID,
			WorkflowRunID: w.Workflow.RunID,
			WorkflowName:  w.Workflow.Name,
			JobName:       w.Workflow.Job,
			StepName:      w.Workflow.Step,
			Source:        w.Workflow.Source,
		},
		CreatedAt: isoTime(o.now()),
	}
	if m.GarbageCollection == (meta.GarbageCollection{}) {
		m.GarbageCollection.N = DefaultGC
	}
	var zero int64
	m.Size = &zero
	if err := meta.Validate(m); err != nil {
		return bad(err)
	}
	if _, err := catalogrow.FromMeta(r.Namespace, a.Type, a.ModelID, m); err != nil {
		return bad(err)
	}
	return &pendingVersion{index: i, w: w, itemDir: itemDir, md: m}, nil
}

// writeTags orders the tags as swamp's data writer does (swamp-format §2.4.2, §7.1):
// type, specName, modelName, the workflow provenance, then the caller's.
// modelName and specName are the resolved values (applyDefaults).
func writeTags(w VersionWrite, modelName, specName string) meta.Tags {
	t := meta.Tags{{Key: "type", Value: DefaultDataType}}
	add := func(k, v string) {
		if v != "" {
			t.Set(k, v)
		}
	}
	add("specName", specName)
	add("modelName", modelName)
	add("source", w.Workflow.Source)
	add("workflow", w.Workflow.Name)
	add("workflowId", w.Workflow.ID)
	add("workflowRunId", w.Workflow.RunID)
	add("job", w.Workflow.Job)
	add("step", w.Workflow.Step)
	for _, tag := range w.Tags {
		t.Set(tag.Key, tag.Value)
	}
	return t
}

// hashSource hashes a seekable source and seeks back, so the journal can
// hold the exact size and SHA-256 of raw.
func (p *pendingVersion) hashSource(ctx context.Context) error {
	rs, ok := p.w.Content.(io.ReadSeeker)
	if !ok {
		return nil
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil // a pipe: the stage verifies itself instead
	}
	h := sha256.New()
	n, err := fsx.Copy(h, cancelableReader{ctx, rs})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err // a *fsx.SourceError: hashing cannot fail to write
	}
	if _, err := rs.Seek(start, io.SeekStart); err != nil {
		return &fsx.SourceError{Err: err}
	}
	p.known, p.size, p.sum = true, n, hex.EncodeToString(h.Sum(nil))
	return nil
}

// lockWriteModels takes swamp's per-model lock of every model written,
// without interleaving with a structural change (a namespace migration):
// as swamp's acquireModelLocks does, it waits while a live holder has
// swamp's global datastore lock, takes the per-model locks, and checks the
// global lock again; if a structural command took it meanwhile, it lets
// its locks go and starts over. The whole wait is bounded by LockTimeout
// (a *lock.TimeoutError). Under the locks it then refuses a write the
// configuration no longer describes (the namespace changed while it
// waited) or one to data not migrated yet.
//
// Why writer and migration exclude each other (both sides). A
// migration creates the global lock G exclusively and only then scans for
// live per-model locks (planWhileNoWriter; recovery of a migration, in
// driveLocked, does the same), and waits while it finds one. A writer
// creates its per-model lock L and only then re-reads G. File creation on
// one file system is ordered, so one of the two comes first: if the
// writer's re-read of G finds nothing, G was created after that re-read,
// so after L, and the migration's scan, made after G, finds L and waits
// for it; if the scan does not find L, L was created after the scan, so
// after G, and the writer's re-read finds G and backs off before touching
// any data. The writer's first wait on G only saves a wasted acquisition.
// What backing off can leave — the empty parent directories L was created
// in, under a path the migration is about to fill — is not data, and the
// migration's steps absorb it (ops/internal/protocol/migratesteps.go).
func lockWriteModels(ctx context.Context, fsys fsx.FS, r *repo.Repo, ps []*pendingVersion, o WriteOptions) ([]*lock.Lock, error) {
	// Every global lock of the datastore (namespaced: both swamp versions',
	// swamp-format §13.2) is waited for and re-read; a per-model lock an ancestor swamp
	// process holds (either version's variables, swamp-format §13.5) is borrowed: a
	// swampj run as a swamp shell step of that model works under it.
	lender := lock.HolderPidFromEnv(nil)
	anc := lock.AncestryFromEnv(nil)
	deadline := time.Now().Add(o.SwampLockTimeout)
	left := func() time.Duration { return max(time.Until(deadline), time.Millisecond) }
	for {
		if err := lock.WaitGlobalFree(ctx, fsys, r.Base, r.Namespace, left(), lender); err != nil {
			return nil, err
		}
		// A structural change that ran while we waited may have changed
		// the namespace: look before creating lock directories there.
		if err := configUnchanged(fsys, r); err != nil {
			return nil, err
		}
		var held []*lock.Lock
		for _, lp := range modelLockPaths(r, ps) {
			l, err := lock.AcquireOrBorrow(ctx, fsys, lp, anc, lock.Options{Timeout: left()})
			if err != nil {
				return held, err
			}
			l.StartHeartbeat(ctx)
			held = append(held, l)
		}
		free, err := lock.GlobalFree(fsys, r.Base, r.Namespace, lender)
		if err != nil {
			return held, err
		}
		if free {
			return held, checkUnderModelLocks(fsys, r, ps)
		}
		lock.ReleaseAll(held, o.warn) // a structural command started: let it run first
		if time.Now().After(deadline) {
			return nil, lock.WaitGlobalFree(ctx, fsys, r.Base, r.Namespace, time.Millisecond, lender)
		}
	}
}

// checkUnderModelLocks re-reads the configuration once the locks are held:
// a migration that ran while the write waited may have changed the
// namespace the write was prepared for. Then it refuses a write to data
// that is not migrated yet (refuseUnmigrated).
func checkUnderModelLocks(fsys fsx.FS, r *repo.Repo, ps []*pendingVersion) error {
	if err := configUnchanged(fsys, r); err != nil {
		return err
	}
	return refuseUnmigrated(fsys, r, ps)
}

// configUnchanged reads .swamp.yaml again and returns a
// *NamespaceChangedError if the datastore base or namespace differ from r.
func configUnchanged(fsys fsx.FS, r *repo.Repo) error {
	now, err := repo.Load(fsys, r.Dir, nil)
	if err != nil {
		return fmt.Errorf("re-reading the configuration before writing: %w; nothing was written", err)
	}
	if now.Namespace != r.Namespace || now.Base != r.Base {
		return &NamespaceChangedError{Was: r.Namespace, Now: now.Namespace}
	}
	return nil
}

// refuseUnmigrated refuses, before anything is journaled, a write to an
// item whose model still has data at the un-namespaced {base}/data while a
// namespace is configured (set, not migrated yet): the write would start a
// fresh version 1 under the namespace beside the item's versions, which a
// migration then could not merge.
func refuseUnmigrated(fsys fsx.FS, r *repo.Repo, ps []*pendingVersion) error {
	if r.Namespace == "" {
		return nil
	}
	for _, p := range ps {
		a := p.w.Address
		modelDir := filepath.Join(r.Base, "data", filepath.FromSlash(a.Type), a.ModelID)
		ents, err := fsys.ReadDir(modelDir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !isModelLock(e.Name()) {
				return &UnmigratedWriteError{Index: p.index, Address: a.String(), Path: modelDir, Namespace: r.Namespace}
			}
		}
	}
	return nil
}

// isModelLock: swamp's per-model lock file is the one entry of a model
// directory that is not data (a writer of the namespaced model may leave
// it at the old root too).
func isModelLock(name string) bool { return name == ".lock" }

// UnmigratedData is refuseUnmigrated for a writer that may write any model
// (a command run under `swampj run`): with a namespace configured, it
// returns a file of data still sitting under the un-namespaced
// {base}/data, or "" when there is none. Any such model written under the
// namespace would get a fresh version 1 beside its old versions, which a
// migration could not merge. Catalog files at the top of {base}/data and
// per-model locks are not data. It stops at the first file found. The
// disk is c's (nil: the real one).
func UnmigratedData(r *repo.Repo, c host.Common) (string, error) {
	if r.Namespace == "" {
		return "", nil
	}
	return findData(c.Disk(), filepath.Join(r.Base, "data"), true)
}

func findData(fsys fsx.FS, dir string, top bool) (string, error) {
	ents, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		name := e.Name()
		switch {
		case top && repo.IsCatalogFile(name), isModelLock(name):
			continue
		case e.IsDir():
			found, err := findData(fsys, filepath.Join(dir, name), false)
			if found != "" || err != nil {
				return found, err
			}
		default:
			return filepath.Join(dir, name), nil
		}
	}
	return "", nil
}

// modelLockPaths are swamp's per-model lock files of a write, in path
// order (no deadlock between two swampj writers of overlapping models).
func modelLockPaths(r *repo.Repo, ps []*pendingVersion) []string {
	var paths []string
	seen := map[string]bool{}
	for _, p := range ps {
		lp := lock.ModelPath(r.Base, r.Namespace, p.w.Address.Type, p.w.Address.ModelID)
		if !seen[lp] {
			seen[lp] = true
			paths = append(paths, lp)
		}
	}
	sort.Strings(paths)
	return paths
}

// cancelableReader stops a long stream when the context ends.
type cancelableReader struct {
	ctx context.Context
	r   io.Reader
}

func (c cancelableReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// isoTime is JavaScript's toISOString (meta.NowISO for a given instant).
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func hexSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
