package lock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/internal/testseam"
	"github.com/swampj/swampj/ops/jsfmt"
)

// Options configures Acquire. Zero values take swamp's defaults.
type Options struct {
	// Timeout is the total wait before giving up (default 60 s). Callers
	// honour SWAMP_LOCK_TIMEOUT_MS with TimeoutFromEnv.
	Timeout time.Duration
	// TTL is written as ttlMs (default 30 s) and is the age after which an
	// unparseable lock counts as abandoned.
	TTL time.Duration
	// Now is the clock for acquiredAt and staleness (default time.Now).
	// Waiting always uses the real clock.
	Now func() time.Time
	// Pid, Host and User identify the holder (defaults: this process,
	// os.Hostname, $USER or $USERNAME or "unknown").
	Pid  int
	Host string
	User string
	// InitialBackoff is the first wait after a busy attempt (default 1 s);
	// it doubles up to MaxBackoff (default 8 s), each wait jittered ±25 %
	// and clamped to the time left (file_lock.ts backoff, swamp-format §8).
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Pid == 0 {
		o.Pid = os.Getpid()
	}
	if o.Host == "" {
		if h, err := os.Hostname(); err == nil {
			o.Host = h
		}
	}
	if o.User == "" {
		o.User = os.Getenv("USER")
		if o.User == "" {
			o.User = os.Getenv("USERNAME")
		}
		if o.User == "" {
			o.User = "unknown"
		}
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 8 * time.Second
	}
	return o
}

// ErrTimeout is matched (errors.Is) by every *TimeoutError.
var ErrTimeout error = swampj.NewClassError(swampj.ClassBusy, "lock_timeout", "timed out waiting for a swamp lock")

// TimeoutError is returned when a lock stays held for the whole wait.
// Holder is the last record seen, nil when the file was unreadable.
type TimeoutError struct {
	Path   string
	Holder *Info
	Waited time.Duration
}

func (e *TimeoutError) Error() string {
	waited := e.Waited.Round(time.Millisecond)
	if e.Holder == nil {
		return fmt.Sprintf("timed out after %s waiting for lock %s: the file is empty or unreadable "+
			"(a crashed swamp can leave one); swampj takes it over once it is older than its TTL, "+
			"or remove it by hand if no swamp process is running", waited, e.Path)
	}
	h := e.Holder
	return fmt.Sprintf("timed out after %s waiting for lock %s: held by %s (pid %d on host %s, last heartbeat %s); "+
		"wait for it to finish and retry",
		waited, e.Path, h.Holder, h.Pid, h.Hostname, jsfmt.ISOString(h.AcquiredAt))
}

func (e *TimeoutError) Unwrap() error { return ErrTimeout }

// Is matches swampj.ErrBusy: someone else holds the lock, retry later.
func (e *TimeoutError) Is(target error) bool { return target == swampj.ErrBusy }

// AccessError is returned when a lock file, or the directory it goes in,
// cannot be created because this user may not write there (EACCES, EPERM).
// A lock is taken before the change it guards begins, so that change did
// not begin: nothing was changed.
type AccessError struct {
	Path string // the lock file
	// Access is what refused (the file or directory, its mode and owner,
	// the user), nil when it cannot be told.
	Access *fsx.Access
	Err    error
}

// Code is the code of a failure of the system below when that caused it
// (a full disk, an I/O error), else "permission_denied".
func (e *AccessError) Code() string {
	return swampj.CodeOr(swampj.SystemFailure(e.Err), "permission_denied")
}

func (e *AccessError) Class() swampj.Class {
	return swampj.ClassOr(swampj.SystemFailure(e.Err), swampj.ClassFailed)
}
func (e *AccessError) Unwrap() error { return e.Err }
func (e *AccessError) Error() string {
	why := e.Err.Error()
	if e.Access != nil {
		why = e.Access.String()
	}
	return fmt.Sprintf("could not create swamp's lock %s: permission denied (%s). Nothing was changed: the lock comes before "+
		"the change it guards. A change needs a user who may write the repo's data directory (or write permission for this user, "+
		"the group's when the repo is shared by a group); reading and inspecting need only read permission", e.Path, why)
}

// ErrNotHolder is matched by a refused release: the lock file is gone or
// carries another acquisition's nonce.
var ErrNotHolder = errors.New("lock is not held by this acquisition")

// NotHolderError says why a release was refused; Found is the record now on
// disk (nil when the file is missing or unreadable).
type NotHolderError struct {
	Path  string
	Nonce string
	Found *Info
}

func (e *NotHolderError) Error() string {
	if e.Found == nil {
		return fmt.Sprintf("lock %s is no longer ours (nonce %s): the file is missing or unreadable; nothing removed. "+
			"It was probably judged stale and taken over: check the work done under it", e.Path, e.Nonce)
	}
	return fmt.Sprintf("lock %s is no longer ours (nonce %s): it is now held by %s (pid %d on host %s, nonce %s); left in place. "+
		"It was probably judged stale and taken over: check the work done under it",
		e.Path, e.Nonce, e.Found.Holder, e.Found.Pid, e.Found.Hostname, e.Found.Nonce)
}

func (e *NotHolderError) Unwrap() error { return ErrNotHolder }

// Lock is one held acquisition.
type Lock struct {
	fsys  fsx.FS
	path  string
	opts  Options
	nonce string // fixed for the acquisition

	mu       sync.Mutex
	info     Info // what is on disk now
	released bool
	hbCancel context.CancelFunc
	hbDone   chan struct{}
	hbErr    error // last transient heartbeat failure, nil after a success

	lost     chan struct{}
	lostOnce sync.Once
	lostErr  error

	// borrowed: the lock is an ancestor's (AcquireOrBorrow); this process
	// works under it and never writes or removes it.
	borrowed bool
}

// Borrowed reports whether the lock is an ancestor's, used as it is.
func (l *Lock) Borrowed() bool { return l.borrowed }

// Acquire takes the lock at path, waiting up to opts.Timeout (swamp-format §8 protocol,
// made stricter as the package doc says). The parent directory is created if
// missing, as swamp does. It returns a *TimeoutError when the lock stays
// held, ctx's error when ctx ends first.
func Acquire(ctx context.Context, fsys fsx.FS, path string, opts Options) (*Lock, error) {
	return acquire(ctx, fsys, path, opts, nil)
}

// AcquireOrBorrow is Acquire for a per-model lock in a process that swamp
// may have started under that very lock (swamp-format §13.5): when the lock file is
// held by an ancestor (anc.Lends), it is borrowed — the *Lock returned
// (Borrowed() true) stands for the ancestor's lock, is never written,
// refreshed or removed, and its Release does nothing. Otherwise it is
// Acquire: a free or stale lock is taken, any other live one (a foreign
// holder, an ancestor's held for another run, a stale token) is waited on
// until opts.Timeout.
func AcquireOrBorrow(ctx context.Context, fsys fsx.FS, path string, anc Ancestry, opts Options) (*Lock, error) {
	return acquire(ctx, fsys, path, opts, anc.Lends)
}

func acquire(ctx context.Context, fsys fsx.FS, path string, opts Options, lent func(Info) bool) (*Lock, error) {
	fsys = fsx.OrReal(fsys)
	opts = opts.withDefaults()
	dir := filepath.Dir(path)
	start := time.Now()
	deadline := start.Add(opts.Timeout)
	if err := mkdirLockDir(fsys, dir, deadline); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, &AccessError{Path: path, Access: fsx.DescribeAccess(err), Err: err}
		}
		return nil, err
	}
	backoff := opts.InitialBackoff
	nonce := jsfmt.RandomUUID()
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("waiting for lock %s: %w", path, err)
		}
		info := Info{
			Holder:     opts.User + "@" + opts.Host,
			Hostname:   opts.Host,
			Pid:        opts.Pid,
			AcquiredAt: stamp(opts.Now()),
			TTLMs:      opts.TTL.Milliseconds(),
			Nonce:      nonce,
		}
		err := createExclusive(fsys, path, info.Encode())
		if err == nil {
			held.Store(filepath.Clean(path), nonce)
			return &Lock{fsys: fsys, path: path, opts: opts, nonce: nonce, info: info, lost: make(chan struct{})}, nil
		}
		if errors.Is(err, fs.ErrNotExist) && time.Now().Before(deadline) {
			// The directory went away under us: a namespace migration moved
			// or removed it (it holds nothing of ours yet). Create it again
			// and retry; the caller's check of the global lock decides
			// whether to go on.
			if err := mkdirLockDir(fsys, dir, deadline); err != nil {
				return nil, err
			}
			continue
		}
		if errors.Is(err, fs.ErrPermission) {
			return nil, &AccessError{Path: path, Access: fsx.DescribeAccess(err), Err: err}
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("creating lock %s: %w", path, err)
		}

		seen, err := observe(fsys, path)
		if err != nil {
			return nil, fmt.Errorf("reading lock %s: %w", path, err)
		}
		// Retrying at once after a vanished or stale lock cannot spin on its
		// own: each further round needs another process to have created
		// the file again.
		if seen.missing {
			continue // released between our attempt and the read
		}
		if seen.info != nil && lent != nil && lent(*seen.info) {
			// Before the staleness test: an ancestor's lock is never
			// taken over, whatever its age.
			return &Lock{fsys: fsys, path: path, opts: opts, nonce: seen.info.Nonce, info: *seen.info, lost: make(chan struct{}), borrowed: true}, nil
		}
		if isStale(path, seen, opts) {
			if err := removeIfUnchanged(fsys, path, seen); err != nil {
				return nil, fmt.Errorf("removing stale lock %s: %w", path, err)
			}
			continue
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return nil, &TimeoutError{Path: path, Holder: seen.info, Waited: time.Since(start)}
		}
		wait := min(jitter(backoff), remaining)
		if err := sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("waiting for lock %s: %w", path, err)
		}
		backoff = min(backoff*2, opts.MaxBackoff)
	}
}

// mkdirLockDir creates the lock's directory and its missing parents. A
// namespace migration may remove an ancestor between two of those mkdirs
// (it empties and removes the tree it moves away from, and holds nothing
// of ours yet), which fails the next one with ENOENT: create the path
// again, until the deadline. The caller's check of the global lock then
// decides whether to go on (TestWritesRaceMigrations hit this under load).
func mkdirLockDir(fsys fsx.FS, dir string, deadline time.Time) error {
	for {
		err := fsx.MkdirAllDurable(fsys, dir, fsx.DirMode)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) || !time.Now().Before(deadline) {
			return fmt.Errorf("creating lock directory %s: %w", dir, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// createExclusive puts data at path only if path does not exist, and never
// exposes a partial file (swamp-format §9.25): the content is written and fsynced in a temp
// file beside path, hard-linked to path (link fails if path exists) and the
// temp name removed. On file systems without hard links a rename that
// refuses to replace does the same job.
//
// The directory is not fsynced. A lock lives no longer than its process:
// after a power cut its holder is dead, so a lock that vanished loses
// nothing and one that survived is stale (dead pid, or past its TTL). The
// temp file's fsync is what matters — it keeps a lock that does survive
// from being a zero-byte file that swamp would wait on forever.
//
// Until the link, the temp file alone stands for a lock being taken: a
// structural command that looks for lock files in a path it moves must not
// take it for data (TempDead says when it is debris instead).
func createExclusive(fsys fsx.FS, path string, data []byte) error {
	tmp := fsx.TempName(path)
	creating.Store(filepath.Clean(tmp), true)
	defer creating.Delete(filepath.Clean(tmp))
	if _, err := fsx.WriteNew(fsys, tmp, bytes.NewReader(data), fsx.FileMode, nil); err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	if h := testseam.LockTempWritten.Load(); h != nil {
		(*h)(tmp, path)
	}
	moved, err := fsx.PublishNoReplace(fsys, tmp, path)
	if !moved {
		// A leftover hidden .tmp is harmless (swamp-format §9.3); the lock is what matters.
		_ = fsys.Remove(tmp)
	}
	return err
}

// creating are the temp files this process is writing a lock through
// (createExclusive) right now: a temp naming this process's pid is a lock
// being taken only while it is listed here.
var creating sync.Map

// IsTempName reports whether name has the form of the temp file a lock is
// written through before it is linked into place (createExclusive:
// fsx.TempName, ".{32 hex}.tmp").
func IsTempName(name string) bool {
	if len(name) != len(".")+32+len(".tmp") || !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".tmp") {
		return false
	}
	for _, c := range name[1 : 1+32] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// TempDead judges a file named like a lock's temp (IsTempName): whether
// it is one — empty, or holding a lock record; anything else is somebody's
// data — and whether it is debris, a temp nobody will link into place any
// more. Its writer links it (or, refused, removes it) as soon as it is
// written and fsynced (createExclusive), so:
//
//   - a temp untouched for longer than the TTL is debris, whoever wrote
//     it (a writer whose remove failed leaves one behind, alive or not);
//   - an empty one is a writer between its create and its write for
//     WriteWindow, as an empty lock file is (judge), and debris after;
//   - a lock record is debris once its holder is gone: a pid on this host
//     that no longer exists, or this very process when it is not taking
//     that lock now (creating). A holder on another host is not known to
//     be gone before the TTL.
//
// A file that is gone was linked and removed, or removed: (true, true).
func TempDead(fsys fsx.FS, path string, now time.Time) (lockTemp, dead bool, err error) {
	fsys = fsx.OrReal(fsys)
	o, err := observe(fsys, path)
	switch {
	case err != nil:
		return false, false, err
	case o.missing:
		return true, true, nil
	case o.info == nil && (len(o.data) > 0 || o.unreadable != nil):
		return false, false, nil
	case now.Sub(o.mtime) > DefaultTTL:
		return true, true, nil
	case o.info == nil:
		return true, now.Sub(o.mtime) > WriteWindow, nil
	}
	host := hostname()
	switch {
	case host == "" || o.info.Hostname != host:
		return true, false, nil
	case o.info.Pid == os.Getpid():
		_, mine := creating.Load(filepath.Clean(path))
		return true, !mine, nil
	}
	return true, !fsx.ProcessExists(o.info.Pid), nil
}

// observed is one look at an existing lock file.
type observed struct {
	missing bool
	data    []byte
	info    *Info // nil: unparseable or unreadable
	mtime   time.Time
	// unreadable is why the file exists but could not be read (EACCES,
	// EIO); newer swamp treats such a lock as it treats an empty one
	// (swamp-format §13.3): held while its mtime is within the TTL, stale after.
	unreadable error
}

func observe(fsys fsx.FS, path string) (observed, error) {
	data, err := fsys.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return observed{missing: true}, nil
		}
		fi, serr := fsys.Stat(path)
		switch {
		case serr == nil && fi.Mode().IsRegular():
			return observed{mtime: fi.ModTime(), unreadable: err}, nil
		case serr != nil && errors.Is(serr, fs.ErrNotExist):
			return observed{missing: true}, nil
		}
		return observed{}, err
	}
	// Stat after reading: if a writer changes the file in between, the
	// mtime is newer than the content and the lock looks fresher — the safe
	// direction.
	fi, err := fsys.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return observed{missing: true}, nil
		}
		return observed{}, err
	}
	o := observed{data: data, mtime: fi.ModTime()}
	if info, err := DecodeInfo(data); err == nil {
		o.info = &info
	}
	return o, nil
}

// isStale applies swamp-format §8's rules with swampj's stricter reading:
//   - a record whose acquiredAt is older than its ttlMs is stale;
//   - a record taken on this host whose pid no longer exists is stale
//     (swamp probes the pid whatever the hostname says; on a shared file
//     system that deletes live foreign locks, swamp-format §9.20);
//   - an unparseable or unreadable file untouched for longer than our TTL
//     is stale (swamp-format §9.25; swamp 06b6147 never removes one, newer swamp applies
//     this very rule, swamp-format §13.3). A fresh one may be swamp between its create
//     and its write, or mid-heartbeat, so it is waited for.
func isStale(path string, o observed, opts Options) bool {
	now := opts.Now()
	if o.info == nil {
		return now.Sub(o.mtime) > opts.TTL
	}
	if o.info.Expired(now) {
		return true
	}
	if o.info.Hostname == opts.Host && o.info.Pid == os.Getpid() {
		// Our own pid: only a lock this process holds is live. Any other
		// record with our pid was left by an earlier process that had the
		// same pid, or by an acquisition of this process that was given
		// up (Release was called, but removing the file failed, as in a
		// crash): its holder is gone either way. This is what lets
		// recovery, run in the process whose write was cut short, take
		// the lock that write left behind.
		return !heldHere(path, o.info.Nonce)
	}
	return o.info.Hostname == opts.Host && !fsx.ProcessExists(o.info.Pid)
}

// held are the locks this process holds: path → nonce.
var held sync.Map

func heldHere(path, nonce string) bool {
	n, ok := held.Load(filepath.Clean(path))
	return ok && n == nonce
}

// removeIfUnchanged deletes a lock judged stale, after reading it again: a
// parsed lock only if it still carries the same nonce, an unparseable one
// only if its bytes and mtime are unchanged. Another process that refreshed
// or replaced it in the meantime keeps it. (A replacement landing between
// this re-read and the remove can still be lost; swamp's forceRelease has
// the same window, and it is microseconds wide.)
func removeIfUnchanged(fsys fsx.FS, path string, seen observed) error {
	now, err := observe(fsys, path)
	if err != nil || now.missing {
		return err
	}
	switch {
	case seen.info != nil:
		if now.info == nil || now.info.Nonce != seen.info.Nonce || !now.info.AcquiredAt.Equal(seen.info.AcquiredAt) {
			return nil
		}
	default:
		if now.info != nil || !bytes.Equal(now.data, seen.data) || !now.mtime.Equal(seen.mtime) || (now.unreadable == nil) != (seen.unreadable == nil) {
			return nil
		}
	}
	if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Path is the lock file.
func (l *Lock) Path() string { return l.path }

// Info is the record currently written for this acquisition.
func (l *Lock) Info() Info {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.info
}

// Nonce identifies this acquisition.
func (l *Lock) Nonce() string { return l.nonce }

// StartHeartbeat refreshes acquiredAt every floor(TTL/3) (swamp: 10 s for
// the 30 s TTL) until ctx ends, Release is called or the lock is lost. Each
// refresh re-reads the file; if the nonce on disk is not ours (or the file
// is gone or unreadable) the lock is lost: Lost() is closed and LostErr says
// why. The refresh is an atomic replace, so a reader never sees a partial
// lock, unlike swamp's truncate-and-write (swamp-format §8). Calling it again is a no-op.
func (l *Lock) StartHeartbeat(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hbCancel != nil || l.released || l.borrowed {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	l.hbCancel = cancel
	l.hbDone = make(chan struct{})
	interval := max(l.opts.TTL/3, time.Millisecond).Truncate(time.Millisecond)
	go l.heartbeat(ctx, interval)
}

func (l *Lock) heartbeat(ctx context.Context, interval time.Duration) {
	defer close(l.hbDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lostErr, err := l.refresh()
		if lostErr != nil {
			l.markLost(lostErr)
			return
		}
		l.mu.Lock()
		l.hbErr = err
		l.mu.Unlock()
	}
}

// refresh rewrites acquiredAt. It returns a non-nil lost error when the
// lock is no longer ours, or a transient error (the next tick retries;
// if refreshes keep failing, the TTL runs out and others may take over,
// which the next successful read reports as lost).
//
// Between the nonce check and the rename, another process that judged the
// lock stale (possible only if this process stalled for a whole TTL) could
// remove it and create its own, which the rename would then replace. swamp's
// heartbeat has the same window; closing it would need a compare-and-swap
// the file system does not offer.
func (l *Lock) refresh() (lost error, transient error) {
	data, err := l.fsys.ReadFile(l.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &NotHolderError{Path: l.path, Nonce: l.Nonce()}, nil
		}
		return nil, err
	}
	onDisk, err := DecodeInfo(data)
	if err != nil {
		// We only ever write whole records, so this is someone else's.
		return &NotHolderError{Path: l.path, Nonce: l.Nonce()}, nil
	}
	if onDisk.Nonce != l.Nonce() {
		return &NotHolderError{Path: l.path, Nonce: l.Nonce(), Found: &onDisk}, nil
	}
	l.mu.Lock()
	next := l.info
	l.mu.Unlock()
	next.AcquiredAt = stamp(l.opts.Now())
	if err := fsx.WriteFileAtomic(l.fsys, l.path, next.Encode(), fsx.FileMode); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.info = next
	l.mu.Unlock()
	return nil, nil
}

func (l *Lock) markLost(err error) {
	held.CompareAndDelete(filepath.Clean(l.path), l.nonce)
	l.lostOnce.Do(func() {
		l.mu.Lock()
		l.lostErr = err
		l.mu.Unlock()
		close(l.lost)
	})
}

// Lost is closed when the heartbeat finds the lock taken over or removed.
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// LostErr says why the lock was lost (a *NotHolderError), nil while held.
func (l *Lock) LostErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// HeartbeatErr is the last refresh failure that did not lose the lock (an
// I/O error), nil after a successful refresh.
func (l *Lock) HeartbeatErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hbErr
}

func (l *Lock) stopHeartbeat() {
	l.mu.Lock()
	cancel, done := l.hbCancel, l.hbDone
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Release stops the heartbeat and removes the lock file if it still carries
// this acquisition's nonce, then fsyncs the directory. A file that is gone
// or holds another nonce is left alone and reported as a *NotHolderError.
// Releasing twice is a no-op.
func (l *Lock) Release() error {
	if l.borrowed {
		return nil // the ancestor's: it releases it
	}
	l.stopHeartbeat()
	// Given up from here on, even if the file cannot be removed (isStale).
	held.CompareAndDelete(filepath.Clean(l.path), l.nonce)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	if err := ReleaseNonce(l.fsys, l.path, l.nonce); err != nil {
		return err
	}
	l.released = true
	return nil
}

// Abandon stops the heartbeat and gives the lock up without touching the
// file: what a process that dies leaves behind. Code that simulates a crash
// (fsx.Fault) abandons its locks, so that recovery in the same process
// finds them stale, as a recovering process finds a dead one's.
func (l *Lock) Abandon() {
	l.stopHeartbeat()
	held.CompareAndDelete(filepath.Clean(l.path), l.nonce)
}

// ReleaseNonce removes the lock at path only if it carries nonce (swamp's
// forceRelease(nonce)). No directory fsync: a release that a power cut
// undoes leaves a lock whose holder is dead, which every acquirer treats as
// stale (see createExclusive).
func ReleaseNonce(fsys fsx.FS, path, nonce string) error {
	fsys = fsx.OrReal(fsys)
	data, err := fsys.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &NotHolderError{Path: path, Nonce: nonce}
		}
		return fmt.Errorf("reading lock %s: %w", path, err)
	}
	onDisk, err := DecodeInfo(data)
	if err != nil {
		return &NotHolderError{Path: path, Nonce: nonce}
	}
	if onDisk.Nonce != nonce {
		return &NotHolderError{Path: path, Nonce: nonce, Found: &onDisk}
	}
	if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing lock %s: %w", path, err)
	}
	return nil
}

// stamp is t as it reads back from the file: UTC, whole milliseconds, no
// monotonic reading. Keeping the in-memory Info equal to the disk record lets
// callers compare them.
func stamp(t time.Time) time.Time { return t.Round(0).UTC().Truncate(time.Millisecond) }

// jitter spreads d by ±25 %.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.75 + 0.5*rand.Float64()))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Next: with a holder, look at it before forcing anything; without one,
// swamp's own lock timeout bounds the wait.
func (e *TimeoutError) Next() swampj.Next {
	if e.Holder != nil {
		return swampj.NextInspectSwampLock
	}
	return swampj.NextWaitLongerForSwampLock
}
