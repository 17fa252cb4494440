package ops

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

// emit calls p when it is set.
func (p Progress) emit(phase string, done, total int64, unit string) {
	if p != nil {
		p(ProgressEvent{Phase: phase, Done: done, Total: total, Unit: unit})
	}
}

// counter counts entries of a walk (atomically: walks run on workers) and
// reports every progressEvery of them.
type counter struct {
	n     atomic.Int64
	p     Progress
	phase string
	unit  string
	total func() int64
	every int64 // entries between reports (0: progressEvery)
	// extra, if set, fills an event's Versions and Bytes.
	extra func(*ProgressEvent)
}

func (c *counter) add(k int64) {
	if c == nil || c.p == nil {
		return
	}
	n := c.n.Add(k)
	every := c.every
	if every <= 0 {
		every = progressEvery
	}
	if n/every != (n-k)/every {
		c.report(n)
	}
}

// report emits the event for n entries done.
func (c *counter) report(n int64) {
	if c == nil || c.p == nil {
		return
	}
	ev := ProgressEvent{Phase: c.phase, Done: n, Unit: c.unit}
	if c.total != nil {
		ev.Total = c.total()
	}
	if c.extra != nil {
		c.extra(&ev)
	}
	c.p(ev)
}

// stepProgress maps the executor's per-step callback (Env.Progress) to
// events of phase, counted in steps.
func stepProgress(p Progress, phase string) func(done, total int) {
	if p == nil {
		return nil
	}
	return func(done, total int) { p.emit(phase, int64(done), int64(total), "steps") }
}
