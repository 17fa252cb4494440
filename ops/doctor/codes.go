package doctor

// The doctor's vocabulary in one place: every finding code, the check it
// counts under, the file whose check raises it and the remedy it usually
// carries; and the survey's phases, in the order they run.
//
// Adding a check means one new file and lines here: the file holds the
// phase (a method of *survey that appends findings, with units that carry
// their repair, to s.units or s.general) and the code constants it raises;
// here, one line in phases, one in codeTable per code and, for a new
// check id, one in checkIDs.

import (
	"context"

	"github.com/swampj/swampj/ops/report"
)

// Code names a kind of finding. Codes are stable: scripts read them.
type Code string

const (
	// CodeVersionUnreadable: a version directory swamp cannot read (zero-byte
	// or unparseable metadata.yaml, missing or truncated raw, …).
	CodeVersionUnreadable Code = "version_unreadable"
	// CodeLatestUnreadable: `latest` designates an unreadable version.
	CodeLatestUnreadable Code = "latest_unreadable"
	// CodeLatestNotFound: `latest` designates a version with no directory.
	CodeLatestNotFound Code = "latest_not_found"
	// CodeLatestDamaged: `latest` is missing, empty, unparsable or not a
	// positive number, so swamp falls back or finds nothing.
	CodeLatestDamaged Code = "latest_damaged"
	// CodeCatalogRowUnreadable: a catalog row (repo namespace) whose
	// version is not readable on disk.
	CodeCatalogRowUnreadable Code = "catalog_row_unreadable"
	// CodeCatalogLatestWrong: the catalog's latest flags disagree with the
	// readable latest version.
	CodeCatalogLatestWrong Code = "catalog_latest_wrong"
	// CodeCatalogUnusable: the catalog cannot be read (damaged file).
	CodeCatalogUnusable Code = "catalog_unusable"
	// CodeCatalogCopy: catalog files under {base}/{ns}/data that an older
	// swamp moved with the data (#3316); nothing reads them.
	CodeCatalogCopy Code = "catalog_copy"
	// CodeStagingLeftover: a .swampj-stage-* directory that no open intent
	// owns.
	CodeStagingLeftover Code = "staging_leftover"
	// CodeOpenIntent: an interrupted swampj operation; the disk is
	// mid-change until `swampj recover` runs.
	CodeOpenIntent Code = "open_intent"
	// CodeDirectoryUnreadable: a directory of the data root that cannot be
	// listed, so what is below it was not checked.
	CodeDirectoryUnreadable Code = "directory_unreadable"
	// CodeCatalogStale: a swampj operation finished its data change but
	// could not update the catalog (journal's stale mark); a catalog
	// rebuild makes it agree again.
	CodeCatalogStale Code = "catalog_stale"
	// CodeLockDead: a swamp lock file nobody holds (zero bytes, not a
	// lock record, or naming a holder that is gone); swamp waits on it.
	CodeLockDead Code = "lock_dead"
	// CodeJournalDamaged: the journal file cannot be read (not a bbolt
	// file, cut short): the interrupted operations it may record are
	// unknown until recovery sets it aside and starts a fresh one.
	CodeJournalDamaged Code = "journal_damaged"
	// CodeJournalHolderStale: swampj's journal holder record names a
	// process that is gone (or cannot be read): timeout messages would
	// name a holder that does not exist.
	CodeJournalHolderStale Code = "journal_holder_stale"
	// CodeWrappedRunUnsettled: a command wrapped by `swampj run` ended
	// without its final barrier and doctor (power cut, SIGKILL): what it
	// changed is unchecked until the next swampj run, recover, write or
	// migration settles it.
	CodeWrappedRunUnsettled Code = "wrapped_run_unsettled"
	// CodeRecordUnreadable: a run record swamp reads back (method output,
	// workflow run, run index, audit log) is empty or does not parse.
	CodeRecordUnreadable Code = "record_unreadable"
	// CodePathOutsideRepo: a symlink in the repo whose target is outside
	// it (fsx/confine.go, the trust boundary): not followed, so nothing
	// behind it was checked, and no repair acts there.
	CodePathOutsideRepo Code = "path_outside_repo"
	// CodeSwampCheck is a failing swamp check as a doctor finding.
	CodeSwampCheck Code = "swamp_check_failed"
)

// CodeInfo is one finding code's row of the table.
type CodeInfo struct {
	Code Code
	// Check is the id of the check (Report.Checks) it counts under.
	Check string
	// File is the file, relative to this package's directory, whose check
	// raises it.
	File string
	// Remedy is what usually fixes it: RemedyRepair for what a confirmed
	// repair fixes, a person's action (Remedy.Human) where only a person
	// can (the finding's Fix says what). A finding may carry another where
	// it knows better.
	Remedy report.Remedy
}

// codeTable is every code the doctor reports.
var codeTable = []CodeInfo{
	{CodeVersionUnreadable, "versions", "items.go", report.RemedyRepair},
	{CodeDirectoryUnreadable, "versions", "helpers.go", report.RemedyFixAccess},
	{CodePathOutsideRepo, "trust_boundary", "helpers.go", report.RemedyInspect},
	{CodeLatestUnreadable, "latest", "items.go", report.RemedyRepair},
	{CodeLatestNotFound, "latest", "items.go", report.RemedyRepair},
	{CodeLatestDamaged, "latest", "items.go", report.RemedyRepair},
	{CodeCatalogRowUnreadable, "catalog", "catalog.go", report.RemedyRepair},
	{CodeCatalogLatestWrong, "catalog", "catalog.go", report.RemedyRepair},
	{CodeCatalogUnusable, "catalog", "catalog.go", report.RemedyRebuildCatalog},
	{CodeCatalogStale, "catalog", "stale.go", report.RemedyRepair},
	{CodeCatalogCopy, "catalog_copies", "catalog.go", report.RemedyRepair},
	{CodeStagingLeftover, "staging", "staging.go", report.RemedyRepair},
	{CodeLockDead, "locks", "locks.go", report.RemedyRepair},
	{CodeRecordUnreadable, "records", "records.go", report.RemedyRepair},
	{CodeOpenIntent, "journal", "survey.go", report.RemedyRecoverOrRollback},
	{CodeJournalDamaged, "journal", "survey.go", report.RemedyRecover},
	{CodeJournalHolderStale, "journal", "locks.go", report.RemedyRepair},
	{CodeWrappedRunUnsettled, "journal", "wrappedruns.go", report.RemedyRecover},
	{CodeSwampCheck, "", "swamp.go", report.RemedyFixAccess},
	{CodeHiddenLocalDir, "local_dirs", "hiddenlocal.go", report.RemedyRepair},
	{CodeDataAtOtherRoot, "data_root", "otherroot.go", report.RemedyUnsetNamespace},
	{CodeCacheTornFile, cacheCheck, "cache/cache.go", report.RemedyRepair},
	{CodeCacheStaleFile, cacheCheck, "cache/cache.go", report.RemedyRepair},
	{CodeCacheStaleLatest, cacheCheck, "cache/cache.go", report.RemedyRepair},
	{CodeCacheMissingFile, cacheCheck, "cache/cache.go", report.RemedyRepair},
	{CodeCacheTempLeftover, cacheCheck, "cache/cache.go", report.RemedyRepair},
	{CodeCacheUnknownFile, cacheCheck, "cache/cache.go", report.RemedyInspect},
}

// Codes lists every finding code the doctor reports, with its check, the
// file that raises it and its usual remedy (for tables: the RUNBOOK, a
// test that every code has a fixture).
func Codes() []CodeInfo { return append([]CodeInfo(nil), codeTable...) }

// checkIDs is the report order of the checks of a filesystem datastore;
// cacheCheckIDs those of an extension datastore's cache.
var (
	checkIDs = []string{"data_root", "trust_boundary", "versions", "latest", "catalog", "catalog_copies", "staging", "locks", "records", "journal",
		"local_dirs"}
	cacheCheckIDs = []string{cacheCheck}
)

// checkOf maps each finding code to the check it belongs to.
var checkOf = func() map[Code]string {
	m := make(map[Code]string, len(codeTable))
	for _, c := range codeTable {
		if c.Check != "" {
			m[c.Code] = c.Check
		}
	}
	return m
}()

// phase is one step of the survey.
type phase struct {
	name string
	run  func(*survey, context.Context) error
	// progress, if set, is the progress phase shown while it runs.
	progress string
	// whole: the phase looks at the whole repo, so a survey of only what a
	// command changed (Options.Only) skips it.
	whole bool
	// repoWide: the phase looks at what a repo has once, whatever its data
	// root, so the survey of the other root (otherroot.go) skips it.
	repoWide bool
}

// phases are the survey's steps, in order (surveyDoctor runs them).
var phases = []phase{
	{name: "open intents", run: (*survey).checkOpenIntents, repoWide: true},                                      // survey.go
	{name: "items", run: (*survey).scanItems},                                                                    // survey.go
	{name: "locks", run: (*survey).checkLocks, progress: "checking locks"},                                       // locks.go
	{name: "catalog", run: (*survey).mergeCatalog, progress: "reading catalog"},                                  // catalog.go
	{name: "item findings", run: (*survey).checkItems, progress: "checking items"},                               // survey.go, items.go
	{name: "staging", run: (*survey).checkStaging, progress: "checking staging and run records"},                 // staging.go
	{name: "records", run: (*survey).checkRecords},                                                               // records.go
	{name: "catalog copies", run: (*survey).checkCatalogCopies, whole: true, repoWide: true},                     // catalog.go
	{name: "swamp's checks", run: (*survey).checkSwamp, progress: "swamp's checks", whole: true, repoWide: true}, // swamp.go
	{name: "always-local directories", run: (*survey).checkHiddenLocal, whole: true, repoWide: true},             // hiddenlocal.go
	{name: "wrapped runs", run: (*survey).checkWrappedRuns, whole: true, repoWide: true},                         // wrappedruns.go
}

// Check is one check's outcome.
type Check struct {
	ID      string `json:"id"`
	Passed  bool   `json:"passed"`
	Checked int    `json:"checked"` // things looked at (-1: not counted)
	Failed  int    `json:"failed"`  // findings still open
	Fixed   int    `json:"fixed"`   // findings this run repaired
}

// fillChecks computes rep.Checks from its findings and counts: a fixed
// list of checks with stable ids, each passed or not with what
// it counted, so a script (or an operator comparing with swamp's own
// doctor) reads one line per check whether or not it found anything.
func (rep *Report) fillChecks() {
	by := map[string]*Check{}
	rep.Checks = rep.Checks[:0]
	ids := checkIDs
	if rep.Cache != nil {
		ids = cacheCheckIDs
	}
	for _, id := range ids {
		rep.Checks = append(rep.Checks, Check{ID: id, Checked: -1})
	}
	for i := range rep.Checks {
		by[rep.Checks[i].ID] = &rep.Checks[i]
	}
	if rep.Cache != nil {
		by[cacheCheck].Checked = rep.Cache.Files
	} else {
		by["versions"].Checked = rep.Versions + rep.OtherVersions
		by["latest"].Checked = rep.Items + rep.OtherItems
		by["locks"].Checked = rep.Locks
		by["records"].Checked = rep.Records
	}
	for _, f := range rep.Findings {
		c := by[checkOf[f.Code]]
		if c == nil {
			continue
		}
		if f.Status == StatusRepaired {
			c.Fixed++
		} else {
			c.Failed++
		}
	}
	for i := range rep.Checks {
		rep.Checks[i].Passed = rep.Checks[i].Failed == 0
	}
}
