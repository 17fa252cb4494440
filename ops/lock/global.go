package lock

// Both global locks of a namespaced datastore (swamp-format §13.2).
// swamp 06b6147 takes {base}/.locks/{ns}.lock; newer swamp
// (datastore_global_lock.ts @ 68a1128d) takes {base}/{ns}/.datastore.lock.
// Two swamp versions on one namespaced datastore therefore do not exclude
// each other, and a swampj structural change that took only one of them
// would not exclude the other version's writers. swampj takes both, always
// in the order GlobalPaths gives (06b6147's first), so two swampj processes
// never deadlock on them; swamp takes one of them only, so it cannot close
// a cycle either. Solo mode has one path, {base}/.datastore.lock, in both
// versions.

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/fsx"
)

// NewerGlobalPath is newer swamp's global lock: {base}/{ns}/.datastore.lock
// when namespaced, {base}/.datastore.lock solo (the same as GlobalPath).
func NewerGlobalPath(base, ns string) string {
	if ns == "" {
		return filepath.Join(base, globalSoloName)
	}
	return filepath.Join(base, ns, globalSoloName)
}

// GlobalPaths are every global lock file of the datastore at base with
// namespace ns, in acquisition order: solo, the one path both versions
// use; namespaced, 06b6147's {base}/.locks/{ns}.lock, then newer swamp's
// {base}/{ns}/.datastore.lock.
func GlobalPaths(base, ns string) []string {
	if ns == "" {
		return []string{GlobalPath(base, "")}
	}
	return []string{GlobalPath(base, ns), NewerGlobalPath(base, ns)}
}

// AcquireGlobal takes every global lock of the datastore (GlobalPaths), in
// order, waiting while any is held by another live process; opts.Timeout
// bounds the whole wait. On a timeout (a *TimeoutError naming the lock
// still held, exit 75 in the CLI) or any other error the locks already
// taken are released. The caller releases the result with ReleaseAll,
// which releases newest first, and may watch it with WatchLost.
func AcquireGlobal(ctx context.Context, fsys fsx.FS, base, ns string, opts Options) ([]*Lock, error) {
	fsys = fsx.OrReal(fsys)
	opts = opts.withDefaults()
	start := time.Now()
	deadline := start.Add(opts.Timeout)
	var held []*Lock
	for _, p := range GlobalPaths(base, ns) {
		o := opts
		o.Timeout = max(time.Until(deadline), time.Millisecond)
		l, err := Acquire(ctx, fsys, p, o)
		if err != nil {
			ReleaseAll(held, nil)
			if te, ok := err.(*TimeoutError); ok {
				te.Waited = time.Since(start)
			}
			return nil, err
		}
		held = append(held, l)
	}
	return held, nil
}

// GlobalFree reports whether no global lock of the datastore has a live
// holder other than lender (see Free): what a writer checks after taking
// its per-model locks.
func GlobalFree(fsys fsx.FS, base, ns string, lender int) (bool, error) {
	fsys = fsx.OrReal(fsys)
	for _, p := range GlobalPaths(base, ns) {
		free, err := Free(fsys, p, lender)
		if err != nil || !free {
			return false, err
		}
	}
	return true, nil
}

// WaitGlobalFree waits, for at most timeout in all, until every global
// lock of the datastore is free (WaitFree on each, in order, then a last
// look at all of them, since the first may have been taken while the
// second was waited for). On timeout it returns a *TimeoutError naming the
// lock still held.
func WaitGlobalFree(ctx context.Context, fsys fsx.FS, base, ns string, timeout time.Duration, lender int) error {
	fsys = fsx.OrReal(fsys)
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	deadline := time.Now().Add(timeout)
	for {
		for _, p := range GlobalPaths(base, ns) {
			if err := WaitFree(ctx, fsys, p, max(time.Until(deadline), time.Millisecond), lender); err != nil {
				return err
			}
		}
		free, err := GlobalFree(fsys, base, ns, lender)
		if err != nil {
			return fmt.Errorf("reading the global locks of %s: %w", base, err)
		}
		if free {
			return nil
		}
		if time.Now().After(deadline) {
			// One more WaitFree on each returns the *TimeoutError.
			for _, p := range GlobalPaths(base, ns) {
				if err := WaitFree(ctx, fsys, p, time.Millisecond, lender); err != nil {
					return err
				}
			}
			return nil
		}
	}
}
