package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/recover"
)

func init() {
	register(&cli.Command{
		Name:  "journal",
		Usage: "inspect the intent journal",
		Subcommands: []*cli.Command{
			{
				Name:   "list",
				Usage:  "list open intents and recent finished ones",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "every kept intent (the last 1000 finished)"}},
				Action: runJournalList,
			},
			{
				Name:   "hold",
				Usage:  "take the repo lock and hold it (for tests of lock contention)",
				Hidden: true,
				Flags:  []cli.Flag{&cli.DurationFlag{Name: "for", Value: 5 * time.Second}},
				Action: runJournalHold,
			},
			{
				Name:      "show",
				Usage:     "show one intent with all its steps",
				ArgsUsage: "ID",
				Action:    runJournalShow,
			},
		},
	})
}

type intentLine struct {
	ID        uint64            `json:"id"`
	Kind      string            `json:"kind"`
	Status    journal.Status    `json:"status"`
	Direction journal.Direction `json:"direction,omitempty"`
	Summary   string            `json:"summary"`
	CreatedAt string            `json:"createdAt"`
	Steps     int               `json:"steps"`
	LastError string            `json:"lastError,omitempty"`
	// InProgress: an open intent whose writer is alive beside others
	// (journal.IntentLive): a write under way, not an interrupted one.
	InProgress bool `json:"inProgress,omitempty"`
	PID        int  `json:"pid,omitempty"`
}

func openJournalReadOnly(e *env) (*journal.Journal, bool, error) {
	dir, err := e.repoDir()
	if err != nil {
		return nil, false, err
	}
	if err := e.checkRepoFormat(dir, false); err != nil {
		return nil, false, err
	}
	path := recover.JournalPath(dir)
	ok, err := journal.Exists(e.fs, path)
	if err != nil || !ok {
		return nil, false, err
	}
	// An inspection writes nothing (read-only media work too).
	j, err := journal.OpenReadOnly(e.fs, path, journal.Options{LockTimeout: e.lockTO, Warn: e.out.warn})
	return j, err == nil, err
}

func runJournalList(c *cli.Context) error {
	e := newEnv(c)
	j, ok, err := openJournalReadOnly(e)
	if err != nil {
		return err
	}
	lines := []intentLine{}
	if ok {
		defer j.Close()
		all, err := j.List(c.Bool("all"))
		if err != nil {
			return err
		}
		for _, in := range all {
			lines = append(lines, intentLine{ID: in.ID, Kind: in.Kind, Status: in.Status, Direction: in.Direction,
				Summary: in.Summary, CreatedAt: in.CreatedAt.Format("2006-01-02T15:04:05Z07:00"), Steps: len(in.Steps), LastError: in.LastError,
				InProgress: journal.IntentLive(j.Path(), in), PID: in.PID})
		}
	}
	runs, err := wrappedRunLines(j, ok, c.Bool("all"))
	if err != nil {
		return err
	}
	return e.out.result(map[string]any{"intents": lines, "wrappedRuns": runs}, func(w io.Writer) {
		printWrappedRuns(w, runs)
		if len(lines) == 0 {
			if len(runs) == 0 {
				fmt.Fprintln(w, "The journal is empty.")
			}
			return
		}
		for _, l := range lines {
			fmt.Fprintf(w, "%6d  %-12s %-14s %s  %s (%d steps)\n", l.ID, l.Status, l.Kind, l.CreatedAt, printable(l.Summary), l.Steps)
			if l.InProgress {
				fmt.Fprintf(w, "        in progress: pid %d is writing it now\n", l.PID)
			}
			if l.LastError != "" {
				fmt.Fprintf(w, "        last error: %s\n", l.LastError)
			}
		}
	})
}

func runJournalHold(c *cli.Context) error {
	e := newEnv(c)
	dir, err := e.repoDir()
	if err != nil {
		return err
	}
	if err := e.checkRepoFormat(dir, true); err != nil {
		return err
	}
	j, err := journal.Open(e.fs, recover.JournalPath(dir), journal.Options{LockTimeout: e.lockTO, Command: e.command()})
	if err != nil {
		return err
	}
	defer j.Close()
	fmt.Fprintln(c.App.Writer, "holding")
	select {
	case <-time.After(c.Duration("for")):
	case <-c.Context.Done():
	}
	return nil
}

func runJournalShow(c *cli.Context) error {
	e := newEnv(c)
	if c.NArg() != 1 {
		return usageErr(fmt.Errorf("journal show takes one intent id"))
	}
	id, err := strconv.ParseUint(c.Args().First(), 10, 64)
	if err != nil {
		return usageErr(fmt.Errorf("intent id %q is not a number", c.Args().First()))
	}
	j, ok, err := openJournalReadOnly(e)
	if err != nil {
		return err
	}
	if !ok {
		return &journal.NotFoundError{ID: id}
	}
	defer j.Close()
	in, err := j.Get(id)
	if err != nil {
		return err
	}
	return e.out.result(in, func(w io.Writer) {
		fmt.Fprintf(w, "Intent %d: %s (%s)\n  status:  %s %s\n  created: %s by pid %d on %s\n",
			in.ID, printable(in.Summary), in.Kind, in.Status, in.Direction, in.CreatedAt.Format("2006-01-02T15:04:05Z07:00"), in.PID, in.Host)
		if len(in.Command) > 0 {
			fmt.Fprintf(w, "  command: %v\n", in.Command)
		}
		if in.LastError != "" {
			fmt.Fprintf(w, "  error:   %s\n", in.LastError)
		}
		for i := range in.Steps {
			fmt.Fprintf(w, "  %3d  %s\n", i+1, ops.DescribeStep(&in.Steps[i]))
		}
	})
}

// wrappedRunLine is a `swampj run` record as journal list shows it.
type wrappedRunLine struct {
	ID      uint64   `json:"id"`
	Command []string `json:"command"`
	PID     int      `json:"pid"`
	Started string   `json:"started"`
	// State: "running" (its wrapper is alive), "dead" (its wrapper ended
	// without its final barrier: the next swampj run, recover, write or
	// migration settles it), or "closed".
	State   string `json:"state"`
	Guarded bool   `json:"guarded"`
	Ended   string `json:"ended,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

func wrappedRunLines(j *journal.Journal, ok, all bool) ([]wrappedRunLine, error) {
	out := []wrappedRunLine{}
	if !ok {
		return out, nil
	}
	runs, err := j.Runs(all)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		l := wrappedRunLine{ID: r.ID, Command: r.Command, PID: r.PID, Started: r.Started.Format(time.RFC3339), Guarded: r.Guarded, Outcome: r.Outcome, State: "closed"}
		switch {
		case r.Ended != nil:
			l.Ended = r.Ended.Format(time.RFC3339)
		case journal.RunLive(r.Log):
			l.State = "running"
		default:
			l.State = "dead"
		}
		out = append(out, l)
	}
	return out, nil
}

func printWrappedRuns(w io.Writer, runs []wrappedRunLine) {
	for _, r := range runs {
		fmt.Fprintf(w, "   run%-3d %-12s %s  %q (pid %d)\n", r.ID, r.State, r.Started, r.Command, r.PID)
		switch r.State {
		case "running":
			fmt.Fprintln(w, "        wrapped by swampj run, under the write barrier")
		case "dead":
			fmt.Fprintln(w, "        its wrapper ended without the final barrier: 'swampj recover' settles it")
		default:
			if r.Outcome != "" {
				fmt.Fprintf(w, "        %s\n", r.Outcome)
			}
		}
	}
}
