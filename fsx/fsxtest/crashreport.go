package fsxtest

import (
	"encoding/json"
	"os"
	"sync"
	"testing"
)

// ReportEnv names the file the crash tests append their counts to, one JSON
// line per test (cmd/crashreport aggregates them into crash-report.json).
// Nothing is written when it is unset.
const ReportEnv = "SWAMPJ_CRASH_REPORT"

// ReportLine is one line of the report file.
type ReportLine struct {
	Protocol  string `json:"protocol"`
	Layer     string `json:"layer"`
	Checked   int    `json:"checked"`
	Recovered int    `json:"recovered"`
	Test      string `json:"test"`
}

// CrashCount counts the cases one crash test checks for one protocol and
// layer, and how many of them recovered (the test's oracle held). Call
// Check when a case starts and Recovered when its last assertion passed:
// a case that ends the test with t.Fatal is counted as checked and not
// recovered. The line is written when the test ends.
type CrashCount struct {
	mu                 sync.Mutex
	checked, recovered int
}

// Count starts a counter for t; protocol and layer are the report's names
// (version-write, batch-write, migrate, reverse, unset-migrate, repair,
// catalog-rebuild, recovery × cut, powercut, recovery-crash, kill, errors,
// image).
func Count(t testing.TB, protocol, layer string) *CrashCount {
	c := &CrashCount{}
	path := os.Getenv(ReportEnv)
	if path == "" {
		return c
	}
	t.Cleanup(func() {
		c.mu.Lock()
		line := ReportLine{Protocol: protocol, Layer: layer, Checked: c.checked, Recovered: c.recovered, Test: t.Name()}
		c.mu.Unlock()
		if t.Skipped() && line.Checked == 0 {
			return
		}
		b, _ := json.Marshal(line)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Errorf("crash report: %v", err)
			return
		}
		defer f.Close()
		if _, err := f.Write(append(b, '\n')); err != nil {
			t.Errorf("crash report: %v", err)
		}
	})
	return c
}

// Check counts one case as started.
func (c *CrashCount) Check() {
	c.mu.Lock()
	c.checked++
	c.mu.Unlock()
}

// Recovered counts the current case as passed.
func (c *CrashCount) Recovered() {
	c.mu.Lock()
	c.recovered++
	c.mu.Unlock()
}

// Case counts one case that is already decided: ok says whether it held.
func (c *CrashCount) Case(ok bool) {
	c.mu.Lock()
	c.checked++
	if ok {
		c.recovered++
	}
	c.mu.Unlock()
}
