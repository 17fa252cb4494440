package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Access describes a refused permission (EACCES, EPERM) for the person who
// must fix it: the file or directory that refused, its mode and owner, and
// the user the process runs as.
type Access struct {
	Path  string      `json:"path"`
	Mode  fs.FileMode `json:"mode"`
	Owner string      `json:"owner"` // "name:group (uid N, gid N)"
	User  string      `json:"user"`  // "name (uid N, gid N, groups a, b)"
}

// String is the description an error message carries.
func (a *Access) String() string {
	what := "file"
	if a.Mode.IsDir() {
		what = "directory"
	}
	return fmt.Sprintf("the %s %s is %v owned by %s, and this process runs as %s", what, a.Path, a.Mode, a.Owner, a.User)
}

// DescribeAccess returns what refused err, when err is a permission
// error naming a path: the path itself when it exists, else the nearest
// existing directory above it (a file that could not be created in it, or
// a directory that may not be searched). It only reads (stat). nil when
// err is not a permission error or names no path.
func DescribeAccess(err error) *Access {
	if !errors.Is(err, fs.ErrPermission) {
		return nil
	}
	var path string
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		path = pe.Path
	case errors.As(err, &le):
		path = le.New
	default:
		return nil
	}
	for p := path; ; p = filepath.Dir(p) {
		if a := AccessOf(p); a != nil {
			return a
		}
		if q := filepath.Dir(p); q == p {
			return nil
		}
	}
}

// AccessOf describes path (its mode and owner) and this process's user;
// nil when path cannot be looked at (stat).
func AccessOf(path string) *Access {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return &Access{Path: path, Mode: fi.Mode(), Owner: ownerOf(fi), User: currentUser()}
}
