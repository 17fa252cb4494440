package store

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj/fsx"
)

// PointerRule says which step of swamp's getLatestVersion (swamp-format §2.5) decided the
// latest version.
type PointerRule int

const (
	// PointerNone: no `latest` could be parsed and there is no version
	// directory; swamp reports "no data".
	PointerNone PointerRule = iota
	// PointerFile: `latest` read as text, trimmed, parseInt gave a number.
	PointerFile
	// PointerSymlink: `latest` is a legacy symlink whose target (one trailing
	// "/" removed) parseInt reads as a number.
	PointerSymlink
	// PointerFallback: `latest` is absent or unparsable (a zero-byte file
	// included), so the highest ListVersions number is used.
	PointerFallback
)

func (r PointerRule) String() string {
	switch r {
	case PointerFile:
		return "file"
	case PointerSymlink:
		return "symlink"
	case PointerFallback:
		return "fallback"
	default:
		return "none"
	}
}

// Pointer is what `latest` designates and how that was decided.
type Pointer struct {
	Rule PointerRule
	// Version is the designated version; 0 with PointerNone. With PointerFile
	// it is whatever parseInt gave, so "0" or "-3" come back as 0 or -3: swamp
	// uses such a number as is and finds nothing. A number beyond
	// ±MaxVersion comes back as 0 with OutOfRange set.
	Version int64
	// Present is true when an entry named `latest` exists (file, symlink,
	// even a directory), so a caller can tell "absent" from "unparsable".
	Present bool
	// Raw is the content of `latest` when it could be read as a file (through
	// a symlink too); nil otherwise. Empty but non-nil for a zero-byte file.
	Raw []byte
	// LinkTarget is the target of a symlink `latest`, as stored.
	LinkTarget string
	// OutOfRange is the number parseInt read (sign and digits, as found)
	// when it is beyond ±MaxVersion; Version is then 0. swamp reads such a
	// number inexactly (a JavaScript double), finds no version under it and
	// reports no data: it is damage, reported with this text, never clamped.
	OutOfRange string
}

// ReadLatest resolves `latest` in itemDir exactly as swamp does (swamp-format §2.5, §9.16):
//
//  1. read as text, trim, parseInt: "12", "12\n", " 12" and "12abc" are 12;
//  2. else read it as a symlink and parseInt the target without one trailing
//     "/" ("3" and "3/" are 3);
//  3. else the highest ListVersions number;
//  4. else none.
//
// Like swamp, a failure to read `latest` (permission, a directory) falls
// through to the next step. The error is non-nil only when step 3 cannot list
// itemDir (it wraps fs.ErrNotExist for a missing item).
func ReadLatest(fsys fsx.FS, itemDir string) (Pointer, error) {
	fsys = fsx.OrReal(fsys)
	return readLatest(fsys, itemDir, nil, nil)
}

// readLatest is ReadLatest with the item directory's listing when the caller
// already has it (ScanItem): an absent `latest` then costs no syscall and the
// fallback needs no second ReadDir. With dir (the item directory, open),
// `latest` is read relative to it.
func readLatest(fsys fsx.FS, itemDir string, listing *[]fs.DirEntry, dir *fsx.Dir) (Pointer, error) {
	var p Pointer
	path := filepath.Join(itemDir, latestName)
	if listing == nil || hasEntry(*listing, latestName) {
		var data []byte
		var err error
		if dir != nil {
			data, err = dir.ReadFile(latestName)
		} else {
			data, err = fsys.ReadFile(path)
		}
		switch {
		case err == nil:
			p.Present = true
			p.Raw = data
			if data == nil {
				p.Raw = []byte{}
			}
			if n, text, ok, big := parseIntJSText(trimJS(string(data))); ok {
				p.Rule, p.Version = PointerFile, n
				if big {
					p.OutOfRange = text
				}
				return p, nil
			}
		case !errors.Is(err, fs.ErrNotExist):
			p.Present = true // it is there but not a readable file
		}
		if target, err := fsys.Readlink(path); err == nil {
			p.Present = true
			p.LinkTarget = target
			if n, text, ok, big := parseIntJSText(strings.TrimSuffix(target, "/")); ok {
				p.Rule, p.Version = PointerSymlink, n
				if big {
					p.OutOfRange = text
				}
				return p, nil
			}
		}
	}

	var dirs []VersionDir
	if listing != nil {
		dirs = versionDirsOf(*listing)
	} else {
		var err error
		if dirs, err = VersionDirs(fsys, itemDir); err != nil {
			return p, err
		}
	}
	if len(dirs) > 0 {
		p.Rule, p.Version = PointerFallback, dirs[len(dirs)-1].Number
	}
	return p, nil
}

func hasEntry(entries []fs.DirEntry, name string) bool {
	for _, e := range entries {
		if e.Name() == name {
			return true
		}
	}
	return false
}
