package repo

import (
	"path/filepath"
	"strings"
)

// RecordDirs are the datastore-tier trees whose run records swamp reads
// back: method outputs, workflow runs and its command audit.
var RecordDirs = []string{"outputs", "workflow-runs", "audit"}

// RecordRoots are the record trees of r's datastore tier,
// {base}[/{ns}]/{outputs,workflow-runs,audit}, in RecordDirs order.
func (r *Repo) RecordRoots() []string {
	roots := make([]string, len(RecordDirs))
	for i, sub := range RecordDirs {
		if r.Namespace == "" {
			roots[i] = filepath.Join(r.Base, sub)
		} else {
			roots[i] = filepath.Join(r.Base, r.Namespace, sub)
		}
	}
	return roots
}

// IsRecordName reports whether a file of a record tree is a record swamp
// parses (a .log is not; dot-files are swamp's temp files, except its runs
// index).
func IsRecordName(n string) bool {
	if strings.HasPrefix(n, ".") && n != ".runs-index.json" {
		return false
	}
	return strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".jsonl")
}
