package fsx

// The trust boundary. A repo's files are input, not trusted: swampj often
// runs as root (a systemd unit, another tool's startup hook) on a repo that
// other people can write into, and a symlink, a FIFO or a huge file planted
// there must never make it act outside the repo, hang, or run out of memory.
// The rule, in one place for every reader and writer:
//
//   - Every path is resolved under a root: the repo, or the datastore
//     directory .swamp.yaml names (the user chose it). A path under no root,
//     or one whose resolution passes a symlink that leaves its root (an
//     absolute link, or ".." above the root), is refused with an
//     *OutsideError naming the link and its target. Links that stay inside
//     (swamp's own legacy `latest -> 3`) are followed as before.
//     On Linux the kernel resolves each path (openat2 with
//     RESOLVE_BENEATH), so a link swapped in between a check and its use
//     cannot redirect the operation: there is no check apart from the use.
//   - Mutations (create, mkdir, rename, link, remove) act on the last name
//     itself, never on what a link there points at; Create is O_EXCL, so an
//     existing link is an error, not a file created at its target.
//   - Opens for reading never block: a FIFO, socket or device is refused by
//     fstat before any read (the open is O_NONBLOCK), with *NotRegularError.
//   - Every ReadFile is bounded (MaxReadFile); a larger file is a
//     *TooLargeError, not an allocation of its size.
//   - Run as root on a repo owned by someone else, every file and directory
//     created is given to the repo's owner, so nothing swampj leaves locks
//     the owner out of their own repo.
//
// Confined is the real disk under these rules (confine_linux.go); ReadFile
// and Open of the plain real disk (os.go) follow the last three too, so a
// path read before the repo is known cannot hang or exhaust memory either.

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/swampj/swampj"
)

// MaxReadFile bounds every ReadFile of the real disk: the largest file
// swampj reads whole (a metadata.yaml, a lock, a record, `latest`) is far
// smaller. Contents that can be larger (a version's raw payload) are
// streamed, never read whole.
const MaxReadFile = 64 << 20

// OutsideError is a path refused by the trust boundary: it is under none of
// the roots, or resolving it passes a symlink that leaves its root.
type OutsideError struct {
	Op   string // the operation refused ("open", "rename", ...)
	Path string // the path it named
	// Link and Target name the symlink that leaves the root, and what it
	// says, when one was found ("" otherwise: the path itself is outside).
	Link, Target string
	Roots        []string // the roots the path was held to
}

// Code is path_outside_repo.
func (e *OutsideError) Code() string { return "path_outside_repo" }

// Class is ClassNeedsPerson: a link that leaves the repo is a person's
// decision to undo (or to name the place as the datastore in .swamp.yaml).
func (e *OutsideError) Class() swampj.Class { return swampj.ClassNeedsPerson }

func (e *OutsideError) Error() string {
	if e.Link != "" {
		return fmt.Sprintf("%s %s: refused: %s is a symlink to %s, which leaves the repo (swampj acts only inside %s)",
			e.Op, e.Path, e.Link, e.Target, strings.Join(e.Roots, " and "))
	}
	return fmt.Sprintf("%s %s: refused: the path is outside the repo (swampj acts only inside %s)",
		e.Op, e.Path, strings.Join(e.Roots, " and "))
}

// NotRegularError is a file swampj was to read that is a FIFO, a socket or
// a device: reading it could block forever or never end.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Code() string        { return "not_regular_file" }
func (e *NotRegularError) Class() swampj.Class { return swampj.ClassNeedsPerson }
func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (%s): not read", e.Path, kindOf(e.Mode))
}

// TooLargeError is a file larger than what it can be (MaxReadFile, or the
// caller's bound): not read, so a sparse or endless file cannot exhaust
// memory.
type TooLargeError struct {
	Path  string
	Size  int64 // its size, or Limit+1 for a file that grew past it
	Limit int64
}

func (e *TooLargeError) Code() string        { return "file_too_large" }
func (e *TooLargeError) Class() swampj.Class { return swampj.ClassNeedsPerson }
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, more than the %d it can be: not read", e.Path, e.Size, e.Limit)
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

// ReadFileMax reads name whole through fsys if it holds at most limit
// bytes; a larger file (or one that grows past limit while read) is a
// *TooLargeError and a FIFO, socket or device a *NotRegularError, neither
// read.
func ReadFileMax(fsys FS, name string, limit int64) ([]byte, error) {
	f, err := OrReal(fsys).Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &NotRegularError{Path: name, Mode: st.Mode()}
	}
	if st.Size() > limit {
		return nil, &TooLargeError{Path: name, Size: st.Size(), Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: name, Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}

// outermost cleans roots, replaces one that does not exist yet (a datastore
// directory a first write creates) by its nearest existing parent, and
// drops one inside another: a link that stays inside the repo is followed
// even where it leaves the datastore directory within it. The first root
// stays first (it is the repo, whose owner Confined gives files to).
func outermost(roots []string) []string {
	var out []string
	for _, r := range roots {
		if r == "" {
			continue
		}
		r = filepath.Clean(r)
		for {
			if _, err := (OS{}).Stat(r); err == nil || filepath.Dir(r) == r {
				break
			}
			r = filepath.Dir(r)
		}
		out = append(out, r)
	}
	var kept []string
	for i, r := range out {
		inOther := false
		for j, o := range out {
			if i != j && r != o && inside(o, r) {
				inOther = true
			}
		}
		if !inOther && !slices.Contains(kept, r) {
			kept = append(kept, r)
		}
	}
	return kept
}

// rootOf finds the root name lies in (the longest, so a datastore inside
// the repo is its own root) and name's path relative to it; ok is false
// for a path under none.
func rootOf(roots []string, name string) (root, rel string, ok bool) {
	name = filepath.Clean(name)
	for _, r := range roots {
		if name == r {
			if len(r) > len(root) {
				root, rel, ok = r, ".", true
			}
			continue
		}
		prefix := r
		if !strings.HasSuffix(prefix, string(filepath.Separator)) {
			prefix += string(filepath.Separator)
		}
		if strings.HasPrefix(name, prefix) && len(r) > len(root) {
			root, rel, ok = r, name[len(prefix):], true
		}
	}
	return root, rel, ok
}

// leavingLink finds, for an error report, the first symlink on the way
// from root down rel whose target leaves root (read with lstat and
// readlink through the plain disk: only to name it; the refusal itself was
// the kernel's). It returns "" when none is found (the path changed since).
func leavingLink(root, rel string) (link, target string) {
	cur := root
	parts := strings.Split(rel, string(filepath.Separator))
	for i, p := range parts {
		if p == "" || p == "." {
			continue
		}
		next := filepath.Join(cur, p)
		fi, err := OS{}.Lstat(next)
		if err != nil {
			return "", ""
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			t, err := OS{}.Readlink(next)
			if err != nil {
				return next, "?"
			}
			resolved := t
			if !filepath.IsAbs(t) {
				resolved = filepath.Join(cur, t)
			}
			if filepath.IsAbs(t) || !inside(root, resolved) {
				return next, t
			}
			// An inside link: follow it and go on from where it leads.
			rest := filepath.Join(append([]string{resolved}, parts[i+1:]...)...)
			if r, ok := strings.CutPrefix(rest, root+string(filepath.Separator)); ok {
				return leavingLink(root, r)
			}
			return "", ""
		}
		cur = next
	}
	return "", ""
}

func inside(root, p string) bool {
	p = filepath.Clean(p)
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
}

// readBounded reads f (named name) to its end, refusing one larger than
// limit before reading it (by its size) or as soon as it grows past it.
func readBounded(f interface {
	io.Reader
	Stat() (fs.FileInfo, error)
}, name string, limit int64) ([]byte, error) {
	size := int64(512)
	if st, err := f.Stat(); err == nil {
		if st.Size() > limit {
			return nil, &TooLargeError{Path: name, Size: st.Size(), Limit: limit}
		}
		size = max(st.Size()+1, 512) // one more, so that EOF needs no growing (as os.ReadFile)
	}
	data := make([]byte, 0, size)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if int64(len(data)) > limit {
			return nil, &TooLargeError{Path: name, Size: int64(len(data)), Limit: limit}
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return data, &fs.PathError{Op: "read", Path: name, Err: unwrapPathErr(err)}
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}
