package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/journal"
)

// IntentOutcome is what recovery did (or would do) with one open intent.
type IntentOutcome struct {
	ID        uint64            `json:"id"`
	Kind      string            `json:"kind"`
	Summary   string            `json:"summary"`
	CreatedAt string            `json:"createdAt"`
	PID       int               `json:"pid"`
	Direction journal.Direction `json:"direction"`
	Status    journal.Status    `json:"status"`
	Applied   int               `json:"applied"`
	Undone    int               `json:"undone"`
	Skipped   int               `json:"alreadyInPlace"`
	Error     string            `json:"error,omitempty"`
	// CatalogStale: the intent's catalog step was skipped (why).
	CatalogStale string `json:"catalogStale,omitempty"`
	// Steps is filled by a dry run: what each step observes now.
	Steps []StepView `json:"steps,omitempty"`
	// Blocked, filled by a dry run, is the step a recovery in Direction
	// would stop at on the disk as it is (the disk matches neither its
	// state before nor after it); nil when nothing stops it.
	Blocked *StepView `json:"blocked,omitempty"`
}

// Sentence says in words what recovery did with the intent: finished it,
// rolled it back, or could not (and why).
func (o IntentOutcome) Sentence() string {
	what := fmt.Sprintf("interrupted intent %d (%s: %s)", o.ID, o.Kind, o.Summary)
	var s string
	switch o.Status {
	case journal.StatusDone:
		s = "finished " + what
	case journal.StatusRolledBack:
		s = "rolled back " + what
	default:
		s = "could not finish " + what + "; it is still open"
		if o.Error != "" {
			s += ": " + o.Error
		}
	}
	if o.CatalogStale != "" {
		s += " (the catalog could not follow and is marked stale: " + o.CatalogStale + ")"
	}
	return s
}

// StepView is one step and what the disk says about it.
type StepView struct {
	Index       int    `json:"index"`
	Description string `json:"description"`
	Observed    string `json:"observed"`
	Detail      string `json:"detail,omitempty"`
}

// OpenIntentsError refuses work that needs a settled disk (a catalog
// rebuild, a doctor repair) while the journal holds an interrupted
// operation: the data on disk is mid-change.
type OpenIntentsError struct {
	IDs  []uint64
	Then string // what to do after recovering, e.g. "rebuild the catalog"
}

// NewOpenIntentsError lists the open intents' ids.
func NewOpenIntentsError(open []*journal.Intent, then string) *OpenIntentsError {
	e := &OpenIntentsError{Then: then}
	for _, in := range open {
		e.IDs = append(e.IDs, in.ID)
	}
	return e
}

func (e *OpenIntentsError) Code() string        { return "open_intents" }
func (e *OpenIntentsError) Class() swampj.Class { return swampj.ClassFailed }
func (e *OpenIntentsError) Error() string {
	ids := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		ids[i] = strconv.FormatUint(id, 10)
	}
	return fmt.Sprintf("the journal holds %d interrupted operation(s) (intent %s); the data on disk is mid-change, so nothing was changed. "+
		"Recover first, then %s", len(e.IDs), strings.Join(ids, ", "), e.Then)
}

// IntentStillOpenError is an intent that recovery (or a command finishing
// interrupted intents before its own) could not finish or undo: what
// failed, and that the intent stays open. Nothing it did is lost: the next
// recovery observes every step again and goes on where the disk says it
// stopped. errors.Is and errors.As see the cause.
type IntentStillOpenError struct {
	ID      uint64
	Summary string
	// Direction is the way it was being driven; RollbackRecorded says the
	// journal holds the decision to roll it back (never reversed).
	Direction        journal.Direction
	RollbackRecorded bool
	Err              error
}

func (e *IntentStillOpenError) Unwrap() error { return e.Err }

func (e *IntentStillOpenError) Error() string {
	msg := e.Err.Error()
	if !strings.Contains(msg, fmt.Sprintf("intent %d", e.ID)) {
		msg = fmt.Sprintf("intent %d (%s), going %s: %s", e.ID, e.Summary, e.Direction, msg)
	}
	var next string
	switch {
	case e.RollbackRecorded:
		next = "recover again once that is fixed; its rollback is recorded and is finished, never reversed"
	case e.Direction == journal.Backward:
		next = "roll it back again once that is fixed, or finish it instead"
	default:
		next = "recover again once that is fixed, or roll it back"
	}
	return fmt.Sprintf("%s. Intent %d is still open, and what its steps did so far stays on disk: %s", msg, e.ID, next)
}
