package migrate

// Counting what a migration moves (files, bytes, lock files on the way), on a few
// goroutines, and the same-device check of each move.

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/fsx"
)

func existingAncestor(fsys fsx.FS, path string) string {
	for {
		if _, err := fsys.Lstat(path); err == nil {
			return path
		}
		parent := filepath.Dir(path)
		if parent == path {
			return path
		}
		path = parent
	}
}

// modelLockName is the file name of swamp's per-model locks (swamp-format §8).
const modelLockName = ".lock"

// countTrees counts the non-directory entries below each root (a root that
// is itself a file counts as one) and their sizes, without following
// symlinks, and lists the files named like a per-model lock on the way.
// Directories are spread over a few goroutines: it is the only walk a plan
// makes of data it moves whole, and on a large datastore it dominates.
func countTrees(ctx context.Context, fsys fsx.FS, roots []string, walked *report.Counter) (files, bytes []int64, locks []string, err error) {
	files, bytes = make([]int64, len(roots)), make([]int64, len(roots))
	var firstErr atomic.Pointer[error]
	fail := func(e error) { firstErr.CompareAndSwap(nil, &e) }
	var locksMu sync.Mutex
	workers := make(chan struct{}, 4*runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	isRoot := map[string]bool{}
	for _, r := range roots {
		isRoot[r] = true
	}
	var walk func(i int, dir string)
	walk = func(i int, dir string) {
		if firstErr.Load() != nil || ctx.Err() != nil {
			return
		}
		ents, err := fsys.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) && !isRoot[dir] {
			return // removed since its parent was listed (a writer's staging): nothing to move
		}
		if err != nil {
			fail(err)
			return
		}
		var n, size int64
		for _, e := range ents {
			path := filepath.Join(dir, e.Name())
			if e.IsDir() {
				select {
				case workers <- struct{}{}:
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer func() { <-workers }()
						walk(i, path)
					}()
				default:
					walk(i, path)
				}
				continue
			}
			fi, err := fsys.Lstat(path)
			if errors.Is(err, fs.ErrNotExist) {
				// Removed since the listing: a writer's lock released, its
				// temp file renamed. Not there to move, so not counted.
				continue
			}
			if err != nil {
				fail(err)
				return
			}
			n++
			size += fi.Size()
			if e.Name() == modelLockName {
				locksMu.Lock()
				locks = append(locks, path)
				locksMu.Unlock()
			}
		}
		atomic.AddInt64(&files[i], n)
		atomic.AddInt64(&bytes[i], size)
		walked.Add(n)
	}
	for i, root := range roots {
		fi, err := fsys.Lstat(root)
		if err != nil {
			return nil, nil, nil, err
		}
		if !fi.IsDir() {
			files[i], bytes[i] = 1, fi.Size()
			if filepath.Base(root) == modelLockName {
				locks = append(locks, root)
			}
			continue
		}
		walk(i, root)
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return nil, nil, nil, *e
	}
	return files, bytes, locks, ctx.Err()
}

// checkSameDevice refuses before anything is journaled when a rename would
// cross file systems (it would fail with EXDEV half way through).
func (p *migrationPlanner) checkSameDevice(src, dst string) error {
	target := existingAncestor(p.fsys, dst)
	same, err := sameDevice(p.fsys, src, target)
	if err != nil {
		return err
	}
	if !same {
		return &CrossDeviceError{Source: src, Destination: dst}
	}
	return nil
}

// count adds up the files and bytes of every subtree that changes sides.
// The subtrees are walked in parallel: it is the only walk a plan makes of
// data it does not merge, and on a large datastore it dominates the run.
func (p *migrationPlanner) count() error {
	paths := make([]string, len(p.counted))
	for i, c := range p.counted {
		paths[i] = c.path
	}
	walked := &report.Counter{Progress: p.progress, Phase: "planning", Unit: "files"}
	files, bytes, locks, err := countTrees(p.ctx, p.fsys, paths, walked)
	if err != nil {
		return err
	}
	// The walk is over: now the total is known, and the last event of the
	// phase says it (done of total), not a count with no end.
	n := walked.Done()
	walked.Total = func() int64 { return n }
	walked.Report(n)
	p.plan.lockFiles = append(p.plan.lockFiles, locks...)
	for i, c := range p.counted {
		p.plan.moves[c.move].FileCount += files[i]
		p.plan.moves[c.move].TotalBytes += bytes[i]
	}
	return nil
}
