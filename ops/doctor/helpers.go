package doctor

// Small helpers shared by the check families.

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/ops/store"
)

func unlistable(path string, err error) Finding {
	return Finding{Code: CodeDirectoryUnreadable, Path: path, Message: err.Error(),
		Fix:    "make it readable for this user (nothing below it was checked), then check again",
		Remedy: report.RemedyFixAccess, Then: report.RemedyCheckAgain}
}

// splitErrors unwraps an errors.Join.
func splitErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func hasCode(ps []store.Problem, c store.Code) bool {
	for _, p := range ps {
		if p.Code == c {
			return true
		}
	}
	return false
}

func problemMessages(ps []store.Problem) string {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = strings.TrimPrefix(p.Message, fmt.Sprintf("version %s: ", filepath.Base(filepath.Dir(p.Path))))
	}
	return strings.Join(msgs, "; ")
}

func shortText(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// sameDir reports whether two paths name the same directory.
func sameDir(fsys fsx.FS, a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := fsys.EvalSymlinks(a)
	rb, err2 := fsys.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
