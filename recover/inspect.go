package recover

// The journal as an operator inspects it: its intents and wrapped runs,
// read without writing anything (read-only media work too), and the
// repo's journal lock held on purpose (a test of lock contention).

import (
	"context"
	"log/slog"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
)

// DefaultJournalLockTimeout is how long a journaled command waits for
// another swampj process holding the repo when its options say 0.
const DefaultJournalLockTimeout = journal.DefaultLockTimeout

// InspectOptions configure the inspection of a repo's journal.
type InspectOptions struct {
	// FS is the disk (nil: the real one).
	FS fsx.FS
	// JournalLockTimeout bounds the wait for a swampj process opening or
	// closing the journal (0: DefaultJournalLockTimeout).
	JournalLockTimeout time.Duration
	// Logger receives warnings at level Warn (nil: none).
	Logger *slog.Logger
}

func (o InspectOptions) journal() journal.Options {
	jo := journal.Options{LockTimeout: o.JournalLockTimeout}
	if o.Logger != nil {
		jo.Warn = func(msg string) { o.Logger.Warn(msg) }
	}
	return jo
}

// ListedIntent is an intent of the journal and whether its writer is
// alive beside others: a write under way, not an interrupted one.
type ListedIntent struct {
	*journal.Intent
	InProgress bool
}

// ListedRun is a wrapped run's record and whether its wrapper is alive.
type ListedRun struct {
	*journal.Run
	Live bool
}

// Listing is what the journal of a repo holds.
type Listing struct {
	Intents []ListedIntent
	Runs    []ListedRun
}

// openForInspection opens the journal of the repo at dir read-only; nil,
// nil when there is none.
func openForInspection(dir string, o InspectOptions) (*journal.Journal, error) {
	path := JournalPath(dir)
	ok, err := journal.Exists(o.FS, path)
	if err != nil || !ok {
		return nil, err
	}
	return journal.OpenReadOnly(o.FS, path, o.journal())
}

// List is the open intents and the recent finished ones (all: every kept
// intent and run) of the repo at dir, changing nothing; an empty Listing
// when the repo has no journal.
func List(dir string, all bool, o InspectOptions) (*Listing, error) {
	l := &Listing{}
	j, err := openForInspection(dir, o)
	if err != nil || j == nil {
		return l, err
	}
	defer j.Close()
	intents, err := j.List(all)
	if err != nil {
		return nil, err
	}
	for _, in := range intents {
		l.Intents = append(l.Intents, ListedIntent{Intent: in, InProgress: journal.IntentLive(j.Path(), in)})
	}
	runs, err := j.Runs(all)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		l.Runs = append(l.Runs, ListedRun{Run: r, Live: r.Ended == nil && journal.RunLive(r.Log)})
	}
	return l, nil
}

// Show is intent id of the repo at dir's journal, with all its steps,
// changing nothing; a *journal.NotFoundError when there is no such intent
// (or no journal).
func Show(dir string, id uint64, o InspectOptions) (*journal.Intent, error) {
	j, err := openForInspection(dir, o)
	if err != nil {
		return nil, err
	}
	if j == nil {
		return nil, &journal.NotFoundError{ID: id}
	}
	defer j.Close()
	return j.Get(id)
}

// ShowRun is wrapped run id of the repo at dir's journal, open or closed,
// changing nothing; nil when the journal keeps no such run (closed runs
// beyond the last kept ones are pruned) or there is no journal.
func ShowRun(dir string, id uint64, o InspectOptions) (*ListedRun, error) {
	j, err := openForInspection(dir, o)
	if err != nil || j == nil {
		return nil, err
	}
	defer j.Close()
	runs, err := j.Runs(true)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if r.ID == id {
			return &ListedRun{Run: r, Live: r.Ended == nil && journal.RunLive(r.Log)}, nil
		}
	}
	return nil, nil
}

// Hold opens the journal of the repo at dir, holding its lock until d has
// passed or ctx is done; opened is called once it is held. command is
// recorded as the holder.
func Hold(ctx context.Context, dir string, d time.Duration, command []string, o InspectOptions, opened func()) error {
	j, err := journal.Open(o.FS, JournalPath(dir), journal.Options{LockTimeout: o.JournalLockTimeout, Command: command})
	if err != nil {
		return err
	}
	defer j.Close()
	opened()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	return nil
}
