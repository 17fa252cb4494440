package doctor

// What a run leaves, in one word and a list of what to do next: an
// operator at 3 a.m. (and a script) must not have to read every finding to
// know whether the repo is clean, whether the doctor's repair or another
// swampj command gets it there, or whether a person must act first, and
// which action that is.

import "github.com/swampj/swampj/ops/report"

// Outcome is what a run leaves.
type Outcome string

const (
	// OutcomeClean: nothing was found.
	OutcomeClean Outcome = "clean"
	// OutcomeRepaired: this run repaired every finding; nothing is left.
	OutcomeRepaired Outcome = "repaired"
	// OutcomeRepairable: findings are left that the repair (or another
	// command of swampj's, each finding's remedy) fixes.
	OutcomeRepairable Outcome = "repairable"
	// OutcomeBusy: the only findings left are in models whose lock was
	// busy: the same repair, run again when they are idle, fixes them.
	OutcomeBusy Outcome = "busy"
	// OutcomeManual: what is left needs a person first (Report.Actions
	// says what): no command of swampj's fixes it as things are.
	OutcomeManual Outcome = "manual"
)

// Action is one thing to do next, for the findings that call for it, in
// the order the findings come.
type Action struct {
	// Remedy is the action; Then, when set, is the one that follows it.
	Remedy report.Remedy `json:"remedy"`
	Then   report.Remedy `json:"then,omitempty"`
	// Person: Remedy is a person's action (report.Remedy.Human).
	Person bool `json:"person"`
	// Fix is the first finding's Fix: what to do, in words.
	Fix string `json:"fix"`
	// Codes and Paths are the findings this action is for.
	Codes []Code   `json:"codes"`
	Paths []string `json:"paths"`
}

// NeedsPerson reports whether f is left for a person: nothing of swampj's
// fixes it until someone has acted.
func (f *Finding) NeedsPerson() bool {
	return f.Status == StatusManual && f.Remedy.Human()
}

// Tally fills what a report derives from its findings and counts, once
// they are final: Checks (fillChecks), then Outcome and Actions
// (summarize). Every doctor calls it last.
func (rep *Report) Tally() {
	rep.fillChecks()
	rep.summarize()
}

// summarize fills Outcome and Actions from the findings.
func (rep *Report) summarize() {
	rep.Actions = []Action{}
	person, other, skipped, repaired := 0, 0, 0, 0
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if f.Remedy == "" && (f.Status == StatusFound || f.Status == StatusWouldRepair) {
			f.Remedy = report.RemedyRepair // its Fix says what the repair does
		}
		switch {
		case f.Status == StatusRepaired:
			repaired++
			continue
		case f.Status == StatusSkipped:
			skipped++
		case f.NeedsPerson():
			person++
		default:
			other++
		}
		rep.addAction(f)
	}
	switch {
	case person+other+skipped == 0 && repaired > 0:
		rep.Outcome = OutcomeRepaired
	case person+other+skipped == 0:
		rep.Outcome = OutcomeClean
	case person > 0 && other == 0:
		rep.Outcome = OutcomeManual
	case person == 0 && other == 0:
		rep.Outcome = OutcomeBusy
	default:
		rep.Outcome = OutcomeRepairable
	}
}

// addAction adds f to the action it calls for (a new one the first time).
func (rep *Report) addAction(f *Finding) {
	r, then := f.Remedy, f.Then
	switch {
	case f.Status == StatusSkipped && r == "": // a busy model lock
		r, then = report.RemedyRetry, ""
	}
	for i := range rep.Actions {
		a := &rep.Actions[i]
		if a.Remedy == r && a.Then == then {
			a.Codes = appendNew(a.Codes, f.Code)
			a.Paths = appendNew(a.Paths, f.Path)
			return
		}
	}
	rep.Actions = append(rep.Actions, Action{Remedy: r, Then: then, Person: r.Human(), Fix: f.Fix,
		Codes: []Code{f.Code}, Paths: []string{f.Path}})
}

func appendNew[T comparable](s []T, v T) []T {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
