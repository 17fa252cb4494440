//go:build unix

package fsx

import "golang.org/x/sys/unix"

// FreeBytes is how many bytes an unprivileged writer can still allocate on
// the file system holding path (statfs; it reads, changes nothing). Error
// messages use it to tell a full disk from other I/O errors when a library
// (SQLite) reports only "disk I/O error".
func FreeBytes(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// Writable reports whether this process may create entries in dir
// (access(2) W_OK: it asks, it writes nothing — an inspection must not).
func Writable(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }

// ReadOnlyMedia reports whether dir is on a file system mounted read-only
// (access(2) W_OK answers EROFS: it asks, it writes nothing).
func ReadOnlyMedia(dir string) bool { return unix.Access(dir, unix.W_OK) == unix.EROFS }
