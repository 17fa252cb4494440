package doctor

// Small helpers shared by the check families.

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/ops/store"
)

func unlistable(path string, err error) Finding {
	if f, ok := outsideFinding(path, err); ok {
		return f
	}
	return Finding{Code: CodeDirectoryUnreadable, Path: path, Message: err.Error(),
		Fix:    "make it readable for this user (nothing below it was checked), then check again",
		Remedy: report.RemedyFixAccess, Then: report.RemedyCheckAgain}
}

// statErr is the error of fsys.Stat(path), nil when it succeeds.
func statErr(fsys fsx.FS, path string) error {
	_, err := fsys.Stat(path)
	return err
}

// isOutside reports whether err is the trust boundary's refusal.
func isOutside(err error) bool {
	var oe *fsx.OutsideError
	return errors.As(err, &oe)
}

// outsideFinding is path_outside_repo for a refusal of the trust boundary
// (fsx/confine.go): a symlink in the repo that leads elsewhere. Nothing
// behind it was checked or changed, and no repair touches it: only a
// person can say whether the place it names belongs to this repo.
func outsideFinding(path string, err error) (Finding, bool) {
	var oe *fsx.OutsideError
	if !errors.As(err, &oe) {
		return Finding{}, false
	}
	at := oe.Link
	if at == "" {
		at = oe.Path
	}
	if path == "" {
		path = at
	}
	msg := fmt.Sprintf("%s is a symlink to %s, outside the repo: swampj does not follow it, and nothing behind it was checked or changed", at, oe.Target)
	if oe.Link == "" {
		msg = fmt.Sprintf("%s is outside the repo: swampj does not act on it, and nothing there was checked or changed", at)
	}
	return Finding{Code: CodePathOutsideRepo, Path: path, Message: msg,
		Fix:    fmt.Sprintf("if %s is this repo's, move it into the repo in place of the link (or name it as the datastore's path in .swamp.yaml); otherwise remove the link", oe.Target),
		Remedy: report.RemedyInspect, Then: report.RemedyCheckAgain}, true
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
