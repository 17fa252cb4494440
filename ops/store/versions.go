package store

import (
	"io"
	"io/fs"
	"sort"

	"github.com/swampj/swampj/fsx"
)

// latestName is the pointer file beside the version directories (swamp-format §2.5).
const latestName = "latest"

// VersionDir is one directory of a data item that swamp's listVersions counts
// as a version (swamp-format §2.7.1): a real directory (not a symlink), not named `latest`,
// whose name parseInt reads as a number > 0.
type VersionDir struct {
	// Name is the directory name as it is on disk.
	Name string
	// Number is parseInt(Name): "2-old" and "02" are both 2.
	Number int64
	// Canonical is true when Name is exactly how swamp writes Number (plain
	// decimal, no sign, no leading zero), i.e. the directory that
	// {itemDir}/{Number} names. A non-canonical directory is never read as a
	// version, but swamp still counts it when it allocates and when `latest`
	// falls back to the highest version (swamp-format §9.7).
	Canonical bool
}

// VersionDirs lists every directory of itemDir that swamp counts as a
// version, sorted by Number then Name. A writer allocates above the highest
// Number of all of them, canonical or not, so it never reuses a number swamp
// would see; crash remnants (empty, metadata-only), uncommitted deferred
// versions and streaming versions are all here (swamp-format §9.8). Dot-directories (swampj's
// staging, swamp's temp files) never parse as numbers, so they are not.
func VersionDirs(fsys fsx.FS, itemDir string) ([]VersionDir, error) {
	fsys = fsx.OrReal(fsys)
	entries, err := fsys.ReadDir(itemDir)
	if err != nil {
		return nil, err
	}
	return versionDirsOf(entries), nil
}

// ListVersions is swamp's listVersions (swamp-format §2.7.1): the Number of every
// VersionDirs entry, ascending. Like swamp it keeps duplicates ("2" and
// "2-old" give 2 twice).
func ListVersions(fsys fsx.FS, itemDir string) ([]int64, error) {
	fsys = fsx.OrReal(fsys)
	dirs, err := VersionDirs(fsys, itemDir)
	if err != nil {
		return nil, err
	}
	return numbersOf(dirs), nil
}

// versionDirsOf applies the listVersions rule to an item directory's listing.
// The DirEntry type is enough: swamp tests the entry type too, so a symlink
// named "3" is not a version even when it points at a directory.
func versionDirsOf(entries []fs.DirEntry) []VersionDir {
	var dirs []VersionDir
	for _, e := range entries {
		if !e.IsDir() || e.Name() == latestName {
			continue
		}
		n, ok := parseIntJS(e.Name())
		if !ok || n <= 0 {
			continue
		}
		dirs = append(dirs, VersionDir{Name: e.Name(), Number: n, Canonical: e.Name() == versionName(n)})
	}
	sort.Slice(dirs, func(i, j int) bool {
		if dirs[i].Number != dirs[j].Number {
			return dirs[i].Number < dirs[j].Number
		}
		return dirs[i].Name < dirs[j].Name
	})
	return dirs
}

func numbersOf(dirs []VersionDir) []int64 {
	ns := make([]int64, len(dirs))
	for i, d := range dirs {
		ns[i] = d.Number
	}
	return ns
}

// NextVersion is one above the highest Number among VersionDirs (1 for an
// item without versions): the number a writer allocates first. It reads
// the directory without sorting or keeping its entries, because a writer
// runs it (twice, see ops.writeOverlapped) on every write, and an item
// with hundreds of versions made the sorted listing a visible share of
// one write's time.
func NextVersion(fsys fsx.FS, itemDir string) (int64, error) {
	fsys = fsx.OrReal(fsys)
	f, err := fsys.Open(itemDir)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	rd, ok := f.(interface {
		ReadDir(n int) ([]fs.DirEntry, error)
	})
	if !ok { // a file system whose files cannot list: the sorted way
		dirs, err := VersionDirs(fsys, itemDir)
		if err != nil || len(dirs) == 0 {
			return 1, err
		}
		return dirs[len(dirs)-1].Number + 1, nil
	}
	highest := int64(0)
	for {
		entries, err := rd.ReadDir(256)
		for _, e := range entries {
			if !e.IsDir() || e.Name() == latestName {
				continue
			}
			if n, ok := parseIntJS(e.Name()); ok && n > highest {
				highest = n
			}
		}
		if err == io.EOF {
			return highest + 1, nil
		}
		if err != nil {
			return 0, err
		}
	}
}
