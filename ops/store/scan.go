package store

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/swampj/swampj/fsx"
)

// ItemState is everything ScanItem learned about one data item.
type ItemState struct {
	Item    Item
	Pointer Pointer
	// Entries is the item directory's listing as ScanItem read it (sorted
	// by name, as fsx.FS.ReadDir returns it); do not modify.
	Entries []fs.DirEntry
	// Dirs is every directory swamp counts as a version (VersionDirs).
	Dirs []VersionDir
	// Versions holds each canonical version directory, checked, ascending.
	Versions []*Version
	// Latest is the version Pointer designates, whatever its state (it can be
	// StateMissing); nil when the pointer designates nothing usable.
	Latest *Version
	// LatestReadable is Latest when it is readable: what swamp serves.
	LatestReadable *Version
	// HighestReadable is the readable version with the highest number, which
	// may be above Latest (an uncommitted deferred write, swamp-format §9.8).
	HighestReadable *Version
	// LastGood is the highest readable version not above the one the pointer
	// designates: what a repair rolls `latest` back to. Versions above it are
	// left out because they may be uncommitted deferred writes (swamp-format §9.8). nil when
	// the pointer designates no positive version or nothing at or below it is
	// readable.
	LastGood *Version
	// Problems is every finding for the item: its own (the pointer,
	// non-canonical directories) first, then each version's, ascending.
	Problems []Problem
}

// ScanItem reads one item's pointer and checks every version. It is what
// catalog rebuild, verify and the doctor run over whole data roots, so by
// default it costs one ReadDir of the item directory, a read of `latest`,
// and per version one read of metadata.yaml and one stat of raw; only
// opts.VerifyChecksum reads content. Items with many versions are checked by
// several goroutines, so fsys must be safe for concurrent reads (fsx.Real and
// fsx.Fault are). The error is non-nil only when the item directory cannot be
// listed; everything else is a Problem.
func ScanItem(fsys fsx.FS, item Item, opts CheckOptions) (*ItemState, error) {
	fsys = fsx.OrReal(fsys)
	// Listed and kept open: each version's raw is stat'ed relative to the
	// item directory (fsx.Dir), not by its whole path.
	dir, err := fsx.OpenDir(fsys, item.Dir)
	if err != nil {
		return nil, fmt.Errorf("store: scan %s: %w", item.Dir, err)
	}
	defer dir.Close()
	entries := dir.Entries()
	st := &ItemState{Item: item, Entries: entries, Dirs: versionDirsOf(entries)}
	if st.Pointer, err = readLatest(fsys, item.Dir, &entries, dir); err != nil {
		return nil, err // unreachable with a listing; kept for safety
	}

	latestPath := filepath.Join(item.Dir, latestName)
	st.pointerProblems(latestPath)
	for _, e := range entries {
		if _, text, ok, big := parseIntJSText(e.Name()); e.IsDir() && ok && big && text[0] != '-' {
			st.Problems = append(st.Problems, Problem{Code: CodeVersionDirBeyondMax, Path: filepath.Join(item.Dir, e.Name()),
				Message: fmt.Sprintf("directory %q is a version number beyond %d to swamp, which no version can be: it is never read as one, and swamp's next write to the item fails", e.Name(), MaxVersion)})
		}
	}
	var canonical []int64
	for _, d := range st.Dirs {
		if d.Canonical {
			canonical = append(canonical, d.Number)
			continue
		}
		st.Problems = append(st.Problems, Problem{
			Code: CodeNonCanonicalVersionDir, Path: filepath.Join(item.Dir, d.Name),
			Message: fmt.Sprintf("directory %q is counted as version %d by swamp but is never read as one", d.Name, d.Number),
		})
	}
	st.Versions = readVersions(fsys, item.Dir, dir, canonical, opts)

	// The designated version, read even when it has no listed directory (a
	// vanished one, or a symlink, which readVersion reports as damaged: see
	// Walk), since that is what swamp would try.
	if p := st.Pointer.Version; p > 0 {
		st.Latest = st.version(p)
		if st.Latest == nil {
			st.Latest = readVersion(fsys, item.Dir, p, opts)
		}
		switch {
		case st.Latest.State == StateMissing:
			st.Problems = append(st.Problems, Problem{Code: CodeLatestNotFound, Path: latestPath,
				Message: fmt.Sprintf("latest designates version %d, which has no directory; swamp reports no data for the item", p)})
		case !st.Latest.Readable():
			st.Problems = append(st.Problems, Problem{Code: CodeLatestUnreadable, Path: latestPath,
				Message: fmt.Sprintf("latest designates version %d, which is %s (%s)", p, st.Latest.State, CodesOf(st.Latest.Problems))})
		default:
			st.LatestReadable = st.Latest
		}
	}
	if len(st.Dirs) == 0 && !st.Pointer.Present {
		st.Problems = append(st.Problems, Problem{Code: CodeNoVersions, Path: item.Dir,
			Message: "the item has no version directory and no latest"})
	}

	for _, v := range st.Versions {
		if !v.Readable() {
			st.Problems = append(st.Problems, v.Problems...)
			continue
		}
		st.HighestReadable = v
		if st.Pointer.Version > 0 && v.Number <= st.Pointer.Version || st.Pointer.pointsAbove() {
			st.LastGood = v
		}
	}
	return st, nil
}

// pointerProblems records what is wrong with `latest` itself.
func (st *ItemState) pointerProblems(latestPath string) {
	p := st.Pointer
	fallback := "swamp uses the highest version directory instead"
	if p.Rule == PointerFallback {
		fallback = fmt.Sprintf("swamp uses the highest version directory, %d, instead", p.Version)
	}
	switch {
	case !p.Present:
		if len(st.Dirs) > 0 {
			st.Problems = append(st.Problems, Problem{Code: CodeLatestMissing, Path: latestPath,
				Message: "latest does not exist; " + fallback})
		}
	case (p.Rule == PointerFile || p.Rule == PointerSymlink) && p.OutOfRange != "":
		st.Problems = append(st.Problems, Problem{Code: CodeLatestInvalid, Path: latestPath,
			Message: fmt.Sprintf("latest holds %s, a version number beyond %d (JavaScript's largest exact integer and the largest version swamp's schema allows); "+
				"swamp reads it inexactly, finds no such version and reports no data for the item", quoteShort([]byte(p.OutOfRange)), MaxVersion)})
	case p.Rule == PointerFile || p.Rule == PointerSymlink:
		if p.Version <= 0 {
			st.Problems = append(st.Problems, Problem{Code: CodeLatestInvalid, Path: latestPath,
				Message: fmt.Sprintf("latest designates version %d, which cannot exist; swamp reports no data for the item", p.Version)})
		}
	case p.Raw != nil && len(p.Raw) == 0:
		st.Problems = append(st.Problems, Problem{Code: CodeLatestEmpty, Path: latestPath,
			Message: "latest is zero bytes; " + fallback})
	case p.Raw != nil && trimJS(string(p.Raw)) == "":
		st.Problems = append(st.Problems, Problem{Code: CodeLatestEmpty, Path: latestPath,
			Message: "latest holds only whitespace; " + fallback})
	default:
		what := "latest cannot be read"
		switch {
		case p.Raw != nil:
			what = fmt.Sprintf("latest holds %s, not a version number", quoteShort(p.Raw))
		case p.LinkTarget != "":
			what = fmt.Sprintf("latest is a symlink to %q, not to a version", p.LinkTarget)
		}
		st.Problems = append(st.Problems, Problem{Code: CodeLatestUnparsable, Path: latestPath,
			Message: what + "; " + fallback})
	}
}

// version returns the checked canonical version n, or nil.
func (st *ItemState) version(n int64) *Version {
	i := sort.Search(len(st.Versions), func(i int) bool { return st.Versions[i].Number >= n })
	if i < len(st.Versions) && st.Versions[i].Number == n {
		return st.Versions[i]
	}
	return nil
}

// versionsPerWorker is how many versions make another goroutine worth it.
const versionsPerWorker = 64

// readVersions checks versions nums (positive, ascending) and returns them in
// the same order. Checks are independent and cost a metadata decode (CPU)
// plus two small file operations (latency on a cold or network disk), so an
// item with many versions spreads them over up to GOMAXPROCS goroutines.
func readVersions(fsys fsx.FS, itemDir string, dir *fsx.Dir, nums []int64, opts CheckOptions) []*Version {
	out := make([]*Version, len(nums))
	paths := newItemPaths(itemDir)
	paths.open = dir
	workers := min(runtime.GOMAXPROCS(0), len(nums)/versionsPerWorker)
	if workers <= 1 {
		for i, n := range nums {
			out[i] = paths.readVersion(fsys, n, opts)
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(nums); i = int(next.Add(1) - 1) {
				out[i] = paths.readVersion(fsys, nums[i], opts)
			}
		})
	}
	wg.Wait()
	return out
}

// CodesOf lists the problems' codes, comma separated, for a message.
func CodesOf(ps []Problem) string {
	codes := make([]string, len(ps))
	for i, p := range ps {
		codes[i] = string(p.Code)
	}
	return strings.Join(codes, ", ")
}

// quoteShort quotes at most 40 bytes of b for a message.
func quoteShort(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%q…", b[:40])
	}
	return fmt.Sprintf("%q", b)
}

// pointsAbove reports whether the pointer holds a positive number beyond
// MaxVersion: every version is below it.
func (p Pointer) pointsAbove() bool { return p.OutOfRange != "" && p.OutOfRange[0] != '-' }
