package protocol

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/store"
)

// The file-system primitives every protocol plans with: mkdir, rmdir,
// rename, write, drop-duplicate and stage.
const (
	KindMkdir   = "mkdir"          // create directory Path (its parent exists)
	KindRmdir   = "rmdir"          // remove empty directory Path
	KindRename  = "rename"         // rename Path to To, never replacing To
	KindWrite   = "write"          // replace file Path with Data (OldData/OldExists before)
	KindDropDup = "drop-duplicate" // remove Path, a byte-identical twin of To
	KindStage   = "stage"          // staging dir Path holds Files; published as To
	KindCatalog = "catalog"        // a catalog change (catalogstep.go)
)

// describeMove renders a rename (or a migration's move) for humans.
func describeMove(s *journal.Step) string {
	return fmt.Sprintf("%s %s -> %s", s.Kind, s.Path, s.To)
}

func describeStage(s *journal.Step) string {
	return fmt.Sprintf("stage %s (published as %s)", s.Path, s.To)
}

func describeDropDup(s *journal.Step) string {
	return fmt.Sprintf("drop %s (identical to %s)", s.Path, s.To)
}

func describeCatalog(s *journal.Step) string { return "catalog: " + s.Note }

// observeRmdir is a directory removal: observeMkdir with done and not
// done swapped (a removed directory is the mkdir's before-state).
func observeRmdir(ctx context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	o, detail, err := observeMkdir(ctx, env, s)
	switch o {
	case engine.Done:
		return engine.NotDone, detail, err
	case engine.NotDone:
		return engine.Done, detail, err
	}
	return o, detail, err
}

// ---- mkdir / rmdir

func observeMkdir(_ context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	fi, err := env.FS.Lstat(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return engine.NotDone, s.Path + " does not exist", nil
	case err != nil:
		return engine.Conflict, "", err
	case fi.IsDir():
		return engine.Done, s.Path + " is a directory", nil
	default:
		return engine.Conflict, s.Path + " exists and is not a directory", nil
	}
}

func applyMkdir(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if err := env.FS.Mkdir(s.Path, fsx.DirMode); err != nil {
		return err
	}
	d.Add(filepath.Dir(s.Path))
	return nil
}

// undoMkdir removes the directory only if it is empty: anything inside it
// was not put there by this intent's later steps (those are undone first),
// so it is somebody's data.
func undoMkdir(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	ents, err := env.FS.ReadDir(s.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("directory %s is not empty (holds %s); leaving it", s.Path, ents[0].Name())
	}
	if err := env.FS.Remove(s.Path); err != nil {
		return err
	}
	d.Add(filepath.Dir(s.Path))
	return nil
}

// MissingDirs lists dir and those of its ancestors that do not exist yet,
// outermost first: the KindMkdir steps a plan needs before it can put
// something in dir. Directories already in planned (an earlier step of the
// same plan creates them) are not listed again; the ones listed are added
// to planned (planned may be nil).
func MissingDirs(fsys fsx.FS, dir string, planned map[string]bool) ([]string, error) {
	fsys = fsx.OrReal(fsys)
	var out []string
	for d := filepath.Clean(dir); !planned[d]; {
		fi, err := fsys.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return nil, &NotDirError{Path: d}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		out = append(out, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
		out[a], out[b] = out[b], out[a]
	}
	if planned != nil {
		for _, d := range out {
			planned[d] = true
		}
	}
	return out, nil
}

// NotDirError: a plan needs a directory where a file (or something else)
// stands.
type NotDirError struct{ Path string }

func (e *NotDirError) Error() string {
	return e.Path + " exists and is not a directory; move it away by hand first"
}

// ---- rename

func observeRename(_ context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	from, err := fsx.Exists(env.FS, s.Path)
	if err != nil {
		return engine.Conflict, "", err
	}
	to, err := fsx.Exists(env.FS, s.To)
	if err != nil {
		return engine.Conflict, "", err
	}
	if to && len(s.Files) > 0 {
		// A rename that publishes a version: the target is ours only if
		// it holds the version's files (see planWrite).
		ours, err := dirHolds(env.FS, s.To, s.Files)
		if err != nil {
			return engine.Conflict, "", err
		}
		if !ours {
			if from {
				return engine.Conflict, fmt.Sprintf("both %s and %s exist", s.Path, s.To), nil
			}
			return engine.Missing, fmt.Sprintf("%s is missing and %s holds another version", s.Path, s.To), nil
		}
	}
	switch {
	case from && !to:
		return engine.NotDone, "", nil
	case !from && to:
		return engine.Done, "", nil
	case from && to:
		return engine.Conflict, fmt.Sprintf("both %s and %s exist", s.Path, s.To), nil
	default:
		return engine.Missing, fmt.Sprintf("neither %s nor %s exists", s.Path, s.To), nil
	}
}

func applyRename(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if err := env.FS.RenameNoReplace(s.Path, s.To); err != nil {
		return err
	}
	d.Add(filepath.Dir(s.Path), filepath.Dir(s.To))
	return nil
}

func undoRename(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if err := env.FS.RenameNoReplace(s.To, s.Path); err != nil {
		return err
	}
	d.Add(filepath.Dir(s.Path), filepath.Dir(s.To))
	return nil
}

// ---- write (small files: latest pointers, .swamp.yaml, manifests)

func observeWrite(_ context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	cur, err := env.FS.ReadFile(s.Path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return engine.Conflict, "", err
	}
	tempLeft := false
	if s.Temp != "" {
		if ok, _ := fsx.Exists(env.FS, s.Temp); ok {
			tempLeft = true
		}
	}
	if exists && bytes.Equal(cur, s.Data) && s.To != "" && len(s.Files) > 0 && !(s.OldExists && bytes.Equal(cur, s.OldData)) {
		// A pointer: it is this step's doing only if what it names is
		// what the intent published (see planWrite).
		ours, err := dirHolds(env.FS, s.To, s.Files)
		if err != nil {
			return engine.Conflict, "", err
		}
		// Only a version that exists can be somebody else's. A pointer
		// naming nothing (the publish rename lost both names, ALICE's
		// non-atomic rename) is this step's, and undoing it is what
		// points latest back at a readable version.
		if there, err := fsx.Exists(env.FS, s.To); err != nil {
			return engine.Conflict, "", err
		} else if !ours && there {
			return engine.Missing, fmt.Sprintf("%s names %s, which holds another version", s.Path, s.To), nil
		}
	}
	switch {
	case exists && bytes.Equal(cur, s.Data) && tempLeft:
		// Done, but a crash during an earlier undo left its temp file:
		// applying again rewrites the same bytes and removes it.
		return engine.Partial, "temp file " + s.Temp + " left behind", nil
	case exists && bytes.Equal(cur, s.Data):
		return engine.Done, "", nil
	case !exists && !s.OldExists, exists && s.OldExists && bytes.Equal(cur, s.OldData):
		if tempLeft {
			// Written ahead by this run (the executor's prepareTemps),
			// or left by an earlier one: applying writes it again
			// either way.
			return engine.WrittenAhead, "temp file " + s.Temp + " holds the new content, ready to be renamed in", nil
		}
		return engine.NotDone, "", nil
	case !exists && !tempLeft:
		// The replace's rename lost both names (ALICE's non-atomic rename:
		// .swamp.yaml, a latest pointer). Nothing is there to overwrite and
		// the journal holds both contents, so either direction puts back
		// exactly the bytes it wants: forward the new, backward the old.
		return engine.Partial, fmt.Sprintf("%s is missing; the journal holds its old and its new content", s.Path), nil
	case !exists:
		return engine.Conflict, fmt.Sprintf("%s is missing but should hold the old or the new content", s.Path), nil
	default:
		if later, ok, err := supersededBy(env.FS, s, cur); err != nil {
			return engine.Conflict, "", err
		} else if ok {
			return engine.Superseded, fmt.Sprintf("%s names version %s, a later write on top of this intent's version %s", s.Path, later, s.Data), nil
		}
		return engine.Conflict, fmt.Sprintf("%s holds %d bytes that are neither the old nor the new content", s.Path, len(cur)), nil
	}
}

// supersededBy reports whether cur, what a versioned write's `latest`
// pointer s holds now, names a newer version than s wrote, that version
// exists, and the version s published is on disk as the intent wrote it.
// Then a later writer (swamp, which numbers a new version after the
// highest directory it sees) built on this intent's version: the step's
// work is done and then some. This is what recovery meets when a done
// mark was lost (the Go API's mark rides the next journal commit) and
// swamp wrote the item before anything recovered.
func supersededBy(fsys fsx.FS, s *journal.Step, cur []byte) (string, bool, error) {
	if s.To == "" || len(s.Files) == 0 {
		return "", false, nil // not a version pointer
	}
	ours, err := strconv.ParseUint(string(s.Data), 10, 63)
	if err != nil {
		return "", false, nil
	}
	later := string(bytes.TrimSpace(cur))
	n, err := strconv.ParseUint(later, 10, 63)
	if err != nil || n <= ours || later != strconv.FormatUint(n, 10) {
		return "", false, nil
	}
	if there, err := fsx.Exists(fsys, filepath.Join(filepath.Dir(s.To), later, "metadata.yaml")); err != nil || !there {
		return "", false, err
	}
	ok, err := dirHolds(fsys, s.To, s.Files)
	return later, ok, err
}

// WriteTemp is the temp file a write step goes through.
func WriteTemp(s *journal.Step) string {
	if s.Temp != "" {
		return s.Temp
	}
	return fsx.TempName(s.Path)
}

func applyWrite(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if s.Temp != "" && d.TakeWrittenAhead(s.Temp) {
		// Its temp file was written and fsynced with the staged content.
		// Its directory fsync (which also carries the publish rename) is
		// the executor's, before the next step of another kind: the
		// `latest` replaces of a batch then share one flush.
		if err := env.FS.Rename(s.Temp, s.Path); err != nil {
			return err
		}
		d.AddBatched(filepath.Dir(s.Path))
		return nil
	}
	if err := fsx.WriteFileAtomicVia(env.FS, s.Path, WriteTemp(s), s.Data, fsx.FileMode); err != nil {
		return err
	}
	d.Synced(filepath.Dir(s.Path))
	return nil
}

// writeAhead writes the temp file of a write step that is still to be
// applied, without an fsync, and hands it to the Dirty set (the
// executor's prepareTemps calls it through Kind.WriteAhead). It returns
// an error only when a flush of earlier content failed; any other trouble
// is left for the step itself to meet and report.
func writeAhead(env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if obs, _, err := observeWrite(context.Background(), env, s); err != nil || (obs != engine.NotDone && obs != engine.Partial && obs != engine.WrittenAhead) {
		return nil
	}
	if err := env.FS.Remove(s.Temp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	f, _, err := fsx.WriteNewUnsynced(env.FS, s.Temp, bytes.NewReader(s.Data), fsx.FileMode, nil)
	if err != nil {
		_ = env.FS.Remove(s.Temp)
		return nil
	}
	if err := d.DeferFile(f); err != nil {
		return err
	}
	d.MarkWrittenAhead(s.Temp)
	return nil
}

func undoWrite(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	cur, err := env.FS.ReadFile(s.Path)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	case err == nil && s.OldExists && bytes.Equal(cur, s.OldData), err != nil && !s.OldExists:
		// Only the temp file was written (a crash, or a temp prepared
		// ahead of its step): nothing to restore.
		return CleanTemp(env, s, d)
	}
	if s.OldExists {
		if err := fsx.WriteFileAtomicVia(env.FS, s.Path, WriteTemp(s), s.OldData, fsx.FileMode); err != nil {
			return err
		}
		d.Synced(filepath.Dir(s.Path))
		return nil
	}
	if err := env.FS.Remove(s.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return CleanTemp(env, s, d)
}

// CleanTemp removes the step's temp file if a crash left it behind.
func CleanTemp(env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if s.Temp != "" {
		if err := env.FS.Remove(s.Temp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	d.Add(filepath.Dir(s.Path))
	return nil
}

// ---- drop-duplicate (a byte-identical file that already exists at To)

func observeDropDup(_ context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	want := s.Files[0]
	twin, err := fileMatches(env.FS, s.To, want)
	if err != nil {
		return engine.Conflict, "", err
	}
	here, err := fsx.Exists(env.FS, s.Path)
	if err != nil {
		return engine.Conflict, "", err
	}
	if !twin {
		return engine.Conflict, fmt.Sprintf("%s no longer holds the identical copy", s.To), nil
	}
	if !here {
		return engine.Done, "", nil
	}
	same, err := fileMatches(env.FS, s.Path, want)
	if err != nil {
		return engine.Conflict, "", err
	}
	if !same {
		return engine.Conflict, fmt.Sprintf("%s changed since the plan was made", s.Path), nil
	}
	return engine.NotDone, "", nil
}

func applyDropDup(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if err := env.FS.Remove(s.Path); err != nil {
		return err
	}
	d.Add(filepath.Dir(s.Path))
	return nil
}

func undoDropDup(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	src, err := env.FS.Open(s.To)
	if err != nil {
		return err
	}
	defer src.Close()
	// The temp name is the step's own, not a random one: an undo cut
	// between writing it and renaming it leaves it behind, and the undo
	// run again (the copy is still missing) removes it first.
	tmp := restoreTemp(s.Path)
	if err := env.FS.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, err := fsx.WriteNew(env.FS, tmp, src, fsx.FileMode, nil); err != nil {
		_ = env.FS.Remove(tmp)
		return err
	}
	if err := env.FS.RenameNoReplace(tmp, s.Path); err != nil {
		_ = env.FS.Remove(tmp)
		return err
	}
	d.Add(filepath.Dir(s.Path))
	return nil
}

// restoreTemp is the temp file undoDropDup restores path through.
func restoreTemp(path string) string {
	sum := sha256.Sum256([]byte(filepath.Base(path)))
	return filepath.Join(filepath.Dir(path), "."+hex.EncodeToString(sum[:8])+".swampj-restore.tmp")
}

// ---- stage (a version's files in a hidden staging directory)

// observeStage: done when the published directory (To) or the staging
// directory holds every expected file complete (for a self-verifying stage:
// a version consistent with its own metadata, see dirHolds); partial when a
// staging directory exists but is incomplete; not done when neither exists.
func observeStage(_ context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	if ok, err := dirHolds(env.FS, s.To, s.Files); err != nil {
		return engine.Conflict, "", err
	} else if ok {
		return engine.Done, "", nil
	}
	staged, err := fsx.Exists(env.FS, s.Path)
	if err != nil {
		return engine.Conflict, "", err
	}
	if !staged {
		if ok, _ := fsx.Exists(env.FS, s.To); ok {
			// Someone else's version of that number (swamp, after a
			// crash freed its lock): nothing of ours to undo, and
			// nothing we can publish.
			return engine.Missing, fmt.Sprintf("%s holds another version, not the staged files", s.To), nil
		}
		return engine.NotDone, "", nil
	}
	ok, err := dirHolds(env.FS, s.Path, s.Files)
	if err != nil {
		return engine.Conflict, "", err
	}
	if ok {
		return engine.Done, "", nil
	}
	return engine.Partial, fmt.Sprintf("%s is incomplete", s.Path), nil
}

// undoStage removes the staging directory. It holds only bytes of a write
// that was never acknowledged, so removing it loses nothing a user has.
func undoStage(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {
	if err := fsx.RemoveAll(env.FS, s.Path); err != nil {
		return err
	}
	d.Add(filepath.Dir(s.Path))
	return nil
}

// dirHolds reports whether dir holds every expected file. A file expected
// with a negative Size is self-verifying (a stream whose size and hash were
// unknown when the step was journaled): the directory then also has to be a
// self-consistent version (versionComplete). Files with a known size are
// checked exactly, as before.
func dirHolds(fsys fsx.FS, dir string, files []journal.FileExpect) (bool, error) {
	selfVerifying, wantID := false, ""
	for _, f := range files {
		if f.Size < 0 {
			selfVerifying = true
			if f.ID != "" {
				wantID = f.ID
			}
			continue
		}
		ok, err := fileMatches(fsys, filepath.Join(dir, f.Name), f)
		if err != nil || !ok {
			return false, err
		}
	}
	if selfVerifying {
		return versionComplete(fsys, dir, wantID)
	}
	return true, nil
}

// versionComplete reports whether dir is a complete version as the writer
// leaves it: metadata.yaml (written only after raw was complete and
// fsynced) decodes and passes swamp's schema, records a size and a
// checksum, and raw is a regular file of exactly that size and SHA-256.
// Anything less — no metadata yet, a torn or empty one, a raw that does not
// match — is incomplete, never an error.
func versionComplete(fsys fsx.FS, dir, wantID string) (bool, error) {
	mdPath := filepath.Join(dir, store.MetadataFileName)
	fi, err := fsys.Lstat(mdPath)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return false, nil
	}
	data, err := fsys.ReadFile(mdPath)
	if err != nil {
		return false, err
	}
	md, err := meta.Decode(data)
	if err != nil || md.Size == nil || md.Checksum == "" || (wantID != "" && md.ID != wantID) {
		return false, nil
	}
	return fileMatches(fsys, filepath.Join(dir, store.RawFileName), journal.FileExpect{Name: store.RawFileName, Size: *md.Size, SHA256: md.Checksum})
}

// fileMatches reports whether path is a regular file of the expected size
// and (if given) SHA-256. Hashing streams the file.
func fileMatches(fsys fsx.FS, path string, want journal.FileExpect) (bool, error) {
	fi, err := fsys.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != want.Size {
		return false, nil
	}
	if want.SHA256 == "" {
		return true, nil
	}
	sum, err := store.HashFile(fsys, path)
	if err != nil {
		return false, err
	}
	return sum == want.SHA256, nil
}
