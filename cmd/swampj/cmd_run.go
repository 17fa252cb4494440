package main

// `swampj run -- COMMAND...`: the startup hook as a wrapper, and the write
// barrier swamp lacks, for commands that end and for commands that never do
// (swamp serve). Before the command, what an interrupted swampj left is
// recovered, and a wrapped run that died is settled; while it runs, every
// rename, delete and fsync it makes under the datastore waits until what it
// wrote before is on disk (package ops/wrapped); after it, the final sync
// and a doctor of exactly what it changed, from the run's change log.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	swampjerr "github.com/swampj/swampj" // named apart from the tests' swampj helper
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/read"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/ops/wrapped"
	"github.com/swampj/swampj/ops/write"
	"github.com/swampj/swampj/recover"
)

func init() {
	register(&cli.Command{
		Name:      "run",
		Usage:     "run a command (swamp, even swamp serve) under swampj's write barrier, with recovery before it and a doctor after it",
		ArgsUsage: "-- COMMAND [ARGS...]",
		Description: "1. recover: finish what an interrupted swampj left, and settle a wrapped run that died without its\n" +
			"   final barrier (doctor and repair what it changed); bounded by --lock-timeout (exit 75, command not\n" +
			"   run, while another process holds the repo; exit 1, command not run, if recovery cannot finish).\n" +
			"2. the run is recorded in the journal; COMMAND runs in the repo directory with this process's stdin,\n" +
			"   stdout and stderr; SIGINT, SIGTERM and SIGHUP are passed to it.\n" +
			"   While it runs, each rename, delete or fsync it makes under the datastore waits until everything it\n" +
			"   wrote before is on disk (seccomp; a sync every --sync-interval covers files written in place).\n" +
			"   Where the barrier cannot run, swampj refuses to start the command unless --unguarded.\n" +
			"3. the final sync, then swampj doctor of what the command changed (from the run's change log, never a\n" +
			"   walk of the repo); --repair repairs it (quarantine, never delete). The record is then closed.\n" +
			"   A run killed before this (power cut, SIGKILL) is settled by the next swampj run, recover, write\n" +
			"   or migration.\n\n" +
			"On a remote (S3, GCS) datastore, a swamp command (not swamp serve) also holds swampj's run lock in the\n" +
			"bucket (wrapped commands from every checkout run one at a time), runs 'swamp datastore sync --pull'\n" +
			"under it before the command, and compares the bucket before and after: objects the command did not\n" +
			"write that were deleted, overwritten or dropped from the index are named (bucket_versions_lost).\n\n" +
			"EXIT STATUS: the command's own (128+N when a signal N ended it; 127 when it is not found, 126 when it\n" +
			"cannot be run), unless step 1 or 2 stops it. When the command exited 0: 3 when the bucket lost objects it\n" +
			"did not write (bucket_versions_lost); else 4 when the doctor after it found damage that remains\n" +
			"(run_left_damage: not repaired, or found without --repair). A command that failed keeps its own status\n" +
			"whatever the doctor found.\n\n" +
			"--json: the command's own stdout comes first, untouched; once it has exited, swampj prints its document\n" +
			"as the last line of stdout, one JSON object: command, commandExitCode, exitCode (swampj's own),\n" +
			"errorCode (when exitCode is not the command's), doctorRan, damageFound, damageRemains, findings (code,\n" +
			"path, status each) and doctorError. Warnings stay JSON lines on stderr. When swampj stops before the\n" +
			"command runs, there is no document on stdout: the error is on stderr, as for every command.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "repair", Usage: "repair what the doctor finds after the command (as doctor --repair --confirm)"},
			&cli.BoolFlag{Name: "unguarded", Usage: "run the command even where the write barrier cannot run (a power cut can then leave torn versions until the next start settles them)"},
			&cli.DurationFlag{Name: "run-lock-timeout", Value: defaultRunLockTimeout, Usage: "on a remote (S3, GCS) datastore, how long to wait for swampj's run lock while another checkout's wrapped command holds it (then the command is not run, exit 75)"},
			&cli.DurationFlag{Name: "sync-interval", Value: wrapped.DefaultSyncInterval, Usage: "while the command runs, sync the datastore this often (files written in place; 0: never)"},
		},
		Action: runRun,
	})
}

// runExit carries the child's exit status out as this process's.
type runExit struct{ code int }

// exitRunDamage: the command exited 0, but the doctor after it left damage
// in what it changed. Distinct from the command's own 0, from 1 (a swampj
// failure, and the usual status of a failed command) and from 3 (what
// remains needs a person: the bucket lost objects).
const exitRunDamage = 4

// codeRunLeftDamage is the error code of exitRunDamage.
const codeRunLeftDamage = "run_left_damage"

// runFinding is one finding of the doctor after the command.
type runFinding struct {
	Code   string `json:"code"`
	Path   string `json:"path"`
	Status string `json:"status"`
}

// runAfter is what the doctor after the command found; the zero value is
// a command that changed nothing the doctor covers.
type runAfter struct {
	ran       bool
	remaining int
	findings  []runFinding
	err       string // the final sync or the doctor failed
}

func afterOf(rep *doctor.Report) runAfter {
	a := runAfter{ran: true, remaining: rep.Remaining, findings: []runFinding{}}
	for _, f := range rep.Findings {
		a.findings = append(a.findings, runFinding{Code: string(f.Code), Path: f.Path, Status: string(f.Status)})
	}
	return a
}

// runReport is swampj run --json's document, the last line of stdout.
type runReport struct {
	Command         []string     `json:"command"`
	CommandExitCode int          `json:"commandExitCode"`
	ExitCode        int          `json:"exitCode"`
	ErrorCode       string       `json:"errorCode,omitempty"`
	DoctorRan       bool         `json:"doctorRan"`
	DamageFound     bool         `json:"damageFound"`
	DamageRemains   bool         `json:"damageRemains"`
	Findings        []runFinding `json:"findings"`
	DoctorError     string       `json:"doctorError,omitempty"`
}

// lastByteWriter passes the command's stdout through and remembers its
// last byte, so that swampj's document starts a line of its own. The
// printer's stdout is not an *os.File, so the command writes through a
// pipe and a copy either way.
type lastByteWriter struct {
	w    io.Writer
	last byte
}

func (l *lastByteWriter) Write(b []byte) (int, error) {
	n, err := l.w.Write(b)
	if n > 0 {
		l.last = b[n-1]
	}
	return n, err
}

func (e *runExit) Error() string { return fmt.Sprintf("the command exited with status %d", e.code) }

func runRun(c *cli.Context) error {
	e := newEnv(c)
	args := c.Args().Slice()
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return usageErr(errors.New("usage: swampj run [--repair] -- COMMAND [ARGS...]"))
	}
	dir, err := e.repoDir()
	if err != nil {
		return err
	}
	if err := lookCommand(dir, args[0]); err != nil {
		return err
	}
	r, rc, err := recoverBeforeRun(c, e, dir, args[0])
	if err != nil {
		return err
	}
	guard, err := beginRunGuard(c.Context, e, rc, dir, args, c.Duration("run-lock-timeout")) // remote-backed repo: run lock, pull, snapshot
	if err != nil {
		return err
	}
	defer guard.Release()

	// 2. The command under the barrier, recorded, with signals passed
	// through.
	start := time.Now()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = dir, c.App.Reader, c.App.Writer, c.App.ErrWriter
	stdout := &lastByteWriter{w: c.App.Writer}
	if e.json {
		cmd.Stdout = stdout
	}
	if f, ok := c.App.Reader.(*os.File); ok {
		cmd.Stdin = f
	}
	wopts := wrapped.Options{Common: host.Common{Command: args, JournalLockTimeout: e.lockTO, Logger: e.out.logger(), FS: e.fs}, SyncInterval: c.Duration("sync-interval"), Unguarded: c.Bool("unguarded")}
	if rc == nil {
		// A remote (S3, GCS) datastore: swampj changes no namespace of it,
		// and its data lives in the bucket.
		wopts.Admit = func() error { return refuseUnmigratedRun(e, dir, args[0]) }
	}
	if wopts.SyncInterval == 0 {
		wopts.SyncInterval = -1
	}
	if rc != nil {
		wopts.ExtraRoots = []string{rc.CacheDir()}
	}
	if wopts.Unguarded {
		if err := wrapped.Supported(); err != nil {
			e.out.warn(fmt.Sprintf("%v; running %q without it (--unguarded): until it exits, a power cut can leave "+
				"torn versions, which the next swampj run, recover, write or migration repairs", err, args[0]))
		} else {
			e.out.warn(fmt.Sprintf("running %q without the write barrier (--unguarded): until it exits, a power cut can leave "+
				"torn versions, which the next swampj run, recover, write or migration repairs", args[0]))
		}
	}
	w, err := wrapped.Start(c.Context, r, cmd, wopts)
	var unsup *wrapped.UnsupportedError
	if errors.As(err, &unsup) {
		return withCode(unsup.Code(), exitFailure, fmt.Errorf("%w; %q was not run and nothing was changed. "+
			"Run it with 'swampj run --unguarded -- ...' to go on without the barrier (protected only when it exits)", err, args[0]))
	}
	if errors.Is(err, swampjerr.ErrBusy) {
		return fmt.Errorf("recording the run before starting %q: %w; it was not run", args[0], err)
	}
	var refused *codedError
	if errors.As(err, &refused) {
		return err
	}
	if err != nil {
		return withCode("command_not_started", exitFailure, fmt.Errorf("starting %q: %w", args[0], err))
	}
	code, err := waitCommand(cmd)
	if err != nil {
		return err
	}

	after := finishRun(c, e, w, r, rc, wopts.Unguarded, start, code)
	lost := guard.End(c.Context)
	var result error
	switch {
	case code != 0:
		if lost != nil {
			e.out.warn(lost.Error() + "; " + restoreHint(rc))
		}
		result = &runExit{code}
	case lost != nil:
		result = &bucketLossError{codedError{code: lost.Code(), exit: exitManual, err: fmt.Errorf("%q exited 0, but %w; %s", args[0], lost, restoreHint(rc))}, lost.Lost}
	case after.remaining > 0:
		next := "run 'swampj doctor --repair --confirm'"
		if c.Bool("repair") {
			next = "its repair left them: see each finding above"
		}
		result = withCode(codeRunLeftDamage, exitRunDamage, fmt.Errorf("%q exited 0, but the doctor after it found %d problem(s) that remain in what it changed; %s",
			args[0], after.remaining, next))
	}
	if e.json {
		printRunReport(e, stdout, args, code, after, result)
	}
	return result
}

// printRunReport writes swampj run --json's document on a line of its own
// after the command's stdout.
func printRunReport(e *env, stdout *lastByteWriter, args []string, code int, after runAfter, result error) {
	doc := runReport{Command: args, CommandExitCode: code, ExitCode: code, DoctorRan: after.ran,
		DamageFound: len(after.findings) > 0, DamageRemains: after.remaining > 0, Findings: after.findings, DoctorError: after.err}
	if doc.Findings == nil {
		doc.Findings = []runFinding{}
	}
	var re *runExit
	if result != nil && !errors.As(result, &re) {
		doc.ExitCode, doc.ErrorCode = classify(result)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return
	}
	e.out.endProgress()
	if stdout.last != 0 && stdout.last != '\n' {
		fmt.Fprintln(stdout.w)
	}
	fmt.Fprintln(stdout.w, string(b))
}

// lookCommand refuses a command that cannot be found or run with the
// shell's 127 or 126, before anything is recovered or recorded. It runs in
// the repo directory, so a relative path is looked up there.
func lookCommand(dir, name string) error {
	look := name
	if strings.Contains(look, "/") && !filepath.IsAbs(look) {
		look = filepath.Join(dir, look)
	}
	if _, err := exec.LookPath(look); err != nil {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return withCode("command_not_started", code, fmt.Errorf("%w; nothing was run or changed", err))
	}
	return nil
}

// recoverBeforeRun is step 1: recovery, bounded, so the command does not
// run on a repo mid-change, and the settling of a wrapped run that died.
// It returns the repo the barrier covers and, for a remote-backed repo,
// its cache.
func recoverBeforeRun(c *cli.Context, e *env, dir, name string) (*repo.Repo, *wrapped.Remote, error) {
	rep, err := recover.Run(c.Context, dir, recover.Options{Common: host.Common{FS: e.fs, JournalLockTimeout: e.lockTO, Command: e.command(), Logger: e.out.logger()}, Progress: e.out.progress()})
	e.out.endProgress() // the line is cleared before the command writes to the terminal
	if err != nil {
		return nil, nil, fmt.Errorf("recovery before the command failed, so %q was not run: %w", name, err)
	}
	for _, in := range rep.Intents {
		e.out.warn(in.Sentence() + ", before the command")
	}
	for _, s := range rep.WrappedRuns {
		e.out.warn(s.Sentence() + ", before the command")
	}
	rc, err := runRemoteBefore(c, e, name) // remote-backed repo: the cache doctor (cmd_remote.go)
	if err != nil {
		return nil, nil, err
	}
	r, err := runRepo(e, dir, rc)
	if err != nil {
		return nil, nil, err
	}
	if rc != nil {
		// A remote-backed repo: the cache doctor before the command has
		// just checked every cached file a dead run could have left torn.
		settled, err := wrapped.SettleChecked(c.Context, dir, r.JournalPath, "settled after its wrapper died: the datastore cache was checked before the next wrapped command",
			wrapped.SettleOptions{Common: host.Common{JournalLockTimeout: e.lockTO, Command: e.command(), Logger: e.out.logger(), FS: e.fs}})
		for _, s := range settled {
			e.out.warn(fmt.Sprintf("settled a wrapped run of %q (pid %d) that ended without its final barrier: the cache doctor checked what it could have left, before the command", s.Run.Command, s.Run.PID))
		}
		if err != nil {
			return nil, nil, fmt.Errorf("settling a dead wrapped run before %q: %w; it was not run", name, err)
		}
	}
	return r, rc, nil
}

// refuseUnmigratedRun refuses to start any command (swamp, or a script
// that may start swamp: the barrier cannot tell) while a namespace is set
// over data not migrated into it: swamp would write a fresh version 1 under
// the namespace beside the item's old versions, and every later migration
// would refuse the two sides. The same condition refuses swampj's own
// writes (write.UnmigratedWriteError). The configuration is read again: it
// runs under the journal, just before the run is recorded.
func refuseUnmigratedRun(e *env, dir, name string) error {
	r, err := repo.Load(e.fs, dir, os.Getenv)
	if err != nil {
		return fmt.Errorf("re-reading the configuration before starting %q: %w; it was not run", name, err)
	}
	at, err := write.UnmigratedData(r, host.Common{FS: e.fs})
	if err != nil {
		return fmt.Errorf("checking for data not migrated into namespace %q before starting %q: %w; it was not run", r.Namespace, name, err)
	}
	if at == "" {
		return nil
	}
	return withCode(codeUnmigratedData, exitFailure, fmt.Errorf("namespace %q is configured but data still sits at the un-namespaced %s (%s, not migrated yet); "+
		"%q was not run and nothing was changed: a swamp command would write fresh versions under the namespace beside the old ones, "+
		"which no migration could then merge. Run 'swampj datastore namespace migrate --confirm' first "+
		"(or 'swampj datastore namespace unset' to go back), then the command again",
		r.Namespace, filepath.Join(r.Base, "data"), at, name))
}

// codeUnmigratedData is the code swampj's writes refuse the same state with.
const codeUnmigratedData = "unmigrated_data"

// finishRun is step 3: the final barrier, then the doctor of what the
// command that exited with code changed, then the run's record is closed.
func finishRun(c *cli.Context, e *env, w *wrapped.Run, r *repo.Repo, rc *wrapped.Remote, unguarded bool, start time.Time, code int) runAfter {
	// A signal passed to the command (a service stopped with SIGTERM) has
	// cancelled this process's context too: what follows is bounded, and
	// leaving it undone would leave the run to be settled by the next
	// start, so it runs to its end.
	c.Context = context.WithoutCancel(c.Context)
	// syncfs waits for every dirty page of the file system, other
	// processes' too: seconds on a busy disk, shown as a phase.
	if p := e.out.progress(); p != nil {
		p(report.ProgressEvent{Phase: "syncing file system"})
	}
	changed, ferr := w.Finish(c.Context)
	e.out.endProgress()
	outcome := fmt.Sprintf("the command exited with status %d", code)
	var after runAfter
	switch {
	case ferr != nil:
		e.out.warn(fmt.Sprintf("the final sync after the command failed: %v; what it wrote may not survive a power cut: run 'swampj doctor'", ferr))
		outcome += "; final sync failed: " + ferr.Error()
		after.err = "final sync failed: " + ferr.Error()
	case rc != nil: // remote-backed repo: the cache doctor (cmd_remote.go)
		after = runRemoteAfter(c, e, rc, start)
	case unguarded:
		// No change log: the walk of what changed since the start.
		if only, err := read.ChangedItems(c.Context, r, start, host.Common{FS: e.fs}); err != nil {
			e.out.warn(fmt.Sprintf("finding what the command changed: %v; run 'swampj doctor'", err))
			after.err = "finding what the command changed: " + err.Error()
		} else {
			after = doctorChanged(c, e, r, only)
		}
	default:
		after = doctorChanged(c, e, r, changed)
	}
	if err := w.Close(outcome); err != nil {
		e.out.warn(fmt.Sprintf("closing wrapped run %d: %v; the next swampj command settles it", w.ID(), err))
	}
	return after
}

// runRepo is the repo the barrier covers: the loaded configuration, or for
// a remote-backed repo its local tier (the cache is an extra root).
func runRepo(e *env, dir string, rc *wrapped.Remote) (*repo.Repo, error) {
	if rc == nil {
		return e.loadRepo(false)
	}
	return rc.BarrierRepo(dir), nil
}

// waitCommand waits for the started command, passing SIGINT, SIGTERM and
// SIGHUP through, and returns its exit code (128+N when a signal N ended
// it).
func waitCommand(cmd *exec.Cmd) (int, error) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	waitErr := cmd.Wait()
	close(done)
	signal.Stop(sigs)
	code := 0
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if waitErr != nil {
		return 0, waitErr
	}
	return code, nil
}

// doctorChanged is the doctor of what the command changed (item
// directories and run records), repairing with --repair.
func doctorChanged(c *cli.Context, e *env, r *repo.Repo, changed []string) runAfter {
	if len(changed) == 0 {
		return runAfter{}
	}
	drep, derr := doctor.Run(c.Context, r, doctor.Options{Common: host.Common{JournalLockTimeout: e.lockTO, Command: e.command(), Logger: e.out.logger(), FS: e.fs},
		Repair: c.Bool("repair"), Confirm: c.Bool("repair"), Only: changed, Progress: e.out.progress(),
	})
	e.out.endProgress()
	renderDoctorRemedies(drep)
	if derr != nil {
		e.out.warn(fmt.Sprintf("the doctor after the command failed: %v; run 'swampj doctor'", derr))
		return runAfter{err: "the doctor after the command failed: " + derr.Error()}
	}
	switch {
	case drep.Remaining > 0:
		for _, f := range drep.Findings {
			if f.Status != doctor.StatusRepaired {
				e.out.warn(fmt.Sprintf("after the command: %s %s v%d: %s (%s)", f.Code, f.Item, f.Version, f.Message, f.Status))
			}
		}
		if !c.Bool("repair") {
			e.out.warn("run 'swampj doctor --repair --confirm' (or 'swampj run --repair') to repair")
		}
	case drep.Mode == "repair" && len(drep.Moves) > 0:
		e.out.warn(fmt.Sprintf("repaired what the command left damaged: %d move(s) to %s", len(drep.Moves), drep.Quarantine))
	}
	return afterOf(drep)
}
