// Package fsxtest has helpers for tests that check whole directory trees:
// snapshot a tree, compare two snapshots, copy a tree; and the scratch
// directory such a tree is built in.
package fsxtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Entry is one path of a snapshot.
type Entry struct {
	Kind    string // dir, file, symlink
	Content string // file: sha256 and size; symlink: target
}

// Tree maps slash-separated relative paths to entries.
type Tree map[string]Entry

// Snapshot records every entry below root, skipping relative paths for which
// skip returns true (and, for directories, everything below them).
func Snapshot(t testing.TB, root string, skip func(rel string) bool) Tree {
	t.Helper()
	tree := Tree{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			tree[rel] = Entry{Kind: "symlink", Content: target}
		case d.IsDir():
			tree[rel] = Entry{Kind: "dir"}
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			tree[rel] = Entry{Kind: "file", Content: fmt.Sprintf("%d:%s", len(b), hex.EncodeToString(sum[:8]))}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// Diff lists the differences between want and got, sorted, empty if equal.
func Diff(want, got Tree) []string {
	var out []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			out = append(out, "missing "+p)
		case g != w:
			out = append(out, fmt.Sprintf("changed %s: want %v, got %v", p, w, g))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, "unexpected "+p)
		}
	}
	sort.Strings(out)
	return out
}

// Files returns the file entries only, keyed by path.
func (t Tree) Files() Tree {
	out := Tree{}
	for p, e := range t {
		if e.Kind == "file" {
			out[p] = e
		}
	}
	return out
}

// CopyTree copies src to dst (which must not exist), keeping symlinks and
// the files' modification times (a lock file's age is what the doctor
// judges it by).
func CopyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if err := os.WriteFile(out, b, 0o644); err != nil {
				return err
			}
			return os.Chtimes(out, fi.ModTime(), fi.ModTime())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// SkipJournal skips swampj's journal files under .swamp (they are expected
// to differ between a crashed run and a clean one).
func SkipJournal(rel string) bool {
	return strings.HasPrefix(rel, ".swamp/_journal.db")
}

// SkipCatalogSidecars skips the -wal and -shm SQLite keeps beside a
// catalog between processes (catalog/persistwal.go): a command that
// opened the catalog leaves them, whatever it changed.
func SkipCatalogSidecars(rel string) bool {
	return strings.HasSuffix(rel, "_catalog.db-wal") || strings.HasSuffix(rel, "_catalog.db-shm")
}

// WriteFiles creates files (and their directories) below root.
func WriteFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
