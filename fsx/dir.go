package fsx

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dir is a directory listed once and kept open, so that paths below it can
// be looked at relative to it. On the real file system (Linux) Dir.Stat is
// one fstatat relative to the open directory, which walks only the
// relative path instead of the directory's whole path again: a scan that
// stats a file in every version of an item (store.ScanItem) pays for the
// item's path once.
type Dir struct {
	fsys    FS
	name    string
	entries []fs.DirEntry
	f       *os.File // open on the real FS; nil otherwise
	fd      int      // f's descriptor
	// beneath: the real disk held to the trust boundary (Confined): a
	// path below the directory is resolved beneath it, and one that leaves
	// it goes through fsys, which refuses it if it leaves the roots too.
	beneath bool
}

// dirOpener is the real disk, plain (OS) or confined: it opens a directory
// for Dir to look below.
type dirOpener interface {
	openDirAt(name string) (*os.File, error)
}

// OpenDir lists the directory name as fsys.ReadDir does (the same entries,
// sorted by name, the same errors) and keeps it for Dir.Stat. On any FS but
// the real one it is fsys.ReadDir, and Dir.Stat is fsys.Stat of the joined
// path, so a wrapping FS (fault injection, a test's failing FS) sees
// exactly the calls it saw before. Close releases it.
func OpenDir(fsys FS, name string) (*Dir, error) {
	fsys = OrReal(fsys)
	d := &Dir{fsys: fsys, name: name}
	opener, real := fsys.(dirOpener)
	if !real || !statAtSupported {
		ents, err := fsys.ReadDir(name)
		if err != nil {
			return nil, err
		}
		d.entries = ents
		return d, nil
	}
	// What os.ReadDir does, keeping the file open.
	f, err := opener.openDirAt(name)
	if err != nil {
		return nil, err
	}
	ents, err := f.ReadDir(-1)
	if err != nil {
		f.Close()
		return nil, err
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	// Fd puts f in blocking mode, which a directory (never in the poller)
	// already is; it stays valid until Close.
	d.entries, d.f, d.fd = ents, f, int(f.Fd())
	_, d.beneath = fsys.(*Confined)
	return d, nil
}

// Entries is the listing, sorted by name; do not modify it.
func (d *Dir) Entries() []fs.DirEntry { return d.entries }

// Stat is fsys.Stat(filepath.Join(dir, rel)) (symlinks followed): the same
// FileInfo fields (Name, Size, Mode, ModTime, IsDir) and, on failure, the
// same *fs.PathError, with the joined path. rel must be relative. Stat may
// be called from several goroutines at once, never after Close.
func (d *Dir) Stat(rel string) (fs.FileInfo, error) {
	// Only a clean, local rel is the joined path's own tail: a ".."
	// resolved by the kernel under a symlinked directory is not what
	// Join's lexical cleaning gives, nor is "." the joined path's name.
	if d.f == nil || rel == "." || !filepath.IsLocal(rel) || filepath.Clean(rel) != rel {
		return d.fsys.Stat(filepath.Join(d.name, rel))
	}
	if d.beneath {
		return statBeneath(d.fsys, d.fd, d.name, rel)
	}
	return statAt(d.fd, d.name, rel)
}

// ReadFile is fsys.ReadFile(filepath.Join(dir, rel)): the same content
// and, on failure, the same error text. On the real FS it opens rel
// relative to the directory and reads it with plain system calls (open,
// fstat, read to EOF, close), without the poller setup os.Open does for
// every file: a scan that reads one small file per item (`latest`) pays
// four system calls for it instead of nine. The same rules for rel as
// Stat; called concurrently, never after Close.
func (d *Dir) ReadFile(rel string) ([]byte, error) {
	if d.f == nil || rel == "." || !filepath.IsLocal(rel) || filepath.Clean(rel) != rel {
		return d.fsys.ReadFile(filepath.Join(d.name, rel))
	}
	if d.beneath {
		return readFileBeneath(d.fsys, d.fd, d.name, rel)
	}
	return readFileAt(d.fd, d.name, rel)
}

// Close releases the directory, once every Stat has returned.
func (d *Dir) Close() error {
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	return err
}
