package wrapped

// A wrapped swamp command on a remote-backed (S3, GCS) datastore runs
// under a guard: swampj's run lock in the bucket (wrapped commands from
// every checkout one at a time), a full pull of the cache under it so the
// command's push cannot delete what this checkout never fetched, and a
// snapshot of the bucket before and after, so whatever the bucket lost
// during the command is named. A host that wraps swamp calls Begin before
// the command and End after it; Remote finds the cache they work on.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/repo"
)

// DefaultRunLockTimeout bounds the wait for another checkout's wrapped
// command; past it the command is not run.
const DefaultRunLockTimeout = 10 * time.Minute

// DefaultPullTimeout bounds the pull before the command.
const DefaultPullTimeout = 30 * time.Minute

// Remote is a remote-backed repo's datastore cache, as a wrapped command
// on it sees it.
type Remote struct {
	cache *remote.Cache
}

// FindRemote is the cache of the repo at dir when its datastore is an
// extension one (S3, GCS); nil, nil for a filesystem datastore, or one
// whose configuration cannot be read (the caller's own loading of the repo
// reports why). The error is the datastore type no cache is known for.
func FindRemote(dir string, fsys fsx.FS, env func(string) string) (*Remote, error) {
	c, err := remote.Discover(dir, remote.Options{FS: fsys, Env: env})
	if errors.Is(err, remote.ErrUnknownType) {
		return nil, err
	}
	if err != nil {
		return nil, nil
	}
	return &Remote{cache: c}, nil
}

// CacheDir is the cache's directory (an extra root of the barrier).
func (r *Remote) CacheDir() string { return r.cache.Dir }

// RepoDir is the repo's directory (what ops.Doctor checks).
func (r *Remote) RepoDir() string { return r.cache.Repo }

// Bucket is the bucket's name.
func (r *Remote) Bucket() string { return r.cache.Bucket() }

// GCS is whether the bucket is a Google Cloud Storage one (else S3).
func (r *Remote) GCS() bool { return r.cache.Type == remote.GCSType }

// BarrierRepo is the repo the barrier of a wrapped command covers: the
// repo's local tier, with the cache's data as its data root (the cache
// itself is an extra root: Options.ExtraRoots).
func (r *Remote) BarrierRepo(dir string) *repo.Repo {
	local := filepath.Join(dir, ".swamp")
	return &repo.Repo{Dir: dir, LocalDir: local, Base: local, DataRoot: filepath.Join(r.cache.Dir, "data"),
		JournalPath: repo.JournalPathOf(dir), CatalogPath: repo.CatalogPathOf(dir)}
}

// GuardOptions configure a Guard.
type GuardOptions struct {
	// FS is the disk (nil: the real one).
	FS fsx.FS
	// Env looks up the environment (the vendors' credentials, SWAMP_HOME).
	Env func(string) string
	// RunLockTimeout bounds the wait for the run lock (0:
	// DefaultRunLockTimeout).
	RunLockTimeout time.Duration
	// PullTimeout bounds the pull before the command (0:
	// DefaultPullTimeout).
	PullTimeout time.Duration
	// Logger gets the warnings of a guard that cannot do all it should
	// (the command then runs with less of it checked); nil: none.
	Logger *slog.Logger
}

func (o GuardOptions) remote() remote.Options { return remote.Options{FS: o.FS, Env: o.Env} }

func (o GuardOptions) warn(msg string) {
	if o.Logger != nil {
		o.Logger.Warn(msg)
	}
}

// Guard is the run lock held around one wrapped command and the bucket as
// it was before it.
type Guard struct {
	r       *Remote
	opts    GuardOptions
	release func() error
	before  *remote.BucketSnapshot
}

// Guarded is whether a command (args: the command line) on a remote-backed
// repo runs under a guard: a swamp command that ends. A swamp serve is not
// guarded: it would hold the run lock for as long as it serves.
func Guarded(r *Remote, args []string) bool {
	return r != nil && len(args) > 0 && isSwamp(args[0]) && swampSubcommand(args) != "serve"
}

// isSwamp: the wrapped command is swamp (its wrappers' names start so).
func isSwamp(name string) bool {
	b := filepath.Base(name)
	return strings.HasPrefix(b, "swamp") && !strings.HasPrefix(b, "swampj")
}

// swampSubcommand is the first argument of a swamp command that is not a
// flag.
func swampSubcommand(args []string) string {
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// RunLockBusyError: another checkout's wrapped command held swampj's run
// lock for the whole wait; the command was not run.
type RunLockBusyError struct {
	Bucket, Command string
	Err             error
}

func (e *RunLockBusyError) Error() string {
	return fmt.Sprintf("waiting for swampj's run lock %s in bucket %q: %v; %q was not run", remote.RunLockKey, e.Bucket, e.Err, e.Command)
}
func (e *RunLockBusyError) Unwrap() error       { return e.Err }
func (e *RunLockBusyError) Code() string        { return "lock_timeout" }
func (e *RunLockBusyError) Class() swampj.Class { return swampj.ClassBusy }

// RunLockInterruptedError: the wait for the run lock was interrupted (the
// context was cancelled); the command was not run and nothing was
// changed.
type RunLockInterruptedError struct {
	Bucket, Command string
	Err             error
}

func (e *RunLockInterruptedError) Error() string {
	return fmt.Sprintf("interrupted while waiting for swampj's run lock %s in bucket %q; %q was not run and nothing was changed", remote.RunLockKey, e.Bucket, e.Command)
}
func (e *RunLockInterruptedError) Unwrap() error       { return e.Err }
func (e *RunLockInterruptedError) Code() string        { return "interrupted" }
func (e *RunLockInterruptedError) Class() swampj.Class { return swampj.ClassInterrupted }

// PullError: the pull before the command failed; the command was not run.
type PullError struct {
	CacheDir, Command string
	Err               error
}

func (e *PullError) Error() string {
	return fmt.Sprintf("bringing the cache %s up to date before the command failed: %v; %q was not run", e.CacheDir, e.Err, e.Command)
}
func (e *PullError) Unwrap() error       { return e.Err }
func (e *PullError) Code() string        { return "command_not_started" }
func (e *PullError) Class() swampj.Class { return swampj.ClassFailed }

// Begin takes the run lock, brings the cache up to date (`swamp datastore
// sync --pull`, with args[0] as swamp, in dir) and snapshots the bucket,
// for the command args on r's repo; nil, nil when the command is not
// Guarded. Where the bucket cannot be read the command is to run
// unguarded (nil, nil, with a warning); where swampj-bucket is missing
// (*remote.BucketClientMissingError), the lock stays held
// (*RunLockBusyError), the wait is interrupted (*RunLockInterruptedError) or
// the pull fails (*PullError), it is not to run.
func Begin(ctx context.Context, r *Remote, dir string, args []string, o GuardOptions) (*Guard, error) {
	if !Guarded(r, args) {
		return nil, nil
	}
	timeout := o.RunLockTimeout
	if timeout == 0 {
		timeout = DefaultRunLockTimeout
	}
	release, err := remote.RunLock(ctx, r.cache, o.Env, timeout)
	if errors.Is(err, remote.ErrLockBusy) {
		return nil, &RunLockBusyError{Bucket: r.Bucket(), Command: args[0], Err: err}
	}
	if err != nil && ctx.Err() != nil {
		// Interrupted while waiting (Ctrl-C): the user asked for nothing
		// to run, not for the command to run unguarded.
		return nil, &RunLockInterruptedError{Bucket: r.Bucket(), Command: args[0], Err: ctx.Err()}
	}
	var missing *remote.BucketClientMissingError
	if errors.As(err, &missing) {
		// Not a bucket that cannot be read: swampj cannot read any without
		// the program; the command is not run unguarded for that.
		return nil, fmt.Errorf("%w; %q was not run", err, args[0])
	}
	if err != nil {
		o.warn(fmt.Sprintf("swampj's run lock in bucket %q cannot be taken (%v): %q runs without it, and what the bucket loses during it is not checked", r.Bucket(), err, args[0]))
		return nil, nil
	}
	g := &Guard{r: r, opts: o, release: release}
	if err := g.pull(ctx, dir, args[0]); err != nil {
		g.Release()
		return nil, &PullError{CacheDir: r.CacheDir(), Command: args[0], Err: err}
	}
	if g.before, err = remote.SnapshotBucket(ctx, r.cache, o.remote()); err != nil {
		o.warn(fmt.Sprintf("reading bucket %q before the command: %v; what it loses during the command is not checked", r.Bucket(), err))
	}
	return g, nil
}

// pull turns the cache's fast path off and runs `swamp datastore sync
// --pull`, so every file the bucket's index lists is in the cache before
// the command: its push then deletes nothing it never fetched.
func (g *Guard) pull(ctx context.Context, dir, swamp string) error {
	fsys := g.opts.FS
	st, err := remote.ReadSyncState(fsys, g.r.cache)
	if err != nil {
		return err
	}
	if st != nil {
		data, err := st.Disarmed()
		if err != nil {
			return err
		}
		// Only a hint for swamp's next pull: atomic, and any state of it
		// is one swamp accepts.
		if err := fsx.WriteFileAtomic(fsx.OrReal(fsys), g.r.cache.SyncStatePath(), data, 0o644); err != nil {
			return err
		}
	}
	timeout := g.opts.PullTimeout
	if timeout == 0 {
		timeout = DefaultPullTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, swamp, "datastore", "sync", "--pull")
	var out bytes.Buffer
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s datastore sync --pull: %v: %s", swamp, err, strings.TrimSpace(tailString(out.String(), 1000)))
	}
	return nil
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Release releases the run lock (once; a nil Guard has none).
func (g *Guard) Release() {
	if g == nil || g.release == nil {
		return
	}
	if err := g.release(); err != nil {
		g.opts.warn(fmt.Sprintf("releasing swampj's run lock: %v; it goes stale %s after its last heartbeat", err, remote.LockTTL))
	}
	g.release = nil
}

// End snapshots the bucket again, releases the run lock and returns what
// the bucket lost during the command, as a *remote.LossError (code
// bucket_versions_lost, class ClassNeedsPerson); nil: nothing, no
// snapshot before, or none after (a warning). It runs to its end even when
// ctx is cancelled: the command is over.
func (g *Guard) End(ctx context.Context) *remote.LossError {
	if g == nil {
		return nil
	}
	defer g.Release()
	if g.before == nil {
		return nil
	}
	o := g.opts.remote()
	c := g.r.cache
	after, err := remote.SnapshotBucket(context.WithoutCancel(ctx), c, o)
	if err != nil {
		g.opts.warn(fmt.Sprintf("reading bucket %q after the command: %v; what it lost during the command is not checked", c.Bucket(), err))
		return nil
	}
	lost := remote.Losses(c, g.before, after, remote.ChangesSince(c, o, g.before))
	if len(lost) == 0 {
		return nil
	}
	return &remote.LossError{Bucket: c.Bucket(), Kind: c.Type, Lost: lost}
}

// SyncFS flushes the file systems of the cache and of the repo's local
// tier (syncfs) after a command that does not fsync what it writes. A
// failure is a warning to o.Logger: what the command wrote may not survive
// a power cut yet.
func (r *Remote) SyncFS(o GuardOptions) {
	fsys := fsx.OrReal(o.FS)
	for _, p := range []string{r.cache.Dir, r.cache.LocalDir} {
		if ok, _ := fsx.Exists(fsys, p); ok {
			if err := fsx.SyncFS(p); err != nil {
				o.warn(fmt.Sprintf("syncfs of %s failed: %v; what the command wrote may not survive a power cut yet", p, err))
			}
		}
	}
}
