package repo

// Always-local directories that swamp's own migrate carried into a
// namespace (swamp-format §13.9). swamp 06b6147's
// `datastore namespace migrate` iterates all 15 DEFAULT_DATASTORE_SUBDIRS,
// the five ALWAYS_LOCAL_SUBDIRS included, so it moves {base}/secrets,
// bundles, vault-bundles, driver-bundles and report-bundles into
// {base}/{ns}/; swamp reads all five only from {repo}/.swamp/ (its
// resolver's localPath), so afterwards its vault finds no secret
// ("Secret 'k1' not found in local vault 'v1'", 0 keys) and the moved
// bundle caches are never read again (swamp rebuilds a source extension's
// bundle at the root; a bundle without source is lost to it). Verified with
// the real swamp 06b6147. swamp's own reverse migrate cannot bring them
// back: it refuses because the always-local catalog directory data/ exists
// at the root (the #3316 defect).
//
// HiddenLocalDirs observes; it changes nothing. Bringing the directories
// back (merging entry by entry, refusing real conflicts, deleting nothing)
// is a journaled repair.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/swampj/swampj/fsx"
)

// HiddenLocalDir is one always-local directory found inside a namespace.
type HiddenLocalDir struct {
	Namespace string // the namespace directory it is in
	Subdir    string // secrets, bundles, vault-bundles, driver-bundles, report-bundles
	Path      string // {base}/{ns}/{subdir}: where it is
	Home      string // {repo}/.swamp/{subdir}: where swamp reads it
	// Files are the regular files and symlinks under Path, relative to it
	// ("/"-separated, sorted). For secrets, "{vaultType}/{vault}/{key}.enc"
	// and each vault's ".key".
	Files []string
	// Vaults are the vaults whose secrets swamp cannot see
	// ("{vaultType}/{vault}"), for secrets only.
	Vaults []string
	// Same are files present at Home with the same bytes (nothing to move).
	Same []string
	// Conflicts are files present at Home with different content or of
	// another kind (a directory where a file is): a merge must refuse them.
	Conflicts []string
	// Dirs are the directories under Path, relative to it ("/"-separated,
	// "" for Path itself), deepest first: what is left, empty, once every
	// file has gone.
	Dirs []string
}

// HiddenMove is one file of a hidden directory going back: From (under
// Path) to To (under Home, or a quarantine directory for a file Home
// already holds with the same bytes).
type HiddenMove struct{ From, To string }

// Return is how h goes back, merged entry by entry into Home: every file
// Home lacks moves there; every file Home holds with the same bytes moves
// to quarantine/{ns}/{subdir}/ (nothing is deleted); then every directory
// of h, emptied, is removed, deepest first. It must not be used while h
// has Conflicts (the caller refuses those, listing every one).
func (h HiddenLocalDir) Return(quarantine string) (moves []HiddenMove, rmdirs []string) {
	same := map[string]bool{}
	for _, f := range h.Same {
		same[f] = true
	}
	for _, f := range h.Files {
		to := filepath.Join(h.Home, filepath.FromSlash(f))
		if same[f] {
			to = filepath.Join(quarantine, h.Namespace, h.Subdir, filepath.FromSlash(f))
		}
		moves = append(moves, HiddenMove{From: filepath.Join(h.Path, filepath.FromSlash(f)), To: to})
	}
	for _, d := range h.Dirs {
		rmdirs = append(rmdirs, filepath.Join(h.Path, filepath.FromSlash(d)))
	}
	return moves, rmdirs
}

// HiddenLocalDirs finds every always-local directory inside a namespace of
// the repo's datastore: {base}/{ns}/{subdir} for each namespace directory
// under the base that has a manifest, and the configured namespace. It
// compares each with its home {repo}/.swamp/{subdir} file by file.
// Symlinks are compared by target and never followed.
func HiddenLocalDirs(fsys fsx.FS, r *Repo) ([]HiddenLocalDir, error) {
	fsys = fsx.OrReal(fsys)
	nss := map[string]bool{}
	if r.Namespace != "" {
		nss[r.Namespace] = true
	}
	ms, err := ListNamespaces(fsys, r.Base)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		nss[m.Namespace] = true
	}
	names := make([]string, 0, len(nss))
	for ns := range nss {
		if ValidateNamespace(ns) == nil {
			names = append(names, ns)
		}
	}
	sort.Strings(names)
	var out []HiddenLocalDir
	for _, ns := range names {
		for _, sub := range AlwaysLocalSubdirs {
			p := filepath.Join(r.Base, ns, sub)
			fi, err := fsys.Lstat(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return out, fmt.Errorf("looking for %s: %w", p, err)
			}
			if !fi.IsDir() {
				continue
			}
			h := HiddenLocalDir{Namespace: ns, Subdir: sub, Path: p, Home: r.LocalPath(sub)}
			if err := h.compare(fsys); err != nil {
				return out, err
			}
			out = append(out, h)
		}
	}
	return out, nil
}

func (h *HiddenLocalDir) compare(fsys fsx.FS) error {
	vaults := map[string]bool{}
	var walk func(rel string) error
	walk = func(rel string) error {
		h.Dirs = append(h.Dirs, filepath.ToSlash(rel))
		ents, err := fsys.ReadDir(filepath.Join(h.Path, rel))
		if err != nil {
			return fmt.Errorf("listing %s: %w", filepath.Join(h.Path, rel), err)
		}
		for _, e := range ents {
			r := filepath.Join(rel, e.Name())
			if e.IsDir() {
				if err := walk(r); err != nil {
					return err
				}
				continue
			}
			slash := filepath.ToSlash(r)
			h.Files = append(h.Files, slash)
			if h.Subdir == "secrets" && strings.Count(slash, "/") == 2 {
				vaults[path.Dir(slash)] = true // {vaultType}/{vault}/{file}
			}
			same, conflict, err := sameEntry(fsys, filepath.Join(h.Path, r), filepath.Join(h.Home, r))
			switch {
			case err != nil:
				return err
			case same:
				h.Same = append(h.Same, slash)
			case conflict:
				h.Conflicts = append(h.Conflicts, slash)
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return err
	}
	for v := range vaults {
		h.Vaults = append(h.Vaults, v)
	}
	sort.Strings(h.Files)
	sort.Strings(h.Vaults)
	sort.Strings(h.Same)
	sort.Strings(h.Conflicts)
	sort.Slice(h.Dirs, func(a, b int) bool { // deepest first
		da, db := strings.Count(h.Dirs[a], "/")+len(h.Dirs[a]), strings.Count(h.Dirs[b], "/")+len(h.Dirs[b])
		if da != db {
			return da > db
		}
		return h.Dirs[a] > h.Dirs[b]
	})
	return nil
}

// sameEntry compares the hidden entry a with its home b: same (b holds the
// same bytes, or the same link target), conflict (b exists and differs),
// or neither (b is missing: a moves there). A home path whose parent is a
// file is a conflict too.
func sameEntry(fsys fsx.FS, a, b string) (same, conflict bool, err error) {
	bi, err := fsys.Lstat(b)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, false, nil
	case err != nil && errors.Is(err, syscall.ENOTDIR):
		return false, true, nil
	case err != nil:
		return false, false, fmt.Errorf("looking at %s: %w", b, err)
	}
	ai, err := fsys.Lstat(a)
	if err != nil {
		return false, false, fmt.Errorf("looking at %s: %w", a, err)
	}
	if ai.Mode().Type() != bi.Mode().Type() {
		return false, true, nil
	}
	if ai.Mode()&fs.ModeSymlink != 0 {
		at, err1 := fsys.Readlink(a)
		bt, err2 := fsys.Readlink(b)
		if err := errors.Join(err1, err2); err != nil {
			return false, false, err
		}
		return at == bt, at != bt, nil
	}
	if !ai.Mode().IsRegular() || ai.Size() != bi.Size() {
		return false, true, nil
	}
	ad, err1 := fsys.ReadFile(a)
	bd, err2 := fsys.ReadFile(b)
	if err := errors.Join(err1, err2); err != nil {
		return false, false, err
	}
	eq := bytes.Equal(ad, bd)
	return eq, !eq, nil
}
