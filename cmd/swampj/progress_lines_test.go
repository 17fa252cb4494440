package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/report"
)

// slowTerminal is a terminal's byte stream: every Write lands whole, and
// takes a while (a slow pty, a remote session), which widens the windows
// in which another goroutine's write can get in between two of ours.
type slowTerminal struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *slowTerminal) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	time.Sleep(50 * time.Microsecond)
	return l.b.Write(p)
}

// Under -v on a terminal, the executor's debug records and warnings come
// from the library while its workers send progress events. Every such
// line must start on a line of its own: at the start of the stream, after
// a newline, or after the progress line was cleared ("\r\033[K") — never
// after a progress line drawn in between. They used to be printed after
// stopping the ticker, and an event from a worker could start it again
// and draw before the line was written.
func TestLogLinesNeverShareAProgressLine(t *testing.T) {
	var out slowTerminal
	p := &printer{stdout: &bytes.Buffer{}, stderr: &out, verbose: true, tty: true}
	emit := p.progress()
	log := p.logger()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // a worker's progress, changing phase so every event draws
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			emit(report.ProgressEvent{Phase: []string{"scanning", "checking items"}[i%2], Done: int64(i), Unit: "items"})
		}
	}()
	for i := 0; i < 2000; i++ {
		if i%10 == 0 {
			log.Warn("a warning", "i", i)
		} else {
			log.DebugContext(context.Background(), "step", "i", i)
		}
	}
	close(stop)
	wg.Wait()
	p.endProgress()

	s := out.b.String()
	bad := 0
	for _, start := range []string{"time=", "swampj: warning: "} {
		for i := 0; ; {
			j := strings.Index(s[i:], start)
			if j < 0 {
				break
			}
			at := i + j
			// A drawn line ends "…)\033[K"; only the clear is "\r\033[K".
			ok := at == 0 || s[at-1] == '\n' || strings.HasSuffix(s[:at], "\r\033[K")
			if !ok {
				bad++
				if bad < 4 {
					lo := max(0, at-80)
					t.Errorf("a line starts in the middle of a progress line: %q", s[lo:at+20])
				}
			}
			i = at + len(start)
		}
	}
	if bad > 0 {
		t.Fatalf("%d of the lines did not start on a line of their own", bad)
	}
}
