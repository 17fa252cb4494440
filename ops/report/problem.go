package report

import "github.com/swampj/swampj/ops/store"

// Problem is one finding about one file, with the store's stable code: the
// one shape a problem takes in every report (data reads, catalog verify and
// rebuild, the rows of unreadable versions). store.Problem is the
// diagnosis it comes from, which also carries the underlying error.
type Problem struct {
	Code    store.Code `json:"code"`
	Path    string     `json:"path"`
	Message string     `json:"message"`
}

// ProblemOf is p as reports carry it.
func ProblemOf(p store.Problem) Problem {
	return Problem{Code: p.Code, Path: p.Path, Message: p.Message}
}

// ProblemsOf is ps as reports carry them, never nil (JSON: []).
func ProblemsOf(ps []store.Problem) []Problem {
	out := make([]Problem, 0, len(ps))
	for _, p := range ps {
		out = append(out, ProblemOf(p))
	}
	return out
}
