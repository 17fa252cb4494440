package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

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
				Usage:     "show one intent with all its steps, or a wrapped run (runN, as journal list names it)",
				ArgsUsage: "ID|runN",
				Action:    runJournalShow,
			},
		},
	})
}

type intentLine struct {
	ID        uint64 `json:"id"`
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	Direction string `json:"direction,omitempty"`
	Summary   string `json:"summary"`
	CreatedAt string `json:"createdAt"`
	Steps     int    `json:"steps"`
	LastError string `json:"lastError,omitempty"`
	// InProgress: an open intent whose writer is alive beside others
	// (journal.IntentLive): a write under way, not an interrupted one.
	InProgress bool `json:"inProgress,omitempty"`
	PID        int  `json:"pid,omitempty"`
}

// inspectJournal is the repo's directory, once its format allows this
// swampj to read it, and the options of a look into its journal.
func inspectJournal(e *env) (string, recover.InspectOptions, error) {
	dir, err := e.repoDir()
	if err != nil {
		return "", recover.InspectOptions{}, err
	}
	if err := e.checkRepoFormat(dir, false); err != nil {
		return "", recover.InspectOptions{}, err
	}
	return dir, recover.InspectOptions{FS: e.fs, JournalLockTimeout: e.lockTO, Logger: e.out.logger()}, nil
}

func runJournalList(c *cli.Context) error {
	e := newEnv(c)
	dir, o, err := inspectJournal(e)
	if err != nil {
		return err
	}
	listing, err := recover.List(dir, c.Bool("all"), o)
	if err != nil {
		return err
	}
	lines := []intentLine{}
	for _, in := range listing.Intents {
		lines = append(lines, intentLine{ID: in.ID, Kind: in.Kind, Status: string(in.Status), Direction: string(in.Direction),
			Summary: in.Summary, CreatedAt: in.CreatedAt.Format("2006-01-02T15:04:05Z07:00"), Steps: len(in.Steps), LastError: in.LastError,
			InProgress: in.InProgress, PID: in.PID})
	}
	runs := wrappedRunLines(listing)
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
	return recover.Hold(c.Context, dir, c.Duration("for"), e.command(), recover.InspectOptions{FS: e.fs, JournalLockTimeout: e.lockTO},
		func() { fmt.Fprintln(c.App.Writer, "holding") })
}

func runJournalShow(c *cli.Context) error {
	e := newEnv(c)
	if c.NArg() != 1 {
		return usageErr(fmt.Errorf("journal show takes one intent id, or a wrapped run's runN"))
	}
	arg := c.Args().First()
	// journal list names wrapped runs runN: their ids are a sequence of
	// their own, apart from the intents'.
	if n, ok := strings.CutPrefix(arg, "run"); ok {
		id, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			return usageErr(fmt.Errorf("wrapped run %q is not run followed by a number", arg))
		}
		return showWrappedRun(e, id)
	}
	id, err := strconv.ParseUint(arg, 10, 64)
	if err != nil {
		return usageErr(fmt.Errorf("intent id %q is not a number (a wrapped run is runN)", arg))
	}
	dir, o, err := inspectJournal(e)
	if err != nil {
		return err
	}
	in, err := recover.Show(dir, id, o)
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

// wrappedRunShown is a wrapped run as journal show runN shows it.
type wrappedRunShown struct {
	wrappedRunLine
	// Log is the run's change log: removed when the run is closed or
	// settled, so only an open run's is on disk.
	Log   string   `json:"log"`
	Roots []string `json:"roots,omitempty"`
}

func showWrappedRun(e *env, id uint64) error {
	dir, o, err := inspectJournal(e)
	if err != nil {
		return err
	}
	r, err := recover.ShowRun(dir, id, o)
	if err != nil {
		return err
	}
	if r == nil {
		return withCode("not_found", exitFailure, fmt.Errorf("the journal keeps no wrapped run %d (swampj journal list --all lists the kept ones)", id))
	}
	s := wrappedRunShown{wrappedRunLine: wrappedRunLines(&recover.Listing{Runs: []recover.ListedRun{*r}})[0], Log: r.Log, Roots: r.Roots}
	return e.out.result(s, func(w io.Writer) {
		fmt.Fprintf(w, "Wrapped run run%d: %q\n  state:   %s\n  started: %s by pid %d\n", s.ID, s.Command, s.State, s.Started, s.PID)
		if s.Ended != "" {
			fmt.Fprintf(w, "  ended:   %s\n", s.Ended)
		}
		if s.Outcome != "" {
			fmt.Fprintf(w, "  outcome: %s\n", s.Outcome)
		}
		if !s.Guarded {
			fmt.Fprintln(w, "  unguarded: ran without the write barrier, its changes are not in the log")
		}
		if s.State == "closed" {
			fmt.Fprintf(w, "  log:     %s (removed when the run closed)\n", s.Log)
		} else {
			fmt.Fprintf(w, "  log:     %s\n", s.Log)
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

func wrappedRunLines(listing *recover.Listing) []wrappedRunLine {
	out := []wrappedRunLine{}
	for _, r := range listing.Runs {
		l := wrappedRunLine{ID: r.ID, Command: r.Command, PID: r.PID, Started: r.Started.Format(time.RFC3339), Guarded: r.Guarded, Outcome: r.Outcome, State: "closed"}
		switch {
		case r.Ended != nil:
			l.Ended = r.Ended.Format(time.RFC3339)
		case r.Live:
			l.State = "running"
		default:
			l.State = "dead"
		}
		out = append(out, l)
	}
	return out
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
