package fsx

import (
	"io"
	"io/fs"
)

// FileMode and DirMode are the modes swampj creates every file and
// directory with: all that the process's umask allows, as swamp's own writes
// (Deno's defaults, 0o666 and 0o777) do. Under umask 002 a repo shared by a
// group then stays writable by the group after swampj wrote in it; a fixed
// narrower mode (0o644, or bbolt's usual 0o600) would lock the other members
// out of files they could write before.
const (
	FileMode fs.FileMode = 0o666
	DirMode  fs.FileMode = 0o777
)

// File is an open file handed out by an FS.
type File interface {
	io.Reader
	io.Writer
	io.Closer
	Name() string
	Sync() error
	Stat() (fs.FileInfo, error)
}

// FS is every disk operation the engine performs. Mutating operations are the
// cut points of the crash suite; reads are not counted.
type FS interface {
	// Reads.
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	ReadFile(name string) ([]byte, error)
	Readlink(name string) (string, error)
	Open(name string) (File, error)
	EvalSymlinks(name string) (string, error)

	// Mutations. Create fails if name exists (O_CREAT|O_EXCL|O_WRONLY).
	Create(name string, perm fs.FileMode) (File, error)
	// OpenAppend opens an existing file for writing at its end.
	OpenAppend(name string) (File, error)
	Mkdir(name string, perm fs.FileMode) error
	Rename(oldpath, newpath string) error
	// RenameNoReplace renames oldpath to newpath and fails with an error
	// satisfying errors.Is(err, fs.ErrExist) if newpath exists.
	RenameNoReplace(oldpath, newpath string) error
	// Link makes newpath a hard link to oldpath; fails if newpath exists.
	Link(oldpath, newpath string) error
	Remove(name string) error
	// SyncDir fsyncs a directory so the entries created, renamed or removed
	// in it survive a power cut.
	SyncDir(name string) error

	// Failpoint marks a write made outside this FS (a bbolt or SQLite
	// commit) as a cut point. The real FS returns nil; Fault counts it as an
	// operation and may return ErrCrashed or an injected error, in which case
	// the caller must not perform the write.
	Failpoint(name string) error
}
