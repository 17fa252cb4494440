package main

// `swampj run` on a remote-backed repo, around the command: swampj's run
// lock in the bucket (wrapped commands from every checkout one at a time),
// a full pull of the cache under it so the command's push cannot delete
// what this checkout never fetched, and a snapshot of the bucket before and
// after, so whatever the bucket lost during the command is named.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/remote"
)

// defaultRunLockTimeout bounds the wait for another checkout's wrapped
// command; past it the command is not run (exit 75).
const defaultRunLockTimeout = 10 * time.Minute

// remoteRunGuard is the run lock held around one wrapped command and the
// bucket as it was before it.
type remoteRunGuard struct {
	rc      *remote.Cache
	release func() error
	before  *remote.BucketSnapshot
}

// isSwamp: the wrapped command is swamp (its wrapper names start so).
func isSwamp(name string) bool {
	b := filepath.Base(name)
	return strings.HasPrefix(b, "swamp") && !strings.HasPrefix(b, "swampj")
}

// runRemoteGuard takes the run lock, brings the cache up to date and
// snapshots the bucket, for a swamp command on a remote-backed repo. A
// swamp serve is not guarded: it would hold the lock for as long as it
// serves. Where the bucket cannot be read the command runs unguarded,
// with a warning; where the lock stays held or the pull fails, it is not
// run.
func runRemoteGuard(c *cli.Context, e *env, rc *remote.Cache, dir string, args []string) (*remoteRunGuard, error) {
	if rc == nil || !isSwamp(args[0]) || swampSubcommand(args) == "serve" {
		return nil, nil
	}
	release, err := remote.RunLock(c.Context, rc, os.Getenv, c.Duration("run-lock-timeout"))
	if errors.Is(err, remote.ErrLockBusy) {
		return nil, withCode("lock_timeout", exitLockTimeout, fmt.Errorf("waiting for swampj's run lock %s in bucket %q: %w; %q was not run "+
			"(raise --run-lock-timeout to wait longer)", remote.RunLockKey, rc.Bucket(), err, args[0]))
	}
	if err != nil && c.Context.Err() != nil {
		// Interrupted while waiting (Ctrl-C): the user asked for nothing
		// to run, not for the command to run unguarded.
		return nil, withCode("interrupted", exitInterrupted, fmt.Errorf("interrupted while waiting for swampj's run lock %s in bucket %q; %q was not run and nothing was changed",
			remote.RunLockKey, rc.Bucket(), args[0]))
	}
	var missing *remote.BucketClientMissingError
	if errors.As(err, &missing) {
		// Not a bucket that cannot be read: swampj cannot read any without
		// the program; the command is not run unguarded for that.
		return nil, fmt.Errorf("%w; %q was not run", err, args[0])
	}
	if err != nil {
		e.out.warn(fmt.Sprintf("swampj's run lock in bucket %q cannot be taken (%v): %q runs without it, and what the bucket loses during it is not checked", rc.Bucket(), err, args[0]))
		return nil, nil
	}
	g := &remoteRunGuard{rc: rc, release: release}
	if err := pullBeforeRun(c, e, rc, dir, args[0]); err != nil {
		g.done(e)
		return nil, withCode("command_not_started", exitFailure, fmt.Errorf("bringing the cache %s up to date before the command failed: %w; %q was not run", rc.Dir, err, args[0]))
	}
	if g.before, err = remote.SnapshotBucket(c.Context, rc, remote.Options{FS: e.fs, Env: os.Getenv}); err != nil {
		e.out.warn(fmt.Sprintf("reading bucket %q before the command: %v; what it loses during the command is not checked", rc.Bucket(), err))
	}
	return g, nil
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

// pullBeforeRun turns the cache's fast path off and runs `swamp datastore
// sync --pull`, so every file the bucket's index lists is in the cache
// before the command: its push then deletes nothing it never fetched.
func pullBeforeRun(c *cli.Context, e *env, rc *remote.Cache, dir, swamp string) error {
	st, err := remote.ReadSyncState(e.fs, rc)
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
		if err := fsx.WriteFileAtomic(e.fs, rc.SyncStatePath(), data, 0o644); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Minute)
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

// done releases the run lock.
func (g *remoteRunGuard) done(e *env) {
	if g == nil || g.release == nil {
		return
	}
	if err := g.release(); err != nil {
		e.out.warn(fmt.Sprintf("releasing swampj's run lock: %v; it goes stale %s after its last heartbeat", err, remote.LockTTL))
	}
	g.release = nil
}

// losses snapshots the bucket again and returns what it lost during the
// command, as a *remote.LossError (nil: nothing, or no snapshot before).
func (g *remoteRunGuard) losses(c *cli.Context, e *env) *remote.LossError {
	if g == nil || g.before == nil {
		return nil
	}
	o := remote.Options{FS: e.fs, Env: os.Getenv}
	after, err := remote.SnapshotBucket(context.WithoutCancel(c.Context), g.rc, o)
	if err != nil {
		e.out.warn(fmt.Sprintf("reading bucket %q after the command: %v; what it lost during the command is not checked", g.rc.Bucket(), err))
		return nil
	}
	lost := remote.Losses(g.rc, g.before, after, remote.ChangesSince(g.rc, o, g.before))
	if len(lost) == 0 {
		return nil
	}
	return &remote.LossError{Bucket: g.rc.Bucket(), Kind: g.rc.Type, Lost: lost}
}

// restoreHint is how to get a lost object back with the vendor's CLI.
func restoreHint(le *remote.LossError) string {
	if le.Kind == remote.GCSType {
		return fmt.Sprintf("list a key's earlier generations with 'gcloud storage ls --all-versions gs://%s/KEY' and copy the one with the lost hash back "+
			"('gcloud storage cp gs://%s/KEY#GENERATION gs://%s/KEY'); then 'swamp datastore sync' in every checkout", le.Bucket, le.Bucket, le.Bucket)
	}
	return fmt.Sprintf("list a key's earlier versions with 'aws s3api list-object-versions --bucket %s --prefix KEY' and copy the one with the lost ETag back "+
		"('aws s3api copy-object --bucket %s --key KEY --copy-source %s/KEY?versionId=ID'); then 'swamp datastore sync' in every checkout", le.Bucket, le.Bucket, le.Bucket)
}
