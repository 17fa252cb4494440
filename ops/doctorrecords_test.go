package ops_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/read"
)

// TestDoctorRunRecords: the run records swamp reads back (method outputs,
// workflow runs and their index, the audit log) that a power cut left
// zero-byte or torn are findings of the records check, and the repair
// moves them — a method output with its .log — into the run's quarantine,
// as it moves damaged versions. Good records, and a damaged one younger
// than swamp's write window (it may still be being written), stay; the
// data items are not involved.
func TestDoctorRunRecords(t *testing.T) {
	ctx := context.Background()
	r := drBuild(t, t.TempDir(), drSpec{items: []drItem{{name: "result", latest: "2", versions: []drVer{{n: 1}, {n: 2}}}}})
	at := func(rel string) string { return filepath.Join(r.Base, filepath.FromSlash(rel)) }
	old := func(rel string, data string) string {
		p := at(rel)
		dlPlant(t, p, []byte(data), time.Hour)
		return p
	}
	output := old("outputs/command/shell/execute/m1-20261201T010203.yaml", "")
	outputLog := old("outputs/command/shell/execute/m1-20261201T010203.log", "step 1 ok\n")
	run := old("workflow-runs/wf1/workflow-run-7.yaml", "id: 7\nstatus: [succeeded\n")
	index := old("workflow-runs/wf1/.runs-index.json", `{"runs": [{"id": 7`)
	audit := old("audit/2026-12-01.jsonl", "{\"cmd\":\"model method run\"}\n{\"cmd\":\"data g")
	good := []string{
		old("outputs/command/shell/execute/m2-20261201T010204.yaml", "id: m2\nlogFile: m2.log\n"),
		old("outputs/command/shell/execute/m2-20261201T010204.log", ""), // logs are not parsed
		old("workflow-runs/wf2/workflow-run-8.yaml", "id: 8\nstatus: succeeded\n"),
		old("audit/2026-11-30.jsonl", "{\"cmd\":\"data get\"}\n"),
	}
	young := at("outputs/command/shell/execute/m3-20261201T010205.yaml")
	dlPlant(t, young, nil, 0)
	damaged := []string{audit, output, index, run}
	sort.Strings(damaged)

	findings := func(rep *doctor.Report) []string {
		var out []string
		for _, f := range rep.Findings {
			if f.Code == doctor.CodeRecordUnreadable {
				out = append(out, f.Path)
			}
		}
		sort.Strings(out)
		return out
	}
	recordsCheck := func(rep *doctor.Report) doctor.Check {
		for _, c := range rep.Checks {
			if c.ID == "records" {
				return c
			}
		}
		t.Fatalf("no records check in %+v", rep.Checks)
		return doctor.Check{}
	}

	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}})
	if err != nil {
		t.Fatal(err)
	}
	drWant(t, "damaged records", findings(rep), damaged)
	if rep.Remaining != len(damaged) || rep.Records != 8 {
		t.Errorf("remaining %d (want %d), records read %d (want 8: the .log files are not records)", rep.Remaining, len(damaged), rep.Records)
	}
	if c := recordsCheck(rep); c.Passed || c.Failed != len(damaged) || c.Checked != 8 {
		t.Errorf("records check before the repair: %+v", c)
	}

	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.IntentID == 0 {
		t.Fatalf("repair: clean=%v intent=%d findings=%+v", rep.Clean(), rep.IntentID, rep.Findings)
	}
	if c := recordsCheck(rep); !c.Passed || c.Fixed != len(damaged) {
		t.Errorf("records check after the repair: %+v", c)
	}
	qrecords := filepath.Join(r.Base, ".swampj-quarantine", drStamp, "records")
	for _, p := range append(damaged, outputLog) {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
		rel, _ := filepath.Rel(r.Base, p)
		if _, err := os.Stat(filepath.Join(qrecords, rel)); err != nil {
			t.Errorf("%s is not in quarantine: %v", p, err)
		}
	}
	for _, p := range append(good, young) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was moved: %v", p, err)
		}
	}
	if got := drRead(t, filepath.Join(drItemDir(r, "result"), "latest")); got != "2" {
		t.Errorf("latest = %q: the data was touched", got)
	}

	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}})
	if err != nil || !rep.Clean() {
		t.Fatalf("after the repair: %v %+v", err, rep.Findings)
	}
}

// TestDoctorOnlyChangedRecordsAndStages: after a command (swampj run), the
// doctor of what it changed also looks at the run records it wrote and at
// staging directories inside the items it changed — an interrupted method
// run leaves zero-byte records as it leaves zero-byte versions — but not
// at records older than the command.
func TestDoctorOnlyChangedRecordsAndStages(t *testing.T) {
	ctx := context.Background()
	r := drBuild(t, t.TempDir(), drSpec{items: []drItem{{name: "result", latest: "2", versions: []drVer{{n: 1}, {n: 2}}}}})
	since := time.Now().Add(-30 * time.Minute)
	outputs := filepath.Join(r.Base, "outputs", "command", "shell", "execute")
	written := filepath.Join(outputs, "m1-20261201T010203.yaml")
	writtenLog := filepath.Join(outputs, "m1-20261201T010203.log")
	dlPlant(t, written, nil, 10*time.Minute) // by the command, and past the write window
	dlPlant(t, writtenLog, []byte("half a run\n"), 10*time.Minute)
	before := filepath.Join(outputs, "m0-20261130T010203.yaml")
	dlPlant(t, before, nil, 2*time.Hour) // damaged before the command: the full doctor's
	stage := filepath.Join(drItemDir(r, "result"), ".swampj-stage-3-0a1b2c")
	drWrite(t, filepath.Join(stage, "raw"), []byte("partial"))

	changed, err := read.ChangedItems(ctx, r, since, host.Common{FS: fsx.Real()})
	if err != nil {
		t.Fatal(err)
	}
	drWant(t, "changed", changed, []string{drItemDir(r, "result"), written})

	codes := func(rep *doctor.Report) []string {
		var out []string
		for _, f := range rep.Findings {
			out = append(out, string(f.Code)+" "+f.Path+" "+string(f.Status))
		}
		sort.Strings(out)
		return out
	}
	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Only: changed})
	if err != nil {
		t.Fatal(err)
	}
	drWant(t, "findings of the changed", codes(rep), []string{
		"record_unreadable " + written + " found",
		"staging_leftover " + stage + " found",
	})

	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Only: changed, Repair: true, Confirm: true, Now: drNow})
	if err != nil || !rep.Clean() {
		t.Fatalf("repair of the changed: %v %+v", err, rep.Findings)
	}
	for _, p := range []string{written, writtenLog, stage} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	if _, err := os.Stat(before); err != nil {
		t.Errorf("the record older than the command was moved: %v", err)
	}
	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}})
	if err != nil {
		t.Fatal(err)
	}
	drWant(t, "the full doctor afterwards", codes(rep), []string{"record_unreadable " + before + " found"})
}
