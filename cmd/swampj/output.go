package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// outputWriter is stdout as every command writes it: it keeps the first
// write error, so that a result that could not be written (a full disk, a
// closed file) fails the command whichever command printed it and however
// (text, a table, JSON, a copied data stream). After it, nothing more is
// written: a half-written result is not followed by more of it.
type outputWriter struct {
	w   io.Writer
	err error
}

func (o *outputWriter) Write(b []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(b)
	if err != nil {
		o.err = err
	}
	return n, err
}

// failure is the command's error when its output was lost: the command
// itself ran to its end.
func (o *outputWriter) failure() error {
	return withCode("output_failed", exitFailure, fmt.Errorf(
		"could not write the result to stdout (%v): the command itself ran to its end, any change it made is done; only its output is lost", o.err))
}

// printable is s for a line of text output: as it is, or, when it holds a
// control character (a data name may hold a newline, as in swamp), quoted
// in Go's %q style, so one name stays on its line and in its column.
func printable(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	return strconv.Quote(s)
}

// printer is the one way commands talk to the user: results on stdout (text,
// or one JSON document under --json), warnings and progress on stderr.
type printer struct {
	stdout, stderr io.Writer
	json, quiet    bool
	verbose        bool
	tty            bool
	noColor        bool
	mu             sync.Mutex
	bar            *progressLine
	// out serializes what goes to stderr while a progress line may be on
	// screen: the line's draws, and the whole lines (warnings, debug
	// records) that clear it first. drawn is the width of the progress
	// line on screen now (0: none); both are guarded by out.
	out   sync.Mutex
	drawn int
	// warned holds the warnings already printed: one the CLI gives and the
	// library repeats (an unreadable format marker) is said once. Guarded
	// by mu.
	warned map[string]bool
}

func newPrinter(stdout, stderr io.Writer, asJSON, quiet bool) *printer {
	_, noColor := os.LookupEnv("NO_COLOR")
	return &printer{stdout: stdout, stderr: stderr, json: asJSON, quiet: quiet, tty: isTerminal(stderr), noColor: noColor}
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
	p.mu.Lock()
	seen := p.warned[msg]
	if p.warned == nil {
		p.warned = map[string]bool{}
	}
	p.warned[msg] = true
	p.mu.Unlock()
	if seen {
		return
	}
	p.aboveProgress(func() {
		if p.json {
			b, _ := json.Marshal(map[string]any{"warning": msg})
			fmt.Fprintln(p.stderr, string(b))
			return
		}
		fmt.Fprintln(p.stderr, "swampj: warning: "+msg)
	})
}

// debug prints detail on stderr under --verbose only (a JSON line under
// --json), as swamp's -v does.
func (p *printer) debug(format string, args ...any) {
	if !p.verbose {
		return
	}
	msg := fmt.Sprintf(format, args...)
	p.aboveProgress(func() {
		if p.json {
			b, _ := json.Marshal(map[string]any{"debug": msg})
			fmt.Fprintln(p.stderr, string(b))
			return
		}
		fmt.Fprintln(p.stderr, "swampj: debug: "+msg)
	})
}
