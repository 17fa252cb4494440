package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/swampj/swampj/fsx"
)

// Held is a live per-model lock.
type Held struct {
	Path    string
	Type    string // normalised, "/"-separated
	ModelID string
	Info    Info
}

// LiveModelLocks finds the per-model locks a structural command must wait
// for (swamp's waitForPerModelLocks scan, repo_context.ts:876-945, swamp-format §8):
// files named .lock whose path relative to the base, after stripping
// "{ns}/", is data/<type…>/<modelId>/.lock. A lock is live when
// now − acquiredAt ≤ ttlMs — TTL only, no pid probe, so a foreign host's
// lock is respected — and its pid is not selfPid (SWAMP_LOCK_HOLDER_PID, 0
// for none). Unparseable lock files are skipped, as swamp skips them.
//
// swamp walks the whole base and filters by that rule; only {base}/{ns}/data
// and {base}/data can hold a match, so only they are walked. In namespaced
// mode {base}/data is walked too: swamp versions that kept per-model lock
// keys un-namespaced put a namespaced repo's locks there, and waiting for a
// lock that turns out to guard someone else's model costs only time.
// Symlinked directories are not followed.
func LiveModelLocks(fsys fsx.FS, base, ns string, now time.Time, selfPid int) ([]Held, error) {
	return LiveModelLocksSkipping(fsys, base, ns, now, func(i Info) bool { return selfPid != 0 && i.Pid == selfPid })
}

// LiveModelLocksSkipping is LiveModelLocks leaving out every lock skip
// accepts instead of a single pid: with Ancestry.Lends, the per-model locks
// of every swamp above this process under both versions' variables
// (swamp-format §13.5), as newer swamp's drain skips them. skip nil skips nothing.
func LiveModelLocksSkipping(fsys fsx.FS, base, ns string, now time.Time, skip func(Info) bool) ([]Held, error) {
	fsys = fsx.OrReal(fsys)
	roots := []string{filepath.Join(base, "data")}
	if ns != "" {
		roots = append([]string{filepath.Join(base, ns, "data")}, roots...)
	}
	var out []Held
	for _, root := range roots {
		err := walkModelLocks(fsys, root, nil, func(path string, typeSegs []string, modelID string) error {
			data, err := fsys.ReadFile(path)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // released while we walked
				}
				return fmt.Errorf("reading model lock %s: %w", path, err)
			}
			info, err := DecodeInfo(data)
			if err != nil {
				return nil
			}
			if now.Sub(info.AcquiredAt) > info.TTL() || (skip != nil && skip(info)) {
				return nil
			}
			out = append(out, Held{Path: path, Type: strings.Join(typeSegs, "/"), ModelID: modelID, Info: info})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// walkModelLocks calls fn for every regular file named .lock at least two
// directory levels below root (one type segment and the model id).
func walkModelLocks(fsys fsx.FS, dir string, segs []string, fn func(path string, typeSegs []string, modelID string) error) error {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // no data root yet, or removed while we walked
		}
		return fmt.Errorf("scanning for model locks in %s: %w", dir, err)
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir():
			if err := walkModelLocks(fsys, p, append(segs[:len(segs):len(segs)], e.Name()), fn); err != nil {
				return err
			}
		case e.Name() == modelLockName && e.Type().IsRegular() && len(segs) >= 2:
			if err := fn(p, segs[:len(segs)-1], segs[len(segs)-1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// WaitNoLiveModelLocks polls LiveModelLocks every poll (default 1 s) until
// none is live, for at most timeout (default 60 s). On timeout it returns a
// *TimeoutError naming the first live holder.
func WaitNoLiveModelLocks(ctx context.Context, fsys fsx.FS, base, ns string, selfPid int, timeout, poll time.Duration) error {
	return WaitNoLiveModelLocksSkipping(ctx, fsys, base, ns, func(i Info) bool { return selfPid != 0 && i.Pid == selfPid }, timeout, poll)
}

// WaitNoLiveModelLocksSkipping is WaitNoLiveModelLocks with
// LiveModelLocksSkipping's skip.
func WaitNoLiveModelLocksSkipping(ctx context.Context, fsys fsx.FS, base, ns string, skip func(Info) bool, timeout, poll time.Duration) error {
	fsys = fsx.OrReal(fsys)
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if poll <= 0 {
		poll = time.Second
	}
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		held, err := LiveModelLocksSkipping(fsys, base, ns, time.Now(), skip)
		if err != nil {
			return err
		}
		if len(held) == 0 {
			return nil
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return &TimeoutError{Path: held[0].Path, Holder: &held[0].Info, Waited: time.Since(start)}
		}
		if err := sleep(ctx, min(poll, remaining)); err != nil {
			return fmt.Errorf("waiting for model lock %s: %w", held[0].Path, err)
		}
	}
}

// LentBy reports whether the lock at path is held, unexpired, by pid — the
// process named by SWAMP_LOCK_HOLDER_PID, which lent its locks to this one
// (a swamp command running swampj under a lock it already holds). Such a
// lock is used as it is: not waited for, not taken over, not removed.
func LentBy(fsys fsx.FS, path string, pid int, now time.Time) bool {
	fsys = fsx.OrReal(fsys)
	if pid == 0 {
		return false
	}
	data, err := fsys.ReadFile(path)
	if err != nil {
		return false
	}
	info, err := DecodeInfo(data)
	return err == nil && info.Pid == pid && now.Sub(info.AcquiredAt) <= info.TTL()
}

// Dead reports whether nobody holds the lock file at path: it is missing,
// or stale by the rules Acquire takes a lock over by (past its TTL; taken
// on this host by a process that is gone; unparseable and untouched for a
// TTL). A dead lock file is debris, not a holder.
func Dead(fsys fsx.FS, path string) (bool, error) {
	fsys = fsx.OrReal(fsys)
	o, err := observe(fsys, path)
	if err != nil {
		return false, err
	}
	return o.missing || isStale(path, o, Options{}.withDefaults()), nil
}

// Free reports whether the lock at path has no live holder other than the
// process lender (SWAMP_LOCK_HOLDER_PID, 0 for none): it is missing, dead
// (see Dead) or lent. A lock this very process holds is not free: a
// long-lived tool may run a migration and writes side by side.
func Free(fsys fsx.FS, path string, lender int) (bool, error) {
	fsys = fsx.OrReal(fsys)
	o, err := observe(fsys, path)
	if err != nil {
		return false, err
	}
	return free(path, o, lender, Options{}.withDefaults()), nil
}

func free(path string, o observed, lender int, opts Options) bool {
	switch {
	case o.missing || isStale(path, o, opts):
		return true
	case o.info == nil:
		return false // a fresh unparseable file: a holder between create and write
	}
	return lender != 0 && o.info.Pid == lender && !o.info.Expired(opts.Now())
}

// WaitFree waits, polling every 100 ms for at most timeout (default 60 s),
// until the lock at path is Free, without taking it: what a swamp writer
// does with the global datastore lock before its per-model locks
// (acquireModelLocks). On timeout it returns a *TimeoutError naming the
// holder.
func WaitFree(ctx context.Context, fsys fsx.FS, path string, timeout time.Duration, lender int) error {
	fsys = fsx.OrReal(fsys)
	opts := Options{Timeout: timeout}.withDefaults()
	start := time.Now()
	deadline := start.Add(opts.Timeout)
	for {
		o, err := observe(fsys, path)
		if err != nil {
			return fmt.Errorf("reading lock %s: %w", path, err)
		}
		if free(path, o, lender, opts) {
			return nil
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return &TimeoutError{Path: path, Holder: o.info, Waited: time.Since(start)}
		}
		if err := sleep(ctx, min(100*time.Millisecond, remaining)); err != nil {
			return fmt.Errorf("waiting for lock %s: %w", path, err)
		}
	}
}

// ParseGlobalPath is GlobalPath backwards: the base and namespace a global
// lock path belongs to (ok=false: not a global lock path).
func ParseGlobalPath(path string) (base, ns string, ok bool) {
	dir, name := filepath.Split(filepath.Clean(path))
	dir = filepath.Clean(dir)
	switch {
	case name == globalSoloName:
		return dir, "", true
	case filepath.Base(dir) == locksDirName && strings.HasSuffix(name, ".lock") && len(name) > len(".lock"):
		return filepath.Dir(dir), strings.TrimSuffix(name, ".lock"), true
	}
	return "", "", false
}
