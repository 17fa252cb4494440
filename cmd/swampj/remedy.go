package main

import (
	"strings"

	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/report"
)

// remedyHint is this CLI's way of carrying out a report.Remedy: the library
// says which action a finding, warning or error calls for (report.Remedy) and
// describes it in words; the command that does it is named only here, as
// cliHint does for errors.
func remedyHint(r report.Remedy) string {
	switch r {
	case report.RemedyRecover:
		return "run 'swampj recover'"
	case report.RemedyRecoverOrRollback:
		return "run 'swampj recover' (or 'swampj recover --rollback')"
	case report.RemedyRebuildCatalog:
		return "run 'swampj catalog rebuild --confirm'"
	case report.RemedyMigrate:
		return "run 'swampj datastore namespace migrate --confirm'"
	case report.RemedyMigrateReverse:
		return "run 'swampj datastore namespace migrate --reverse --confirm'"
	case report.RemedyUnsetMigrate:
		return "run 'swampj datastore namespace unset --migrate --confirm'"
	case report.RemedyUnsetNamespace:
		return "run 'swampj datastore namespace unset --confirm'"
	case report.RemedyRepair:
		return "run 'swampj doctor --repair --confirm'"
	case report.RemedyCheckAgain:
		return "run 'swampj doctor'"
	case report.RemedyRetry:
		return "run 'swampj doctor --repair --confirm' again once the lock is free"
	}
	// A person's actions (report.Remedy.Human) and "nothing to do" have no
	// command: the text beside them says what to do.
	return ""
}

// rerunCommand is the command line that finishes a failed migration.
func rerunCommand(r report.Remedy) string {
	return strings.TrimSuffix(strings.TrimPrefix(remedyHint(r), "run '"), "'")
}

// withRemedy appends the command of r to text: as a new sentence after a
// full stop, after a semicolon otherwise. Text without a remedy (or that
// already names the command) is returned as it is.
func withRemedy(text string, r report.Remedy) string {
	h := remedyHint(r)
	if h == "" || strings.Contains(text, strings.TrimPrefix(h, "run ")) {
		return text
	}
	if strings.HasSuffix(text, ".") {
		return text + " " + strings.ToUpper(h[:1]) + h[1:] + "."
	}
	return text + "; " + h
}

// withRemedies is withRemedy for an action and the one that follows it
// (then; "" for none): both commands, in order.
func withRemedies(text string, r, then report.Remedy) string {
	text = withRemedy(text, r)
	h := remedyHint(then)
	if h == "" || strings.Contains(text, strings.TrimPrefix(h, "run ")) {
		return text
	}
	if remedyHint(r) == "" {
		return text + "; then " + h
	}
	return text + ", then " + strings.TrimPrefix(h, "run ")
}

// renderDoctorRemedies puts this CLI's commands into a doctor report's
// texts, for the text and the --json output alike (the "fix" and
// "message" keys read as before; "remedy" says which action it is).
func renderDoctorRemedies(rep *doctor.Report) {
	if rep == nil {
		return
	}
	for i := range rep.Findings {
		f := &rep.Findings[i]
		f.Fix = withRemedies(f.Fix, f.Remedy, f.Then)
	}
	for i := range rep.Notices {
		n := &rep.Notices[i]
		n.Message = withRemedies(n.Message, n.Remedy, n.Then)
	}
	for i := range rep.Actions {
		a := &rep.Actions[i]
		a.Fix = withRemedies(a.Fix, a.Remedy, a.Then)
	}
	for i := range rep.SwampChecks {
		c := &rep.SwampChecks[i]
		if !c.Passed || c.SwampDiffers == "" {
			c.Message = withRemedy(c.Message, c.Remedy)
		} else {
			c.SwampDiffers = withRemedy(c.SwampDiffers, c.Remedy)
		}
	}
}

// renderMigrateRemedies does the same for a migration's warnings.
func renderMigrateRemedies(ws []migrate.MigrateWarning) {
	for i := range ws {
		ws[i].Message = withRemedy(ws[i].Message, ws[i].Remedy)
	}
}
