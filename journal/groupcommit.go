package journal

// Group commit: Begin calls of one holder that arrive while a commit is in
// flight wait for it and then share the next one, as PostgreSQL's
// group commit and bbolt's Batch do. A holder used by many goroutines (a
// long-lived write handle) then pays the journal's two fdatasyncs once per
// group instead of once per intent.
//
// There is no timer: the first caller to find no commit in flight commits
// at once, alone, so a single writer waits for nothing more than before.
// Those who arrive meanwhile queue; when the commit ends, the first of
// them becomes the next leader and commits every intent queued by then in
// one transaction. An intent is durable, and its Begin returns, only when
// the commit that carries it has returned: no caller learns of an id
// before the intent is on disk.
//
// A failed group commit fails every Begin in it (bbolt rolls the whole
// transaction back, so none of them is in the journal), and each caller
// undoes its own staging as it would after a failed commit of its own.

import (
	"os"
	"sync"
)

// group is a holder's queue of Begin calls.
type group struct {
	mu      sync.Mutex
	queue   []*groupEntry
	leading bool // a commit is in flight, or a leader is about to start one
	// commits counts the group commits made; beforeCommit (tests) runs
	// as a leader takes its batch.
	commits      int
	beforeCommit func()
}

// groupEntry is one Begin call waiting in the queue.
type groupEntry struct {
	in   *Intent
	done chan struct{} // closed once: its commit has ended, or it is to lead
	lead bool          // set before done is closed: the entry commits the next group
	err  error
}

// commit puts in into the next group commit and returns once that commit
// has ended (err: its failure).
func (g *group) commit(j *Journal, in *Intent) error {
	e := &groupEntry{in: in, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, e)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if !lead {
		<-e.done
		if !e.lead {
			return e.err
		}
	}
	g.commitQueued(j, e)
	return e.err
}

// commitQueued is the leader's work: commit every queued entry in one
// transaction, wake them, and hand the lead to the first entry that queued
// meanwhile (or give it up). self is the leader's own entry: it is not
// woken (a promoted leader's done is already closed).
func (g *group) commitQueued(j *Journal, self *groupEntry) {
	if g.beforeCommit != nil {
		g.beforeCommit()
	}
	g.mu.Lock()
	g.commits++
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()

	ins := make([]*Intent, len(batch))
	for i, e := range batch {
		ins[i] = e.in
	}
	err := j.beginAll(ins)

	g.mu.Lock()
	var next *groupEntry
	if len(g.queue) > 0 {
		next = g.queue[0]
		next.lead = true
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	for _, e := range batch {
		e.err = err
		if e != self {
			close(e.done)
		}
	}
	if next != nil {
		close(next.done)
	}
}

var (
	hostOnce sync.Once
	hostName string
)

// hostname is os.Hostname, read once per process (every intent records it).
func hostname() string {
	hostOnce.Do(func() { hostName, _ = os.Hostname() })
	return hostName
}
