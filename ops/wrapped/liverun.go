package wrapped

import (
	"fmt"
	"strings"
	"time"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
)

// LiveRuns are the wrapped runs of the journal j (at journalPath) whose
// wrapper is alive: an open record whose change log its wrapper still
// flocks. A live log without a record is a run still waiting to be
// recorded; a caller holding the journal alone is done before it starts.
func LiveRuns(fsys fsx.FS, j *journal.Journal, journalPath string) ([]*journal.Run, error) {
	logs, err := journal.RunLogs(fsys, journalPath)
	if err != nil || len(logs) == 0 {
		return nil, err
	}
	live := map[string]bool{}
	for _, l := range logs {
		if journal.RunLive(l) {
			live[l] = true
		}
	}
	if len(live) == 0 {
		return nil, nil
	}
	runs, err := j.Runs(false)
	if err != nil {
		return nil, err
	}
	var out []*journal.Run
	for _, r := range runs {
		if live[r.Log] {
			out = append(out, r)
		}
	}
	return out, nil
}

// LiveRunError refuses a namespace change while a wrapped command runs in
// the repo. A command reads the datastore path once, when it starts (swamp
// serve for its whole life): after the change it would go on writing at
// the old root, splitting items across two roots that a migration then
// refuses to merge. Nothing was changed.
type LiveRunError struct {
	Runs []*journal.Run
}

func (e *LiveRunError) Error() string {
	var each []string
	for _, r := range e.Runs {
		each = append(each, fmt.Sprintf("run %d, pid %d, %q, started %s", r.ID, r.PID, strings.Join(r.Command, " "), r.Started.Format(time.RFC3339)))
	}
	return fmt.Sprintf("%d wrapped command(s) are running in this repo (%s); nothing was changed: a running command keeps the datastore path "+
		"it started with and would go on writing at the old root. Stop it (a service: systemctl stop it), make the namespace change, "+
		"then start it again", len(e.Runs), strings.Join(each, "; "))
}

// Code is the stable error code.
func (e *LiveRunError) Code() string { return "wrapped_run_live" }

// Class: busy, like a lock another process holds; the change works once
// the command has ended.
func (e *LiveRunError) Class() swampj.Class { return swampj.ClassBusy }
