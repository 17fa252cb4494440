package main

// `swampj run -- COMMAND...`: the startup hook as a wrapper, and the
// durability barrier swamp lacks. Before the command, what an interrupted
// swampj left is recovered; the command then runs as a child with the
// terminal, signals and exit status passed through; after it, one syncfs
// of the datastore's file system makes what swamp wrote without fsync
// durable, and a doctor checks the data (repairing it with --repair).

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/recover"
)

func init() {
	register(&cli.Command{
		Name:      "run",
		Usage:     "run a command (swamp) with recovery before it and a durability barrier and doctor after it",
		ArgsUsage: "-- COMMAND [ARGS...]",
		Description: "1. recover: finish what an interrupted swampj left (bounded by --lock-timeout; exit 75, command not run,\n" +
			"   while another process holds the repo; exit 1, command not run, if recovery cannot finish).\n" +
			"2. COMMAND runs in the repo directory with this process's stdin, stdout and stderr; SIGINT, SIGTERM and\n" +
			"   SIGHUP are passed to it.\n" +
			"3. one syncfs(2) of the datastore's file system: swamp writes its data without fsync, and its versions\n" +
			"   stay in the page cache for tens of seconds; after this a power cut loses nothing the command wrote.\n" +
			"4. swampj doctor of the data the command changed; --repair repairs what it finds (quarantine, never\n" +
			"   delete). Findings are reported on stderr.\n\n" +
			"EXIT STATUS: the command's own (128+N when a signal N ended it), unless step 1 stops it.\n\n" +
			"EXAMPLE:\n   swampj run -- swamp model method run m1 execute --input run='echo hi'\n" +
			"   swampj run --repair -- swamp workflow run nightly",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "repair", Usage: "repair what the doctor finds after the command (as doctor --repair --confirm)"},
		},
		Action: runRun,
	})
}

// runExit carries the child's exit status out as this process's.
type runExit struct{ code int }

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

	// 1. Recovery, bounded; the command does not run on a repo mid-change.
	rep, err := recover.Run(c.Context, e.fs, dir, recover.Options{JournalLockTimeout: e.lockTO, Command: e.command(), Logger: e.out.logger(),
		Progress: e.out.progress()})
	e.out.endProgress() // the line is cleared before the command writes to the terminal
	if err != nil {
		return fmt.Errorf("recovery before the command failed, so %q was not run: %w", args[0], err)
	}
	for _, in := range rep.Intents {
		e.out.warn(in.Sentence() + ", before the command")
	}
	rc, err := runRemoteBefore(c, e, args[0]) // remote-backed repo: the cache doctor (cmd_remote.go)
	if err != nil {
		return err
	}

	// 2. The command, with signals passed through.
	start := time.Now()
	code, err := runCommand(c, dir, args)
	if err != nil {
		return err
	}

	if rc != nil { // remote-backed repo: syncfs and the cache doctor (cmd_remote.go)
		runRemoteAfter(c, e, rc, start)
		if code != 0 {
			return &runExit{code}
		}
		return nil
	}

	if err := afterCommand(c, e, start); err != nil {
		return err
	}
	if code != 0 {
		return &runExit{code}
	}
	return nil
}

// runCommand runs args in dir with the CLI's standard streams, passing
// SIGINT, SIGTERM and SIGHUP through, and returns its exit code (128+N
// when a signal N ended it).
func runCommand(c *cli.Context, dir string, args []string) (int, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = dir, c.App.Reader, c.App.Writer, c.App.ErrWriter
	if f, ok := c.App.Reader.(*os.File); ok {
		cmd.Stdin = f
	}
	if err := cmd.Start(); err != nil {
		return 0, withCode("command_not_started", exitFailure, fmt.Errorf("starting %q: %w", args[0], err))
	}
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

// afterCommand is what a local repo gets after the command: the
// durability barrier swamp lacks (syncfs), then the doctor of what the
// command changed, repairing with --repair.
func afterCommand(c *cli.Context, e *env, start time.Time) error {
	r, err := e.loadRepo(false)
	if err != nil {
		return err
	}
	if ok, _ := fsx.Exists(e.fs, r.Base); ok { // no datastore yet: the command wrote none
		// syncfs waits for every dirty page of the file system, other
		// processes' too: seconds on a busy disk, shown as a phase.
		if p := e.out.progress(); p != nil {
			p(ops.ProgressEvent{Phase: "syncing file system"})
		}
		err := fsx.SyncFS(r.Base)
		e.out.endProgress()
		if err != nil {
			e.out.warn(fmt.Sprintf("syncfs of %s failed: %v; what the command wrote may not survive a power cut yet", r.Base, err))
		}
	}

	// 4. The doctor of what changed, repairing with --repair.
	changed, err := ops.ChangedItems(c.Context, e.fs, r, start)
	if err != nil {
		e.out.warn(fmt.Sprintf("finding what the command changed: %v; run 'swampj doctor'", err))
	} else if len(changed) > 0 {
		drep, derr := ops.Doctor(c.Context, e.fs, r, ops.DoctorOptions{
			Repair: c.Bool("repair"), Confirm: c.Bool("repair"), JournalLockTimeout: e.lockTO,
			Command: e.command(), Logger: e.out.logger(), Only: changed, Progress: e.out.progress(),
		})
		e.out.endProgress()
		renderDoctorRemedies(drep)
		switch {
		case derr != nil:
			e.out.warn(fmt.Sprintf("the doctor after the command failed: %v; run 'swampj doctor'", derr))
		case drep.Remaining > 0:
			for _, f := range drep.Findings {
				if f.Status != ops.DoctorRepaired {
					e.out.warn(fmt.Sprintf("after the command: %s %s v%d: %s (%s)", f.Code, f.Item, f.Version, f.Message, f.Status))
				}
			}
			if !c.Bool("repair") {
				e.out.warn("run 'swampj doctor --repair --confirm' (or 'swampj run --repair') to repair")
			}
		case drep.Mode == "repair" && len(drep.Moves) > 0:
			e.out.warn(fmt.Sprintf("repaired what the command left damaged: %d move(s) to %s", len(drep.Moves), drep.Quarantine))
		}
	}
	return nil
}
