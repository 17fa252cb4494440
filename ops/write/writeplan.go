package write

// A version write's plan: allocate version numbers under the locks, then one intent
// (mkdirs, stage, publish, latest, catalog) and the live work that streams each stage.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/internal/session"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogrow"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// errNeedsLock: planning would have to change the disk (a missing item
// directory, a legacy symlink `latest`), which only the locked path does.
var errNeedsLock = errors.New("planning this write changes the disk; it needs the locks first")

// plannableWithoutLock reports whether every item exists with a plain
// `latest` (or none), so that planning it only reads, and holds nothing a
// dead writer staged (only the locked path moves that away first:
// sweepDeadStages).
func plannableWithoutLock(fsys fsx.FS, ps []*pendingVersion) bool {
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p.itemDir] {
			continue
		}
		seen[p.itemDir] = true
		if fi, err := fsys.Lstat(p.itemDir); err != nil || !fi.IsDir() {
			return false
		}
		if fi, err := fsys.Lstat(filepath.Join(p.itemDir, "latest")); err == nil && !fi.Mode().IsRegular() {
			return false
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false
		}
		if dead, err := session.DeadStagesIn(fsys, p.itemDir); err != nil || len(dead) > 0 {
			return false
		}
	}
	return true
}

// stillPlanned observes each item again and reports whether the plan made
// before the locks still holds: still inside the data root, the same
// `latest` bytes, the same highest version, and nothing at any number the
// plan allocated.
func stillPlanned(fsys fsx.FS, r *repo.Repo, items map[string]*writeItem) (bool, error) {
	for _, it := range items {
		// Containment, now that the lock is held: a symlink swapped in
		// meanwhile sends the write back to planning, which refuses it.
		if _, err := r.ItemDir(fsys, it.addr); err != nil {
			return false, nil
		}
		now, err := inspectWriteItem(fsys, it.addr, it.dir, true)
		if err != nil {
			if errors.Is(err, errNeedsLock) || errors.As(err, new(*InvalidWriteError)) {
				return false, nil
			}
			return false, err
		}
		if now.oldExists != it.oldExists || !bytes.Equal(now.oldData, it.oldData) || now.next != it.first || len(now.mkdirs) > 0 {
			return false, nil
		}
		// The metadata templates depend on what the current version (maybe
		// another item's, through a rename marker) and the model's
		// definition said: the same `latest` bytes do not prove those.
		if d, err := observeWriteDefaults(fsys, r, it.addr, it.dir); err != nil || d != it.defaults {
			return false, err
		}
		for _, n := range it.allocated {
			if taken, err := fsx.Exists(fsys, filepath.Join(it.dir, strconv.FormatInt(n, 10))); err != nil || taken {
				return false, err
			}
		}
	}
	return true, nil
}

// planWrite allocates version numbers and builds the intent.
// With readOnly (before the locks are held) it refuses, with errNeedsLock,
// whatever would change the disk.
func planWrite(ctx context.Context, fsys fsx.FS, r *repo.Repo, ps []*pendingVersion, o WriteOptions, readOnly bool) (*journal.Intent, engine.LiveApply, map[string]*writeItem, error) {
	items, order, err := allocateWrites(fsys, r, ps, o, readOnly)
	if err != nil {
		return nil, nil, nil, err
	}
	in := &journal.Intent{Kind: IntentKindVersionWrite, Repo: r.Dir, Command: o.Command, Locks: modelLockPaths(r, ps)}
	if len(ps) == 1 {
		in.Summary = fmt.Sprintf("write %s version %d", ps[0].w.Address, ps[0].md.Version)
	} else {
		in.Summary = fmt.Sprintf("write %d versions of %d items", len(ps), len(order))
	}
	// Missing directories, outermost first, once each.
	made := map[string]bool{}
	for _, it := range order {
		for _, d := range it.mkdirs {
			if !made[d] {
				made[d] = true
				in.Steps = append(in.Steps, journal.Step{Kind: protocol.KindMkdir, Path: d, Note: "create directory"})
			}
		}
	}
	if len(made) > 0 {
		in.Steps = append(in.Steps, journal.Step{Kind: engine.KindBarrier, Note: "make the new directories durable"})
	}
	live, rows, err := appendStageSteps(in, r, ps)
	if err != nil {
		return nil, nil, nil, err
	}
	appendPublishSteps(in, ps, order, o.token)
	cs := protocol.CatalogStep(fmt.Sprintf("upsert %d version(s), latest moves to the new ones", len(rows)),
		protocol.CatalogChange{Op: "upsert-versions", Rows: rows})
	cs.Kind, cs.Path, cs.To = protocol.KindCatalogPublish, r.CatalogPath, r.DataRoot
	in.Steps = append(in.Steps, cs)
	return in, live, items, nil
}

// allocateWrites inspects each item written (once, under the locks unless
// readOnly), reads what its new versions inherit, and gives each pending
// version its number and staging path.
func allocateWrites(fsys fsx.FS, r *repo.Repo, ps []*pendingVersion, o WriteOptions, readOnly bool) (map[string]*writeItem, []*writeItem, error) {
	items := map[string]*writeItem{}
	var order []*writeItem
	for _, p := range ps {
		it := items[p.itemDir]
		if it == nil {
			// Re-check containment now that the lock is held (before it,
			// stillPlanned does this once the lock is held).
			if !readOnly {
				if _, err := r.ItemDir(fsys, p.w.Address); err != nil {
					return nil, nil, &InvalidWriteError{Index: p.index, Address: p.w.Address.String(), Err: err}
				}
			}
			var err error
			if it, err = inspectWriteItem(fsys, p.w.Address, p.itemDir, readOnly); err != nil {
				var refused *InvalidWriteError
				if errors.As(err, &refused) {
					refused.Index, refused.Address = p.index, p.w.Address.String()
				}
				return nil, nil, err
			}
			// What the version inherits (owner, modelName, specName), read
			// from the item's current version under the lock.
			if it.defaults, err = observeWriteDefaults(fsys, r, p.w.Address, p.itemDir); err != nil {
				return nil, nil, err
			}
			items[p.itemDir] = it
			order = append(order, it)
		}
		if err := p.applyDefaults(it.defaults); err != nil {
			if readOnly {
				// Refuse only on what is seen under the lock.
				return nil, nil, errNeedsLock
			}
			return nil, nil, &InvalidWriteError{Index: p.index, Address: p.w.Address.String(), Err: err}
		}
		n, err := it.allocate(fsys)
		if err != nil {
			return nil, nil, err
		}
		p.md.Version = n
		p.stagePath = filepath.Join(p.itemDir, session.StageName(n, o.token))
	}
	return items, order, nil
}

// appendStageSteps adds each version's stage step (with the files it must
// hold, where their bytes are known) and returns the live work that
// streams them, and the catalog rows of the versions.
func appendStageSteps(in *journal.Intent, r *repo.Repo, ps []*pendingVersion) (engine.LiveApply, []catalog.Row, error) {
	live := engine.LiveApply{}
	var rows []catalog.Row
	for _, p := range ps {
		to := filepath.Join(p.itemDir, strconv.FormatInt(p.md.Version, 10))
		step := journal.Step{Kind: protocol.KindStage, Path: p.stagePath, To: to,
			Note: fmt.Sprintf("stage %s version %d", p.w.Address, p.md.Version)}
		if p.known {
			p.md.Size, p.md.Checksum = &p.size, p.sum
			data, err := meta.Encode(p.md)
			if err != nil {
				return nil, nil, &InvalidWriteError{Index: p.index, Address: p.w.Address.String(), Err: err}
			}
			p.mdData = data
			step.Files = []journal.FileExpect{
				{Name: store.RawFileName, Size: p.size, SHA256: p.sum},
				{Name: store.MetadataFileName, Size: int64(len(data)), SHA256: hexSHA256(data)},
			}
		} else {
			step.Files = []journal.FileExpect{{Name: store.RawFileName, Size: -1}, {Name: store.MetadataFileName, Size: -1, ID: p.md.ID}}
		}
		live[len(in.Steps)] = p.liveStage
		in.Steps = append(in.Steps, step)

		row, err := catalogrow.FromMeta(r.Namespace, p.w.Address.Type, p.w.Address.ModelID, p.md)
		if err != nil {
			return nil, nil, &InvalidWriteError{Index: p.index, Address: p.w.Address.String(), Err: err}
		}
		if !p.known {
			row.Size = -1 // completed from the published metadata (protocol.KindCatalogPublish)
		}
		rows = append(rows, row)
	}
	return live, rows, nil
}

// appendPublishSteps adds the publish renames and the `latest` writes.
// They carry the files of the version they publish or name: only a
// version holding exactly those is this intent's doing. If swamp wrote a
// version of the same number meanwhile (after a crash freed its lock),
// observing finds it is not ours, and a rollback leaves it, and a `latest`
// naming it, alone.
func appendPublishSteps(in *journal.Intent, ps []*pendingVersion, order []*writeItem, token string) {
	published := map[string][]journal.FileExpect{}
	for _, st := range in.Steps {
		if st.Kind == protocol.KindStage {
			published[st.To] = st.Files
		}
	}
	for _, p := range ps {
		to := filepath.Join(p.itemDir, strconv.FormatInt(p.md.Version, 10))
		in.Steps = append(in.Steps, journal.Step{Kind: protocol.KindRename, Path: p.stagePath, To: to,
			Files: published[to], Note: "publish the version"})
	}
	for _, it := range order {
		to := filepath.Join(it.dir, strconv.FormatInt(it.last, 10))
		// The temp name carries the owner (it may be written before the
		// intent is durable: engine.Recording).
		in.Steps = append(in.Steps, journal.Step{Kind: protocol.KindWrite, Path: filepath.Join(it.dir, "latest"),
			Temp: filepath.Join(it.dir, session.LatestTempName(token)),
			Data: []byte(strconv.FormatInt(it.last, 10)), OldData: it.oldData, OldExists: it.oldExists,
			To: to, Files: published[to],
			Note: fmt.Sprintf("point latest of %s at version %d", it.addr, it.last)})
	}
}

// inspectWriteItem reads what the item holds now: `latest`, the version numbers
// in use, the directories that do not exist yet. A state swampj will not
// write into is an *InvalidWriteError; I/O errors are returned as they are.
//
// With readOnly it changes nothing: a missing item directory or a legacy
// symlink `latest` is errNeedsLock instead.
func inspectWriteItem(fsys fsx.FS, a repo.Address, dir string, readOnly bool) (*writeItem, error) {
	refuse := func(err error) (*writeItem, error) { return nil, &InvalidWriteError{Err: err} }
	it := &writeItem{addr: a, dir: dir}
	missing, err := protocol.MissingDirs(fsys, dir, nil)
	var notDir *protocol.NotDirError
	if errors.As(err, &notDir) {
		return refuse(err)
	}
	if err != nil {
		return nil, err
	}
	it.mkdirs = missing
	if len(missing) > 0 && readOnly {
		return nil, errNeedsLock
	}
	if len(missing) > 0 {
		it.next, it.first = 1, 1
		return it, nil
	}
	latest := filepath.Join(dir, "latest")
	if fi, err := fsys.Lstat(latest); err == nil {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if readOnly {
				return nil, errNeedsLock
			}
			if err := convertLegacyLatest(fsys, dir); err != nil {
				var refused *InvalidWriteError
				if errors.As(err, &refused) {
					return nil, err
				}
				return nil, fmt.Errorf("converting the legacy symlink %s: %w", latest, err)
			}
		case !fi.Mode().IsRegular():
			return refuse(fmt.Errorf("%s is not a regular file; move it away by hand first", latest))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	data, err := fsys.ReadFile(latest)
	switch {
	case err == nil:
		it.oldData, it.oldExists = data, true
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if p, err := store.ReadLatest(fsys, dir); err == nil && p.Version > 0 {
		it.prev = p.Version
	}
	if it.next, err = store.NextVersion(fsys, dir); err != nil {
		return nil, err
	}
	it.first = it.next
	return it, nil
}

// allocate returns the next free version number of the item.
func (it *writeItem) allocate(fsys fsx.FS) (int64, error) {
	for {
		n := it.next
		it.next++
		// Any entry of that name (a file "7" is not a version, but the
		// publish rename could not use the name) is skipped.
		taken := false
		if len(it.mkdirs) == 0 {
			var err error
			if taken, err = fsx.Exists(fsys, filepath.Join(it.dir, strconv.FormatInt(n, 10))); err != nil {
				return 0, err
			}
		}
		if !taken {
			it.last = n
			it.allocated = append(it.allocated, n)
			return n, nil
		}
	}
}

// convertLegacyLatest replaces a legacy symlink `latest -> N` with the file
// swamp writes today, holding the same number (what `swamp repo upgrade`
// does, swamp-format §2.5). Readers see the same version before and after; the replace
// is atomic and durable. Done under the model lock before the intent, so
// the intent's undo data is plain bytes.
func convertLegacyLatest(fsys fsx.FS, dir string) error {
	p, err := store.ReadLatest(fsys, dir)
	if err != nil {
		return err
	}
	if p.Rule != store.PointerSymlink || p.Version <= 0 {
		return &InvalidWriteError{Err: fmt.Errorf("%s is a symlink to %q, which names no version; fix or remove it by hand first",
			filepath.Join(dir, "latest"), p.LinkTarget)}
	}
	return fsx.WriteFileAtomic(fsys, filepath.Join(dir, "latest"), []byte(strconv.FormatInt(p.Version, 10)), fsx.FileMode)
}

// liveStage is the stage step's apply in the running command: the payload
// exists only here. It creates the staging directory, streams raw (hashing
// on the way, 256 KiB at a time) and writes metadata.yaml once raw is
// complete and checked. The fsyncs of both files and of the staging
// directory are left to the executor (a staging step), which issues them
// together — with those of the other staged versions and of the `latest`
// temp files — before the publish rename.
func (p *pendingVersion) liveStage(ctx context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if err := env.FS.Mkdir(s.Path, fsx.DirMode); err != nil {
		return err
	}
	// The staging entry in the item directory becomes durable (as N) with
	// the item directory fsync of the `latest` replace.
	d.Add(filepath.Dir(s.Path))

	h := sha256.New()
	var src io.Reader = cancelableReader{ctx, p.w.Content}
	if !p.known {
		// A pipe or FIFO may block on a silent writer: Ctrl-C (or a lost
		// lock) must end the wait and roll the write back.
		src = fsx.InterruptibleReader(ctx, p.w.Content)
	}
	if p.known {
		src = io.LimitReader(src, p.size+1) // a file that grew is caught, not streamed forever
	}
	raw, n, err := fsx.WriteNewUnsynced(env.FS, filepath.Join(s.Path, store.RawFileName), src, fsx.FileMode, h)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	if err := d.DeferFile(raw); err != nil {
		return err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	mdData := p.mdData
	if p.known {
		if n != p.size || sum != p.sum {
			return &InputChangedError{Address: p.w.Address.String(), WantSize: p.size, GotSize: n, WantSHA: p.sum, GotSHA: sum}
		}
	} else {
		p.md.Size, p.md.Checksum = &n, sum
		if mdData, err = meta.Encode(p.md); err != nil {
			return err
		}
	}
	md, _, err := fsx.WriteNewUnsynced(env.FS, filepath.Join(s.Path, store.MetadataFileName), bytes.NewReader(mdData), fsx.FileMode, nil)
	if err != nil {
		return err
	}
	if err := d.DeferFile(md); err != nil {
		return err
	}
	d.DeferDir(s.Path)
	return nil
}
