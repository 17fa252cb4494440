package main

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/swampj/swampj/ops/report"
)

// progressTick is how often the progress line is redrawn: on a clock of its
// own, so a long single step (the restamp's commit) still shows time going.
const progressTick = 250 * time.Millisecond

// progressLine is the one line of progress on stderr: the latest event the
// library reported, redrawn by a ticker as
// "{phase} {done}/{total} {unit} ({rate}/s, {elapsed})".
type progressLine struct {
	p        *printer
	mu       sync.Mutex // guards the fields below (events come from workers)
	ev       report.ProgressEvent
	start    time.Time // first event
	phaseAt  time.Time // first event of the current phase
	width    int       // characters of the last line drawn
	stop     chan struct{}
	done     chan struct{}
	newPhase chan struct{} // a phase began: draw it now, not at the next tick
}

// progress returns the callback a command passes to the library, or nil
// when no progress is shown (stderr not a terminal, --json, --quiet). The
// ticker starts at the first event; endProgress stops it and clears the
// line (result, warn, and every command that passes a callback defers it).
func (p *printer) progress() report.Progress {
	if p.json || p.quiet || !p.tty {
		return nil
	}
	return func(ev report.ProgressEvent) {
		p.mu.Lock()
		b := p.bar
		first := b == nil
		if first {
			// The first event is drawn here, on the caller's goroutine,
			// before the ticker starts: a scheduler that runs the ticker's
			// goroutine late (a loaded machine) cannot skip it, and no line
			// is ever drawn without a phase.
			now := time.Now()
			b = &progressLine{p: p, ev: ev, start: now, phaseAt: now, stop: make(chan struct{}), done: make(chan struct{}),
				newPhase: make(chan struct{}, 1)}
			p.bar = b
		}
		p.mu.Unlock()
		if first {
			b.draw()
			go b.run()
			return
		}
		b.mu.Lock()
		changed := ev.Phase != b.ev.Phase
		if changed {
			b.phaseAt = time.Now()
		}
		b.ev = ev
		b.mu.Unlock()
		if changed {
			// A phase shorter than a tick would otherwise never be seen
			// (the doctor's checksum pass over a small repo takes less).
			select {
			case b.newPhase <- struct{}{}:
			default:
			}
		}
	}
}

func (b *progressLine) run() {
	defer close(b.done)
	t := time.NewTicker(progressTick)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.draw()
		case <-b.newPhase:
			b.draw()
		}
	}
}

func (b *progressLine) draw() {
	b.mu.Lock()
	line := b.format(time.Now())
	phase := b.ev.Phase
	prev := b.width
	b.width = len(line)
	b.mu.Unlock()
	b.p.out.Lock()
	defer b.p.out.Unlock()
	if b.p.drawn == 0 {
		prev = 0 // cleared since (a line was printed above it)
	}
	b.p.drawn = len(line)
	if b.p.noColor {
		pad := ""
		if prev > len(line) {
			pad = strings.Repeat(" ", prev-len(line))
		}
		fmt.Fprint(b.p.stderr, "\r"+line+pad)
		return
	}
	fmt.Fprint(b.p.stderr, "\r\033[1m"+phase+"\033[0m"+line[len(phase):]+"\033[K")
}

// aboveProgress prints whole lines (print writes them) where a progress
// line may be on screen: the line is cleared first and drawn again at the
// next tick, and no draw can land in the middle (the progress events come
// from the library's workers, so a draw may be due at any moment).
func (p *printer) aboveProgress(print func()) {
	p.out.Lock()
	defer p.out.Unlock()
	p.clearLocked()
	print()
}

// clearLocked clears the progress line on screen, if any (p.out held).
func (p *printer) clearLocked() {
	if p.drawn == 0 {
		return
	}
	if p.noColor {
		fmt.Fprint(p.stderr, "\r"+strings.Repeat(" ", p.drawn)+"\r")
	} else {
		fmt.Fprint(p.stderr, "\r\033[K")
	}
	p.drawn = 0
}

// format renders the line (b.mu held).
func (b *progressLine) format(now time.Time) string {
	ev := b.ev
	var s strings.Builder
	s.WriteString(ev.Phase)
	if ev.Unit != "" || ev.Done > 0 {
		fmt.Fprintf(&s, " %d", ev.Done)
		if ev.Total > 0 {
			fmt.Fprintf(&s, "/%d", ev.Total)
		}
		if ev.Unit != "" {
			s.WriteString(" " + ev.Unit)
		}
		rate := 0.0
		if d := now.Sub(b.phaseAt).Seconds(); d > 0 {
			rate = float64(ev.Done) / d
		}
		fmt.Fprintf(&s, " (%s/s, %s)", formatRate(rate), now.Sub(b.start).Truncate(100*time.Millisecond))
		if ev.Versions > 0 {
			fmt.Fprintf(&s, ", %d versions", ev.Versions)
		}
		if d := now.Sub(b.phaseAt).Seconds(); ev.Bytes > 0 && d > 0 {
			fmt.Fprintf(&s, ", %.1f MB/s", float64(ev.Bytes)/1e6/d)
		}
	} else {
		fmt.Fprintf(&s, " (%s)", now.Sub(b.start).Truncate(100*time.Millisecond))
	}
	return s.String()
}

func formatRate(r float64) string {
	switch {
	case r >= 10000:
		return fmt.Sprintf("%.0fk", r/1000)
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	default:
		return fmt.Sprintf("%.1f", r)
	}
}

// endProgress stops the ticker and clears the line. A later event starts
// it again (a warning in the middle of a run).
func (p *printer) endProgress() {
	p.mu.Lock()
	b := p.bar
	p.bar = nil
	p.mu.Unlock()
	if b == nil {
		return
	}
	close(b.stop)
	<-b.done
	p.out.Lock()
	p.clearLocked()
	p.out.Unlock()
}
