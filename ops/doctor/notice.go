package doctor

// Notes and warnings with their remedies. A note explains a state that is
// not a problem of the data (what swamp's own doctor misreports, a layout,
// read-only media); a warning says what could not be looked at. Each says
// what to do about it as a remedy code, as a finding does, so that an
// operator (and a script) never meets a line that leaves them guessing:
// RemedyNone where there is nothing to do.

import (
	"strings"

	"github.com/swampj/swampj/ops/report"
)

// Notice is one note or warning and its remedy (Report.Notices).
type Notice struct {
	// Kind is NoticeNote or NoticeWarning.
	Kind    string        `json:"kind"`
	Message string        `json:"message"`
	Remedy  report.Remedy `json:"remedy"`
	// Then is the action that follows Remedy ("" for none).
	Then report.Remedy `json:"then,omitempty"`
	// Code and Path, when set, name what a note is about: a state of an
	// extension datastore's cache that the next pull settles by itself
	// (a file other checkouts wrote that this cache has not fetched yet).
	Code Code   `json:"code,omitempty"`
	Path string `json:"path,omitempty"`
	// Next is what swamp does next with that file (Finding.Next).
	Next string `json:"next,omitempty"`
}

// The kinds of Notice.
const (
	NoticeNote    = "note"
	NoticeWarning = "warning"
)

// Note is a notice of kind note: msg, with its remedy r (report.RemedyNone
// for a state that asks nothing of anyone).
func Note(msg string, r report.Remedy) Notice {
	return Notice{Kind: NoticeNote, Message: msg, Remedy: r}
}

// warningNotice gives a warning of the survey (a path not checked, and
// why) its remedy: what read-only media hides is looked at where the repo
// is writable; a catalog of another schema is inspected by hand; anything
// else was an access problem (a person makes it readable), after which
// the doctor looks again.
func warningNotice(msg string) Notice {
	n := Notice{Kind: NoticeWarning, Message: msg, Remedy: report.RemedyFixAccess, Then: report.RemedyCheckAgain}
	switch {
	case strings.Contains(msg, "read-only"):
		n.Remedy = report.RemedyMountReadWrite
	case strings.Contains(msg, "schema"):
		n.Remedy, n.Then = report.RemedyInspect, ""
	case strings.Contains(msg, "a regular file stands where a directory must go"):
		n.Remedy = report.RemedyInspect
	}
	return n
}

// SetNotices fills Notes, Warnings (their messages, as before) and
// Notices (each with its remedy).
func (rep *Report) SetNotices(notes []Notice, warnings []string) {
	rep.Notes, rep.Warnings, rep.Notices = []string{}, []string{}, []Notice{}
	for _, n := range notes {
		rep.Notes = append(rep.Notes, n.Message)
		rep.Notices = append(rep.Notices, n)
	}
	for _, w := range warnings {
		rep.Warnings = append(rep.Warnings, w)
		rep.Notices = append(rep.Notices, warningNotice(w))
	}
}
