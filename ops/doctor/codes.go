package doctor

// Every check reported (issue #11): a fixed list of checks with stable ids,
// each passed or not with what it counted, so a script (or an operator
// comparing with swamp's own doctor) reads one line per check whether or
// not it found anything.

// Check is one check's outcome.
type Check struct {
	ID      string `json:"id"`
	Passed  bool   `json:"passed"`
	Checked int    `json:"checked"` // things looked at (-1: not counted)
	Failed  int    `json:"failed"`  // findings still open
	Fixed   int    `json:"fixed"`   // findings this run repaired
}

// checkOf maps each finding code to the check it belongs to.
var checkOf = map[Code]string{
	CodeVersionUnreadable:    "versions",
	CodeLatestUnreadable:     "latest",
	CodeLatestNotFound:       "latest",
	CodeLatestDamaged:        "latest",
	CodeCatalogRowUnreadable: "catalog",
	CodeCatalogLatestWrong:   "catalog",
	CodeCatalogUnusable:      "catalog",
	CodeCatalogStale:         "catalog",
	CodeCatalogCopy:          "catalog_copies",
	CodeStagingLeftover:      "staging",
	CodeOpenIntent:           "journal",
	CodeJournalHolderStale:   "journal",
	CodeDirectoryUnreadable:  "versions",
	CodeLockDead:             "locks",
	CodeRecordUnreadable:     "records",
}

// checkIDs is the report order.
var checkIDs = []string{"versions", "latest", "catalog", "catalog_copies", "staging", "locks", "records", "journal"}

// fillChecks computes rep.Checks from its findings and counts.
func (rep *Report) fillChecks() {
	by := map[string]*Check{}
	rep.Checks = rep.Checks[:0]
	for _, id := range checkIDs {
		rep.Checks = append(rep.Checks, Check{ID: id, Checked: -1})
	}
	for i := range rep.Checks {
		by[rep.Checks[i].ID] = &rep.Checks[i]
	}
	by["versions"].Checked = rep.Versions
	by["latest"].Checked = rep.Items
	by["locks"].Checked = rep.Locks
	by["records"].Checked = rep.Records
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
