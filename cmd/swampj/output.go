package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// printer is the one way commands talk to the user: results on stdout (text,
// or one JSON document under --json), warnings and progress on stderr.
type printer struct {
	stdout, stderr io.Writer
	json, quiet    bool
	verbose        bool
	tty            bool
	mu             sync.Mutex
	lastProgress   time.Time
	progressShown  bool
}

func newPrinter(stdout, stderr io.Writer, asJSON, quiet bool) *printer {
	return &printer{stdout: stdout, stderr: stderr, json: asJSON, quiet: quiet, tty: isTerminal(stderr)}
}

// result prints v as JSON under --json, else calls text.
func (p *printer) result(v any, text func(w io.Writer)) error {
	p.endProgress()
	if p.json {
		enc := json.NewEncoder(p.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	text(p.stdout)
	return nil
}

// warn prints a warning on stderr unless --quiet (under --json it is a JSON
// line on stderr so machines can still see it).
func (p *printer) warn(msg string) {
	if p.quiet {
		return
	}
	p.endProgress()
	if p.json {
		b, _ := json.Marshal(map[string]any{"warning": msg})
		fmt.Fprintln(p.stderr, string(b))
		return
	}
	fmt.Fprintln(p.stderr, "swampj: warning: "+msg)
}

// debug prints detail on stderr under --verbose only (a JSON line under
// --json), as swamp's -v does.
func (p *printer) debug(format string, args ...any) {
	if !p.verbose {
		return
	}
	p.endProgress()
	msg := fmt.Sprintf(format, args...)
	if p.json {
		b, _ := json.Marshal(map[string]any{"debug": msg})
		fmt.Fprintln(p.stderr, string(b))
		return
	}
	fmt.Fprintln(p.stderr, "swampj: debug: "+msg)
}

// progress draws "label done/total" on stderr, at most 10 times a second,
// only when stderr is a terminal and neither --json nor --quiet is set.
func (p *printer) progress(label string) func(done, total int) {
	if p.json || p.quiet || !p.tty {
		return nil
	}
	return func(done, total int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		now := time.Now()
		if done != total && now.Sub(p.lastProgress) < 100*time.Millisecond {
			return
		}
		p.lastProgress = now
		p.progressShown = true
		fmt.Fprintf(p.stderr, "\r%s %d/%d", label, done, total)
	}
}

func (p *printer) endProgress() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.progressShown {
		fmt.Fprint(p.stderr, "\r\033[K")
		p.progressShown = false
	}
}
