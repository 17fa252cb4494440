//go:build unix

package fsx

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestDescribeAccessNamesWhatRefusedAndWho(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "_journal.db")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	uid := fmt.Sprintf("uid %d", os.Geteuid())

	// An existing file that refused: the file itself.
	a := DescribeAccess(fmt.Errorf("taking the lock: %w", &fs.PathError{Op: "open", Path: file, Err: syscall.EACCES}))
	if a == nil || a.Path != file || a.Mode.Perm() != 0o640 || !strings.Contains(a.Owner, uid) || !strings.Contains(a.User, uid) {
		t.Fatalf("existing file: %+v", a)
	}
	if s := a.String(); !strings.Contains(s, "the file "+file+" is -rw-r-----") || !strings.Contains(s, "this process runs as") {
		t.Fatalf("description: %q", s)
	}

	// A file that could not be created: the nearest directory that exists.
	a = DescribeAccess(&fs.PathError{Op: "open", Path: filepath.Join(dir, "missing", ".tmp"), Err: syscall.EPERM})
	if a == nil || a.Path != dir || !a.Mode.IsDir() || !strings.HasPrefix(a.String(), "the directory "+dir+" is d") {
		t.Fatalf("missing file: %+v", a)
	}

	// Not a permission error: nothing to describe.
	if a := DescribeAccess(&fs.PathError{Op: "open", Path: file, Err: syscall.ENOSPC}); a != nil {
		t.Fatalf("ENOSPC described: %+v", a)
	}
}
