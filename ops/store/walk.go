package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj/fsx"
)

// QuarantineDirName is the directory, directly under the data root, where
// swampj moves versions and items it takes out of service; nothing is
// deleted. Walk never enters it. swamp's own walk does (it descends
// dot-directories, swamp-format §2.7.3), but re-normalising the type drops the leading dot
// and looks the items up under another path, so swamp finds nothing there.
// Writers should still not keep the {modelId}/{dataName}/{N}/metadata.yaml
// shape below it: swamp's lookup by model name (swamp-format §2.7.4) probes any
// UUID-named directory it meets.
const QuarantineDirName = ".swampj-quarantine"

// swampjDirPrefix marks swampj's own directories (staging, quarantine) at any
// level of the data tree. They are not data, and a half-built staging
// directory must not make its parent look like a model.
const swampjDirPrefix = ".swampj-"

func isSwampjName(name string) bool { return strings.HasPrefix(name, swampjDirPrefix) }

// Item is one data item found by Walk: the directory
// {dataRoot}/{Type}/{ModelID}/{DataName}.
type Item struct {
	// Type is the type directory segments joined by "/", as they are on
	// disk. swamp re-normalises it (lowercase; ".", "::" and whitespace to
	// "/", swamp-format §2.7.3) and so loses items under a type directory that is not
	// already normalised; Walk reports them as they are.
	Type     string
	ModelID  string
	DataName string
	// Dir is the data-name directory (holding `latest` and the versions).
	Dir string
}

// Key is "TYPE/MODEL/NAME", the string `data list [PREFIX]` matches.
func (it Item) Key() string { return it.Type + "/" + it.ModelID + "/" + it.DataName }

// Walk calls fn for every data item under dataRoot, classifying directories
// as swamp's findAllGlobal does (swamp-format §2.7.3):
//
//   - only real directories are descended (never symlinks); files of any
//     name (`_catalog.db*`, `.lock`, `.{uuid}.tmp`) are skipped;
//   - dot-directories are walked like any type directory, except swampj's
//     own (QuarantineDirName and other ".swampj-" names);
//   - a directory at depth ≥ 2 is a model id when one of its children (a
//     directory or a symlink) has a real directory named /^\d+$/ holding a
//     regular metadata.yaml (stat semantics: a symlink to a file counts);
//     this is what keeps numeric data names such as "207333" from being
//     taken for versions;
//   - every real subdirectory of a model-id directory is an item; symlinked
//     data-name directories are skipped (findAllForModel).
//
// Symlinks, one rule everywhere: a symlink in the data tree is never a type,
// model, data-name or version directory, whatever it points at. swamp's walk
// (findAllGlobal), its listVersions (data versions, the catalog backfill,
// version allocation) and findAllForModel skip symlinks; only its
// single-item read (findByName, `swamp data get`) follows a symlinked version
// directory when `latest` or --version names it. swampj follows the walk,
// not that read: ScanItem, ReadVersion and ReadContent report a symlinked
// version as damaged (CodeVersionSymlink), so `data get/versions/list`, the
// doctor and `catalog verify/rebuild` agree that it is not a readable
// version, and the catalog holds exactly the rows swamp's backfill would
// write. (The one exception is swamp's classification above: a symlinked
// data-name directory can make its parent a model directory.)
//
// Unlike swamp, Walk does not open any item's metadata, so one bad file never
// hides the rest of a model (swamp-format §9.2): judging items is ScanItem's job. A
// directory it cannot list is skipped and its error returned, joined with the
// others, after the walk (swamp aborts at the first). A missing dataRoot has
// no items. fn's error, or the context's, stops the walk and is returned.
func Walk(ctx context.Context, fsys fsx.FS, dataRoot string, fn func(Item) error) error {
	fsys = fsx.OrReal(fsys)
	return walkItems(ctx, fsys, dataRoot, "", fn)
}

// WalkListings is Walk that also hands seen every directory listing the
// walk makes (the data root, every type and model directory; not the
// items', which ScanItem lists: ItemState.Entries), before fn gets any item
// below that directory. A caller that looks at the rest of the tree (the
// doctor's search for staging leftovers) then need not list it again.
// seen runs on the walk's goroutine; entries must not be modified.
func WalkListings(ctx context.Context, fsys fsx.FS, dataRoot string, fn func(Item) error, seen func(dir string, entries []fs.DirEntry)) error {
	w := &walker{ctx: ctx, fsys: fsx.OrReal(fsys), fn: fn, seen: seen}
	return w.walk(dataRoot)
}

// FindItems returns the items whose Key starts with prefix (all items for
// ""), in walk order: `data list [PREFIX]`. The prefix is a plain string
// prefix, so "aws/e" matches type "aws/ec2"; directories that cannot hold a
// match are not entered.
func FindItems(ctx context.Context, fsys fsx.FS, dataRoot, prefix string) ([]Item, error) {
	fsys = fsx.OrReal(fsys)
	var items []Item
	err := walkItems(ctx, fsys, dataRoot, prefix, func(it Item) error {
		items = append(items, it)
		return nil
	})
	return items, err
}

type walker struct {
	ctx     context.Context
	fsys    fsx.FS
	prefix  string
	fn      func(Item) error
	seen    func(dir string, entries []fs.DirEntry) // nil: nobody asks
	skipped []error                                 // directories that could not be listed
}

func walkItems(ctx context.Context, fsys fsx.FS, dataRoot, prefix string, fn func(Item) error) error {
	w := &walker{ctx: ctx, fsys: fsys, prefix: prefix, fn: fn}
	return w.walk(dataRoot)
}

func (w *walker) walk(dataRoot string) error {
	entries, err := w.fsys.ReadDir(dataRoot)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: walk %s: %w", dataRoot, err)
	}
	if w.seen != nil {
		w.seen(dataRoot, entries)
	}
	if err := w.typeDir(dataRoot, "", entries); err != nil {
		return err
	}
	return errors.Join(w.skipped...)
}

// typeDir looks at each child directory of dir (rel is dir's path below the
// data root, "/"-separated; "" for the root itself) and either reports it as a
// model or descends into it.
func (w *walker) typeDir(dir, rel string, entries []fs.DirEntry) error {
	for _, e := range entries {
		if !e.IsDir() || isSwampjName(e.Name()) {
			continue
		}
		childRel := joinRel(rel, e.Name())
		if !w.mayMatch(childRel) {
			continue
		}
		if err := w.ctx.Err(); err != nil {
			return err
		}
		child := filepath.Join(dir, e.Name())
		childEntries, err := w.fsys.ReadDir(child)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since dir was listed
		}
		if err != nil {
			w.skipped = append(w.skipped, fmt.Errorf("store: walk %s: %w", child, err))
			continue
		}
		if w.seen != nil {
			w.seen(child, childEntries)
		}
		// A model id needs at least one type segment above it.
		if rel != "" && w.isModelDir(child, childEntries) {
			if err := w.modelDir(child, rel, e.Name(), childEntries); err != nil {
				return err
			}
			continue
		}
		if err := w.typeDir(child, childRel, childEntries); err != nil {
			return err
		}
	}
	return nil
}

// isModelDir is swamp's isModelIdDirectory (swamp-format §2.7.3). It stops at the first
// proof, so a model directory usually costs one extra ReadDir and one stat.
// Children that cannot be listed prove nothing and are passed over.
func (w *walker) isModelDir(dir string, entries []fs.DirEntry) bool {
	for _, y := range entries {
		if isSwampjName(y.Name()) || !(y.IsDir() || y.Type()&fs.ModeSymlink != 0) {
			continue
		}
		yDir := filepath.Join(dir, y.Name())
		zs, err := w.fsys.ReadDir(yDir) // follows a symlinked data-name directory
		if err != nil {
			continue
		}
		for _, z := range zs {
			if !z.IsDir() || !isAllDigits(z.Name()) {
				continue
			}
			info, err := w.fsys.Stat(filepath.Join(yDir, z.Name(), MetadataFileName))
			if err == nil && info.Mode().IsRegular() {
				return true
			}
		}
	}
	return false
}

// modelDir reports every real subdirectory of a model-id directory as an item.
func (w *walker) modelDir(dir, typ, modelID string, entries []fs.DirEntry) error {
	for _, e := range entries {
		if !e.IsDir() || isSwampjName(e.Name()) {
			continue
		}
		it := Item{Type: typ, ModelID: modelID, DataName: e.Name(), Dir: filepath.Join(dir, e.Name())}
		if w.prefix != "" && !strings.HasPrefix(it.Key(), w.prefix) {
			continue
		}
		if err := w.fn(it); err != nil {
			return err
		}
	}
	return nil
}

// mayMatch reports whether a directory at rel can hold an item whose key
// starts with the prefix: every key below it starts with rel+"/".
func (w *walker) mayMatch(rel string) bool {
	return w.prefix == "" || strings.HasPrefix(rel, w.prefix) || strings.HasPrefix(w.prefix, rel+"/")
}

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}
