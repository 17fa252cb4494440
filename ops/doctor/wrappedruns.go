package doctor

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/report"
)

// checkWrappedRuns reports the commands wrapped by `swampj run`: a live one
// as a note (it is writing under the barrier now), one whose wrapper died
// without its final barrier as a finding — what it changed is unchecked
// until recovery settles it (package ops/wrapped). Judged from the change
// logs beside the journal and their flocks, without opening the journal.
func (s *survey) checkWrappedRuns(ctx context.Context) error {
	logs, err := journal.RunLogs(s.fsys, s.r.JournalPath)
	if err != nil {
		return nil // .swamp unreadable: the other checks say so
	}
	for _, l := range logs {
		pid, started := runLogName(s.r.JournalPath, l)
		if journal.RunLive(l) {
			s.notes = append(s.notes, Note(fmt.Sprintf("a wrapped command (pid %d, since %s) is running under the write barrier; "+
				"what it writes may change while this runs", pid, started), report.RemedyCheckAgain))
			continue
		}
		s.general.add(Finding{Code: CodeWrappedRunUnsettled, Path: l,
			Message: fmt.Sprintf("a wrapped command (pid %d, started %s) ended without its final barrier and doctor "+
				"(a power cut, SIGKILL or the OOM killer); what it changed has not been checked", pid, started),
			Fix:    "none here: recovery settles it (doctors and repairs what its change log names, quarantine only)",
			Remedy: report.RemedyRecover, Then: report.RemedyCheckAgain}, false)
	}
	return nil
}

// runLogName reads the wrapper's pid and start time from a change log's
// name ({journal}.run-{unix nanos}-{pid}).
func runLogName(journalPath, log string) (int, string) {
	rest := strings.TrimPrefix(filepath.Base(log), filepath.Base(journalPath)+".run-")
	nanos, pidStr, _ := strings.Cut(rest, "-")
	pid, _ := strconv.Atoi(pidStr)
	n, err := strconv.ParseInt(nanos, 10, 64)
	if err != nil {
		return pid, "an unknown time"
	}
	return pid, time.Unix(0, n).UTC().Format(time.RFC3339)
}
