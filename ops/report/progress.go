// Package report is the vocabulary every operation of ops reports in:
// progress events and the Counter that emits them, the Remedy a finding or
// error advises, what recovery did with each open intent (IntentOutcome,
// StepView), and the errors of an intent left open (OpenIntentsError,
// IntentStillOpenError). Hosts name them here: report.Progress, report.Remedy.
package report

import "sync/atomic"

// ProgressEvent is one report of how far a long operation is: the phase it
// is in ("planning", "moving", "restamping catalog", "scanning",
// "verifying checksums", "recovering"; and, with no count, the single long
// calls after a walk: "reading catalog", "comparing with catalog",
// "writing catalog", the doctor's "checking ..." passes), Done of Total
// (0: unknown) counted in Unit ("files", "items", "steps"; "" for a phase
// with no count, which a renderer shows with its elapsed time).
type ProgressEvent struct {
	Phase string
	Done  int64
	Total int64
	Unit  string
	// Versions and Bytes, when not 0, are what the phase has also got
	// through so far: the doctor's scan counts items in Done, the versions
	// of those items here, and (verifying checksums) the raw bytes hashed,
	// from which a renderer shows a rate in MB/s.
	Versions int64
	Bytes    int64
}

// Progress receives ProgressEvents. It may be called from several
// goroutines at once and must not block; callers keep the rate of calls
// low (a walk reports every few hundred entries), and a renderer that
// redraws on a clock of its own only stores the latest event.
type Progress func(ProgressEvent)

// progressEvery is how many entries a walk counts between two reports.
const progressEvery = 256

// Emit calls p when it is set.
func (p Progress) Emit(phase string, done, total int64, unit string) {
	if p != nil {
		p(ProgressEvent{Phase: phase, Done: done, Total: total, Unit: unit})
	}
}

// Steps maps the executor's per-step callback to events of phase, counted
// in steps (nil when p is nil: the executor then reports nothing).
func (p Progress) Steps(phase string) func(done, total int) {
	if p == nil {
		return nil
	}
	return func(done, total int) { p.Emit(phase, int64(done), int64(total), "steps") }
}

// Counter counts the entries of a walk (atomically: walks run on workers)
// and reports every Every of them (0: every 256) to Progress as Phase,
// counted in Unit. The zero Counter, or one with no Progress, reports
// nothing.
type Counter struct {
	n        atomic.Int64
	Progress Progress
	Phase    string
	Unit     string
	// Total, if set, is read at each report (a walk still finding work).
	Total func() int64
	Every int64
	// Extra, if set, fills an event's Versions and Bytes.
	Extra func(*ProgressEvent)
}

// Add counts k more entries, reporting when a multiple of Every is passed.
func (c *Counter) Add(k int64) {
	if c == nil || c.Progress == nil {
		return
	}
	n := c.n.Add(k)
	every := c.Every
	if every <= 0 {
		every = progressEvery
	}
	if n/every != (n-k)/every {
		c.Report(n)
	}
}

// Report emits the event for n entries done.
func (c *Counter) Report(n int64) {
	if c == nil || c.Progress == nil {
		return
	}
	ev := ProgressEvent{Phase: c.Phase, Done: n, Unit: c.Unit}
	if c.Total != nil {
		ev.Total = c.Total()
	}
	if c.Extra != nil {
		c.Extra(&ev)
	}
	c.Progress(ev)
}

// Done is how many entries have been counted.
func (c *Counter) Done() int64 { return c.n.Load() }
