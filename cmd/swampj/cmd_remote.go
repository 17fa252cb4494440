package main

// A remote-backed repo (the S3 extension datastore): `swampj doctor` checks
// swamp's local cache of it, and `swampj run -- swamp …` moves torn cache
// files out of the push's way before the command and checks what the
// command wrote after it. The engine is ops/remote; this file renders.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/remote"
)

// remoteCache is the repo's extension-datastore cache, or nil when the repo
// has a filesystem datastore (or none can be found: the caller's own
// loading then reports why).
func remoteCache(e *env) (*remote.Cache, error) {
	dir, err := e.repoDir()
	if err != nil {
		return nil, nil
	}
	c, err := remote.Discover(dir, remote.Options{FS: e.fs, Env: os.Getenv})
	if errors.Is(err, remote.ErrUnknownType) {
		return nil, err
	}
	if err != nil {
		return nil, nil // a filesystem datastore, or a configuration the caller's own loading reports
	}
	return c, nil
}

func remoteDoctorOptions(c *cli.Context, e *env) remote.DoctorOptions {
	return remote.DoctorOptions{Options: remote.Options{FS: e.fs, Env: os.Getenv}, LockTimeout: e.lockTO,
		Command: e.command(), Logger: e.out.logger()}
}

// doctorRemote is `swampj doctor` on a remote-backed repo: handled is false
// for a filesystem datastore.
func doctorRemote(c *cli.Context, e *env) (handled bool, err error) {
	rc, err := remoteCache(e)
	if rc == nil || err != nil {
		return err != nil, err
	}
	o := remoteDoctorOptions(c, e)
	o.Repair, o.Confirm, o.VerifyChecksums = c.Bool("repair"), c.Bool("confirm"), c.Bool("verify-checksums")
	rep, err := remote.Doctor(c.Context, rc, o)
	if rep != nil {
		for _, w := range rep.Warnings {
			e.out.warn(w)
		}
		if perr := e.out.result(rep, func(w io.Writer) { printRemoteReport(w, rep) }); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		return true, remoteErr(err)
	}
	if rep.Clean() {
		return true, nil
	}
	if rep.Remaining == countReportOnly(rep) {
		return true, withCode(codeDoctorManual, exitManual, fmt.Errorf("%d problem(s) %s in the datastore cache that swampj does not repair; see each finding's fix",
			rep.Remaining, map[bool]string{true: "remain", false: "found"}[rep.Mode == "repair"]))
	}
	return true, withCode("doctor_findings", exitFailure, fmt.Errorf("%d problem(s) %s", rep.Remaining, map[string]string{
		"check":   "found in the datastore cache; preview the repair with 'swampj doctor --repair'",
		"preview": "found in the datastore cache; apply the repair with 'swampj doctor --repair --confirm'",
		"repair":  "remain in the datastore cache; see each finding",
	}[rep.Mode]))
}

// remoteErr gives a remote repair's error its code: a busy lock is a
// lock timeout (exit 75); a bucket that does not exist, an endpoint that
// does not answer and missing or refused credentials have their own.
func remoteErr(err error) error {
	var le *remote.LockError
	if errors.As(err, &le) && le.Code() == "lock_timeout" {
		return withCode("lock_timeout", exitLockTimeout, err)
	}
	var ae *remote.AccessError
	if errors.As(err, &ae) {
		return withCode(ae.Code(), exitFailure, err)
	}
	if errors.As(err, &le) {
		return withCode(le.Code(), exitFailure, err)
	}
	return err
}

// runRemoteBefore is `swampj run`'s step 1b on a remote-backed repo: the
// cache doctor, repairing (under the bucket lock) what the command's push
// would otherwise upload. It returns nil for a filesystem datastore. When
// torn files cannot be moved out of the way, the command is not run.
func runRemoteBefore(c *cli.Context, e *env, command string) (*remote.Cache, error) {
	rc, err := remoteCache(e)
	if err != nil {
		e.out.warn(fmt.Sprintf("%v; its cache is not checked before or after the command", err))
		return nil, nil
	}
	if rc == nil {
		return nil, nil
	}
	o := remoteDoctorOptions(c, e)
	// Every file the command's push could upload is compared byte for
	// byte, large ones too: a push hashes what it walks and uploads
	// whatever differs from the index.
	o.VerifyChecksums = true
	check, err := remote.Doctor(c.Context, rc, o)
	if err != nil {
		e.out.warn(fmt.Sprintf("checking the datastore cache %s before the command: %v", rc.Dir, err))
		return rc, nil
	}
	wouldPush := 0 // damage the command's push would upload
	for _, f := range check.Findings {
		if f.Repairable && f.Next == remote.NextPush {
			wouldPush++
		}
	}
	if check.Clean() || check.Remaining == countReportOnly(check) {
		for _, f := range check.Findings {
			e.out.warn(fmt.Sprintf("before the command: %s %s: %s (%s)", f.Code, f.Path, f.Message, f.Status))
		}
		return rc, nil
	}
	o.Repair, o.Confirm = true, true
	rep, err := remote.Doctor(c.Context, rc, o)
	if err != nil && wouldPush > 0 {
		return nil, remoteErr(fmt.Errorf("repairing the datastore cache %s before the command failed, so %q was not run "+
			"(its push would upload %d damaged file(s)): %w", rc.Dir, command, wouldPush, err))
	}
	if err != nil {
		e.out.warn(fmt.Sprintf("repairing the datastore cache before the command: %v; nothing the command pushes is damaged, so it runs", err))
		return rc, nil
	}
	for _, f := range rep.Findings {
		e.out.warn(fmt.Sprintf("before the command: %s %s: %s (%s)", f.Code, f.Path, f.Message, f.Status))
	}
	if len(rep.Moves) > 0 || len(rep.Rewrites) > 0 {
		e.out.warn(fmt.Sprintf("repaired the datastore cache before the command (intent %d): %d file(s) moved to %s, %d latest pointer(s) rewritten; "+
			"the command's pull fetches the bucket's copies", rep.IntentID, len(rep.Moves), rep.Quarantine, len(rep.Rewrites)))
	}
	return rc, nil
}

// runRemoteAfter is `swampj run`'s steps 3 and 4 on a remote-backed repo:
// syncfs of the cache's (and the repo's) file system, then the cache doctor
// of what the command wrote, repairing with --repair.
func runRemoteAfter(c *cli.Context, e *env, rc *remote.Cache, start time.Time) {
	for _, p := range []string{rc.Dir, rc.LocalDir} {
		if ok, _ := fsx.Exists(e.fs, p); ok {
			if err := fsx.SyncFS(p); err != nil {
				e.out.warn(fmt.Sprintf("syncfs of %s failed: %v; what the command wrote may not survive a power cut yet", p, err))
			}
		}
	}
	o := remoteDoctorOptions(c, e)
	o.Repair, o.Confirm, o.ChangedSince = c.Bool("repair"), c.Bool("repair"), start
	rep, err := remote.Doctor(c.Context, rc, o)
	if err != nil {
		e.out.warn(fmt.Sprintf("the cache doctor after the command failed: %v; run 'swampj doctor'", err))
		return
	}
	for _, f := range rep.Findings {
		if f.Status != remote.StatusRepaired {
			e.out.warn(fmt.Sprintf("after the command: %s %s: %s; next, swamp would %s it (%s)", f.Code, f.Path, f.Message, f.Next, f.Status))
		}
	}
	if rep.Remaining > 0 && !c.Bool("repair") {
		e.out.warn("run 'swampj doctor --repair --confirm' (or 'swampj run --repair') to repair the datastore cache")
	}
}

func printRemoteReport(w io.Writer, rep *remote.Report) {
	c := rep.Cache
	fmt.Fprintf(w, "Doctor: %s (datastore %s, bucket %s", c.Repo, c.Type, c.Bucket())
	if c.Prefix() != "" {
		fmt.Fprintf(w, ", prefix %s", c.Prefix())
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "  cache:     %s (%d file(s); the index lists %d)\n", c.Dir, rep.Files, rep.IndexEntries)
	fast := "off (the next pull walks the index)"
	if rep.FastPath {
		fast = "armed (the next pull fetches nothing unless the bucket's index changed)"
	}
	fmt.Fprintf(w, "  fast path: %s\n", fast)
	if len(rep.Notes) > 0 {
		fmt.Fprintf(w, "%d note(s): file(s) other checkouts wrote that this cache has not fetched yet; the next pull fetches them\n", len(rep.Notes))
		for i, n := range rep.Notes {
			if i == 5 {
				fmt.Fprintf(w, "  … and %d more (--json lists them all)\n", len(rep.Notes)-i)
				break
			}
			fmt.Fprintf(w, "  %s\n", n.Path)
		}
	}
	if len(rep.Findings) == 0 {
		if rep.Mode == "repair" {
			fmt.Fprintln(w, "No problems found in the cache: nothing to repair, nothing was changed.")
			return
		}
		fmt.Fprintln(w, "No problems found in the cache.")
		return
	}
	fmt.Fprintf(w, "%d problem(s):\n", len(rep.Findings))
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "  %-20s %s  [%s]\n", f.Code, f.Path, f.Status)
		fmt.Fprintf(w, "      %s\n", f.Message)
		fmt.Fprintf(w, "      next, swamp would %s it: %s\n", f.Next, f.NextSays)
		fmt.Fprintf(w, "      fix: %s\n", f.Fix)
	}
	switch rep.Mode {
	case "check":
		fmt.Fprintln(w, "Nothing was changed. Preview the repair with 'swampj doctor --repair'.")
	case "preview":
		for _, m := range rep.Moves {
			fmt.Fprintf(w, "  would move %s into quarantine\n", m.From)
		}
		for _, r := range rep.Rewrites {
			fmt.Fprintf(w, "  would rewrite %s\n", r)
		}
		fmt.Fprintln(w, "Nothing was changed. Apply the repair with 'swampj doctor --repair --confirm' (it takes the bucket's lock).")
	case "repair":
		if rep.IntentID > 0 {
			fmt.Fprintf(w, "Repaired as intent %d under the bucket lock %s: %d file(s) moved into %s, %d latest pointer(s) rewritten.\n",
				rep.IntentID, rep.Lock, len(rep.Moves), rep.Quarantine, len(rep.Rewrites))
		} else {
			fmt.Fprintln(w, "Nothing was repaired: no finding is one swampj repairs; nothing was changed.")
		}
		if rep.Remaining > 0 {
			fmt.Fprintf(w, "%d problem(s) remain (reported only; see above).\n", rep.Remaining)
		}
	}
}

func remoteLockErr(err error) bool {
	var le *remote.LockError
	return errors.As(err, &le)
}

func remoteRollbackFailed(err error) bool {
	var re *remote.RepairError
	return errors.As(err, &re) && re.RollbackErr != nil
}

func countReportOnly(rep *remote.Report) int {
	n := 0
	for _, f := range rep.Findings {
		if !f.Repairable {
			n++
		}
	}
	return n
}
