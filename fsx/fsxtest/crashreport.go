package fsxtest

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
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
	Refused   int    `json:"refused"`
	// Reasons counts the refusals by reason (a key of RefusalReasons).
	Reasons map[string]int `json:"reasons,omitempty"`
	Test    string         `json:"test"`
}

// RefusalReasons are the reasons a crash test may record for a refusal —
// recovery stopping on purpose, the intent left open, at a state the
// protocol cannot decide — each with what it means. The README's
// "Refusal reasons" list has the same keys (cmd/crashreport checks both ways).
var RefusalReasons = map[string]string{
	// A pending rename of a step the intent depends on left neither its
	// old nor its new name (ALICE's non-atomic rename): what was renamed
	// is gone, and recovery cannot tell whether to redo or undo.
	"rename-left-neither-name": "a rename the intent depends on left neither name (ALICE): recovery names both paths and stops",
	// The same rename left both names: which one holds the data cannot be
	// decided without guessing.
	"rename-left-both-names": "a rename the intent depends on left both names (ALICE): recovery names both paths and stops",
}

// Reasons lists RefusalReasons' keys, sorted.
func Reasons() []string {
	var out []string
	for k := range RefusalReasons {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CrashCount counts the cases one crash test checks for one protocol and
// layer, and how each ended: recovered (no open intent, and the test's
// oracle held) or refused (recovery stopped on purpose and left the intent
// open, for a state the protocol cannot decide, with a reason). Call Check
// when a case starts, then Recovered or Refused once its last assertion
// passed: a case that ends the test with t.Fatal is counted as checked and
// neither. The line is written when the test ends.
type CrashCount struct {
	t                           testing.TB
	mu                          sync.Mutex
	checked, recovered, refused int
	reasons                     map[string]int
}

// Count starts a counter for t; protocol and layer are the report's names
// (version-write, batch-write, migrate, reverse, unset-migrate, repair,
// catalog-rebuild, recovery × cut, powercut, recovery-crash, kill, errors,
// image).
func Count(t testing.TB, protocol, layer string) *CrashCount {
	c := &CrashCount{t: t}
	path := os.Getenv(ReportEnv)
	if path == "" {
		return c
	}
	t.Cleanup(func() {
		c.mu.Lock()
		line := ReportLine{Protocol: protocol, Layer: layer, Checked: c.checked, Recovered: c.recovered,
			Refused: c.refused, Reasons: c.reasons, Test: t.Name()}
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

// Refused counts the current case as refused for reason, which must be a
// key of RefusalReasons (an unknown one fails the test).
func (c *CrashCount) Refused(reason string) {
	if _, ok := RefusalReasons[reason]; !ok {
		c.t.Errorf("crash report: refusal reason %q is not one of %v", reason, Reasons())
		return
	}
	c.mu.Lock()
	c.refused++
	if c.reasons == nil {
		c.reasons = map[string]int{}
	}
	c.reasons[reason]++
	c.mu.Unlock()
}

// Counts returns how many cases were checked, recovered and refused.
func (c *CrashCount) Counts() (checked, recovered, refused int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checked, c.recovered, c.refused
}

// String is the counts in words, for logs.
func (c *CrashCount) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%d checked: %d recovered, %d refused %v", c.checked, c.recovered, c.refused, c.reasons)
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
