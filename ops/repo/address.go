package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/jsfmt"
)

// Address names one data item: TYPE/MODEL_ID/DATA_NAME (swamp-format §2.1). Type is
// normalised ("/"-separated, lowercase); ModelID and DataName are verbatim.
type Address struct {
	Type     string
	ModelID  string
	DataName string
}

// String is the canonical TYPE/MODEL_ID/DATA_NAME form.
func (a Address) String() string { return a.Type + "/" + a.ModelID + "/" + a.DataName }

// TypeSegments are the directory levels of the type.
func (a Address) TypeSegments() []string { return strings.Split(a.Type, "/") }

// whitespaceRun is JavaScript's \s (ECMAScript WhiteSpace and
// LineTerminator), wider than RE2's ASCII-only \s.
var whitespaceRun = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[\t\n\v\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]+`)
})
var slashRun = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/+`) })

// NormalizeType is swamp's ModelType normalisation (model_type.ts:40-86,
// swamp-format §2.2): trim, lowercase (JavaScript's toLowerCase, jsfmt.ToLower), "::" → "/", whitespace runs → "/", "." → "/",
// collapse repeated "/", strip leading and trailing "/". A single ":" is
// kept, and so is "@". The result is used verbatim as a relative path, one
// directory per segment.
func NormalizeType(t string) string {
	t = jsfmt.ToLower(jsTrim(t)) // toLowerCase: İ → i̇, final Σ → ς (not Go's rules)
	t = strings.ReplaceAll(t, "::", "/")
	t = whitespaceRun().ReplaceAllString(t, "/")
	t = strings.ReplaceAll(t, ".", "/")
	t = slashRun().ReplaceAllString(t, "/")
	return strings.Trim(t, "/")
}

// ParseAddress parses TYPE/MODEL_ID/DATA_NAME. TYPE may itself contain "/"
// (scoped types such as @acme/scanner): the last two segments are the model
// id and the data name, everything before them is the type, which is then
// normalised. Refused: an empty part, NUL or "\" anywhere, a model id of "."
// or "..", and a data name that swamp refuses (contains "..", is "latest" in
// any case, swamp-format §2.2) or that would not name its own directory ("." and the
// per-model lock file name ".lock", swamp-format §9.23).
func ParseAddress(s string) (Address, error) {
	bad := func(msg string) (Address, error) { return Address{}, &AddressError{Input: s, Msg: msg} }
	if strings.ContainsRune(s, 0) {
		return bad("contains a NUL byte")
	}
	if strings.ContainsRune(s, '\\') {
		return bad(`contains "\"; use "/" between parts`)
	}
	last := strings.LastIndexByte(s, '/')
	if last < 0 {
		return bad("missing model id and data name")
	}
	prev := strings.LastIndexByte(s[:last], '/')
	if prev < 0 {
		return bad("missing the type or the model id")
	}
	rawType, modelID, dataName := s[:prev], s[prev+1:last], s[last+1:]
	if modelID == "" {
		return bad("empty model id")
	}
	if modelID == "." || modelID == ".." {
		return bad(fmt.Sprintf("model id %q is not a directory name", modelID))
	}
	if err := checkDataName(dataName); err != nil {
		return bad(err.Error())
	}
	for _, seg := range strings.Split(rawType, "/") {
		if seg == ".." {
			return bad(`".." is not allowed in the type`)
		}
	}
	typ := NormalizeType(rawType)
	if typ == "" {
		return bad("empty type")
	}
	return Address{Type: typ, ModelID: modelID, DataName: dataName}, nil
}

// checkDataName applies swamp's data-name rules (data_metadata.ts:122-130,
// data.ts:36-45): non-empty, no "..", "/", "\" or NUL, not "latest" in any
// case. swampj also refuses "." (it would name the model directory) and
// ".lock" (the per-model lock file lives there, swamp-format §9.23).
func checkDataName(name string) error {
	switch {
	case name == "":
		return errors.New("empty data name")
	case strings.Contains(name, ".."):
		return errors.New(`data name must not contain ".."`)
	case strings.ContainsAny(name, "/\\\x00"):
		return errors.New(`data name must not contain "/", "\" or NUL`)
	case jsfmt.ToLower(name) == "latest": // toLowerCase, not case folding: "lateſt" is allowed, as in swamp
		return fmt.Errorf("data name %q is reserved (it is the version pointer file)", name)
	case name == ".":
		return errors.New(`data name "." is not a directory name`)
	case name == ".lock":
		return errors.New(`data name ".lock" is reserved for the per-model lock file`)
	}
	return nil
}

// ModelDir is DataRoot/{type…}/{modelId}. It is lexical; use ItemDir (or
// CheckInsideDataRoot) before writing below it.
func (r *Repo) ModelDir(a Address) string {
	return filepath.Join(r.DataRoot, filepath.FromSlash(a.Type), a.ModelID)
}

// ItemDir is DataRoot/{type…}/{modelId}/{dataName}, after checking that the
// part of that path which exists today stays inside the data root once
// symlinks are resolved (swamp's assertSafePath, swamp-format §2.6.2 step 4). A type,
// model or item directory that is a symlink pointing out of the data root
// yields an *OutsideDataRootError.
func (r *Repo) ItemDir(fsys fsx.FS, a Address) (string, error) {
	fsys = fsx.OrReal(fsys)
	p := filepath.Join(r.ModelDir(a), a.DataName)
	if err := r.CheckInsideDataRoot(fsys, p); err != nil {
		return "", err
	}
	return p, nil
}

// CheckInsideDataRoot verifies that p, a path lexically below DataRoot,
// stays below it after resolving symlinks in its deepest existing ancestor.
// The data root itself may be (or sit under) a symlink: both sides are
// resolved before comparing.
func (r *Repo) CheckInsideDataRoot(fsys fsx.FS, p string) error {
	fsys = fsx.OrReal(fsys)
	p = filepath.Clean(p)
	root := filepath.Clean(r.DataRoot)
	if !within(root, p) {
		return &OutsideDataRootError{Path: p, Resolved: p, Root: root}
	}
	realRoot, err := resolveExisting(fsys, root)
	if err != nil {
		return err
	}
	realPath, err := resolveExisting(fsys, p)
	if err != nil {
		return err
	}
	if !within(realRoot, realPath) {
		return &OutsideDataRootError{Path: p, Resolved: realPath, Root: realRoot}
	}
	return nil
}

// resolveExisting resolves symlinks in the deepest ancestor of p that exists
// (p itself if it does) and appends the part that does not exist yet, which
// cannot contain symlinks. A dangling symlink cannot be proven safe, so it
// is an error. An ancestor that goes between the look and the resolve (a
// migration moving the directory away) is looked for again: only a link
// that stays dangling is one.
func resolveExisting(fsys fsx.FS, p string) (string, error) {
	for attempt := 1; ; attempt++ {
		real, err := resolveExistingOnce(fsys, p)
		if err == nil || attempt == 3 || !errors.Is(err, fs.ErrNotExist) {
			return real, err
		}
	}
}

func resolveExistingOnce(fsys fsx.FS, p string) (string, error) {
	existing, rest := p, ""
	for {
		_, err := fsys.Lstat(existing)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("checking %s: %w", existing, err)
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break // nothing exists, not even the root of the volume
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := fsys.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("cannot resolve %s (a dangling symlink?): %w; remove or fix the link", existing, err)
	}
	return filepath.Join(real, rest), nil
}

// within reports whether p is root or below it (both clean, absolute).
func within(root, p string) bool {
	if p == root {
		return true
	}
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator)
	}
	return strings.HasPrefix(p, root)
}
