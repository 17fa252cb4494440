package write

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/internal/protocol"
)

// TestWriteLogsItsSteps: a real write with a JSON handler at level Debug
// leaves one record for the intent, one per step — carrying the intent id,
// the step's number, kind and path, what the observation said and what was
// done — and one when the intent is settled.
func TestWriteLogsItsSteps(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})

	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v2")}, WriteOptions{Common: host.Common{Logger: log}})
	id := float64(got.IntentID)

	var intents, settled int
	var steps []map[string]any
	for _, rec := range decodeLog(t, &buf) {
		if rec["intent"] != id {
			t.Errorf("a record of another intent (this write is intent %v): %v", id, rec)
		}
		switch rec["msg"] {
		case "intent":
			intents++
			if rec["kind"] != IntentKindVersionWrite || rec["direction"] != "forward" {
				t.Errorf("intent record: %v", rec)
			}
		case "step":
			steps = append(steps, rec)
		case "intent settled":
			settled++
			if rec["status"] != "done" {
				t.Errorf("settled record: %v", rec)
			}
		}
	}
	if intents != 1 || settled != 1 || len(steps) < 4 {
		t.Fatalf("want 1 intent record, 1 settled, a record per step; got %d, %d, %d steps:\n%s", intents, settled, len(steps), buf.String())
	}
	kinds := map[string]bool{}
	for i, s := range steps {
		if s["step"] != float64(i+1) {
			t.Errorf("record %d is of step %v", i+1, s["step"])
		}
		if s["observed"] == nil || s["outcome"] == nil {
			t.Errorf("step record without its observation or outcome: %v", s)
		}
		kind, _ := s["kind"].(string)
		kinds[kind] = true
		if kind == "write" && (s["outcome"] != "applied" || !strings.HasSuffix(s["path"].(string), "/latest")) {
			t.Errorf("the latest pointer's step: %v", s)
		}
	}
	for _, k := range []string{"stage", "rename", "write", protocol.KindCatalogPublish} {
		if !kinds[k] {
			t.Errorf("no record of a %s step; kinds logged: %v", k, kinds)
		}
	}
}

// TestWarnOnlyLoggerGetsNoSteps: a logger that does not want debug gets no
// step records (the executor does not build them) and, on a clean write,
// nothing at all.
func TestWarnOnlyLoggerGetsNoSteps(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{Common: host.Common{Logger: log}})
	if buf.Len() != 0 {
		t.Fatalf("a Warn-level logger got records of a clean write:\n%s", buf.String())
	}
}
