package main

// A remote-backed repo (the S3 or GCS extension datastore): `swampj run --
// swamp …` moves torn cache files out of the push's way before the command
// and checks what the command wrote after it, with the doctor
// (ops/doctor, which checks the cache of such a repo; `swampj doctor`
// renders it in cmd_doctor.go). ops/wrapped finds the cache.

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/doctor/cache"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/wrapped"
)

// remoteCache is the repo's extension-datastore cache, or nil when the repo
// has a filesystem datastore (or none can be found: the caller's own
// loading then reports why).
func remoteCache(e *env) (*wrapped.Remote, error) {
	dir, err := e.repoDir()
	if err != nil {
		return nil, nil
	}
	return wrapped.FindRemote(dir, e.fs, os.Getenv)
}

// remoteDoctorOptions are the doctor's options of a wrapped command on a
// remote-backed repo.
func remoteDoctorOptions(e *env) doctor.Options {
	return doctor.Options{Common: host.Common{FS: e.fs, JournalLockTimeout: e.lockTO, Command: e.command(), Logger: e.out.logger()}, Env: os.Getenv}
}

// runRemoteBefore is `swampj run`'s step 1b on a remote-backed repo: the
// cache doctor, repairing (under the bucket lock) what the command's push
// would otherwise upload. It returns nil for a filesystem datastore. When
// torn files cannot be moved out of the way, the command is not run.
func runRemoteBefore(c *cli.Context, e *env, command string) (*wrapped.Remote, error) {
	rc, err := remoteCache(e)
	if err != nil {
		e.out.warn(fmt.Sprintf("%v; its cache is not checked before or after the command", err))
		return nil, nil
	}
	if rc == nil {
		return nil, nil
	}
	o := remoteDoctorOptions(e)
	// Every file the command's push could upload is compared byte for
	// byte, large ones too: a push hashes what it walks and uploads
	// whatever differs from the index.
	o.VerifyChecksum = true
	check, err := ops.Doctor(c.Context, rc.RepoDir(), o)
	if err != nil {
		e.out.warn(fmt.Sprintf("checking the datastore cache %s before the command: %v", rc.CacheDir(), err))
		return rc, nil
	}
	wouldPush := 0 // damage the command's push would upload
	for _, f := range check.Findings {
		if f.Status != doctor.StatusManual && f.Next == doctor.NextPush {
			wouldPush++
		}
	}
	if check.Clean() || check.Outcome == doctor.OutcomeManual {
		for _, f := range check.Findings {
			e.out.warn(fmt.Sprintf("before the command: %s %s: %s (%s)", f.Code, f.Path, f.Message, f.Status))
		}
		return rc, nil
	}
	o.Repair, o.Confirm = true, true
	rep, err := ops.Doctor(c.Context, rc.RepoDir(), o)
	if err != nil && wouldPush > 0 {
		return nil, fmt.Errorf("repairing the datastore cache %s before the command failed, so %q was not run "+
			"(its push would upload %d damaged file(s)): %w", rc.CacheDir(), command, wouldPush, err)
	}
	if err != nil {
		e.out.warn(fmt.Sprintf("repairing the datastore cache before the command: %v; nothing the command pushes is damaged, so it runs", err))
		return rc, nil
	}
	for _, f := range rep.Findings {
		e.out.warn(fmt.Sprintf("before the command: %s %s: %s (%s)", f.Code, f.Path, f.Message, f.Status))
	}
	if len(rep.Moves) > 0 || len(rep.Cache.Rewrites) > 0 {
		e.out.warn(fmt.Sprintf("repaired the datastore cache before the command (intent %d): %d file(s) moved to %s, %d latest pointer(s) rewritten; "+
			"the command's pull fetches the bucket's copies", rep.IntentID, len(rep.Moves), rep.Quarantine, len(rep.Cache.Rewrites)))
	}
	return rc, nil
}

// runRemoteAfter is `swampj run`'s steps 3 and 4 on a remote-backed repo:
// syncfs of the cache's (and the repo's) file system, then the cache doctor
// of what the command wrote, repairing with --repair.
func runRemoteAfter(c *cli.Context, e *env, rc *wrapped.Remote, start time.Time) runAfter {
	rc.SyncFS(wrapped.GuardOptions{FS: e.fs, Logger: e.out.logger()})
	o := remoteDoctorOptions(e)
	o.Repair, o.Confirm, o.ChangedSince = c.Bool("repair"), c.Bool("repair"), start
	rep, err := ops.Doctor(c.Context, rc.RepoDir(), o)
	if err != nil {
		e.out.warn(fmt.Sprintf("the cache doctor after the command failed: %v; run 'swampj doctor'", err))
		return runAfter{err: "the cache doctor after the command failed: " + err.Error()}
	}
	for _, f := range rep.Findings {
		if f.Status != doctor.StatusRepaired {
			e.out.warn(fmt.Sprintf("after the command: %s %s: %s; next, swamp would %s it (%s)", f.Code, f.Path, f.Message, f.Next, f.Status))
		}
	}
	if rep.Remaining > 0 && !c.Bool("repair") {
		e.out.warn("run 'swampj doctor --repair --confirm' (or 'swampj run --repair') to repair the datastore cache")
	}
	return afterOf(rep)
}

func remoteLockErr(err error) bool {
	var le *cache.LockError
	return errors.As(err, &le)
}

func remoteRollbackFailed(err error) bool {
	var re *cache.RepairError
	return errors.As(err, &re) && re.RollbackErr != nil
}
