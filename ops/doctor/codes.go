package ops

// Every check reported (issue #11): a fixed list of checks with stable ids,
// each passed or not with what it counted, so a script (or an operator
// comparing with swamp's own doctor) reads one line per check whether or
// not it found anything.

// DoctorCheck is one check's outcome.
type DoctorCheck struct {
	ID      string `json:"id"`
	Passed  bool   `json:"passed"`
	Checked int    `json:"checked"` // things looked at (-1: not counted)
	Failed  int    `json:"failed"`  // findings still open
	Fixed   int    `json:"fixed"`   // findings this run repaired
}

// doctorCheckOf maps each finding code to the check it belongs to.
var doctorCheckOf = map[DoctorCode]string{
	DoctorVersionUnreadable:    "versions",
	DoctorLatestUnreadable:     "latest",
	DoctorLatestNotFound:       "latest",
	DoctorLatestDamaged:        "latest",
	DoctorCatalogRowUnreadable: "catalog",
	DoctorCatalogLatestWrong:   "catalog",
	DoctorCatalogUnusable:      "catalog",
	DoctorCatalogStale:         "catalog",
	DoctorCatalogCopy:          "catalog_copies",
	DoctorStagingLeftover:      "staging",
	DoctorOpenIntent:           "journal",
	DoctorJournalHolderStale:   "journal",
	DoctorDirectoryUnreadable:  "versions",
	DoctorLockDead:             "locks",
	DoctorRecordUnreadable:     "records",
}

// doctorCheckIDs is the report order.
var doctorCheckIDs = []string{"versions", "latest", "catalog", "catalog_copies", "staging", "locks", "records", "journal"}

// fillChecks computes rep.Checks from its findings and counts.
func (rep *DoctorReport) fillChecks() {
	by := map[string]*DoctorCheck{}
	rep.Checks = rep.Checks[:0]
	for _, id := range doctorCheckIDs {
		rep.Checks = append(rep.Checks, DoctorCheck{ID: id, Checked: -1})
	}
	for i := range rep.Checks {
		by[rep.Checks[i].ID] = &rep.Checks[i]
	}
	by["versions"].Checked = rep.Versions
	by["latest"].Checked = rep.Items
	by["locks"].Checked = rep.Locks
	by["records"].Checked = rep.Records
	for _, f := range rep.Findings {
		c := by[doctorCheckOf[f.Code]]
		if c == nil {
			continue
		}
		if f.Status == DoctorRepaired {
			c.Fixed++
		} else {
			c.Failed++
		}
	}
	for i := range rep.Checks {
		rep.Checks[i].Passed = rep.Checks[i].Failed == 0
	}
}
