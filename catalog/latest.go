package catalog

import (
	"context"
	"slices"
	"strings"
)

// Which rows carry the latest flags.
//
// docs/swamp-format.md has two generations of the rule, and a catalog tells them
// apart by its columns:
//
//   - Without is_step_latest (swamp at 06b6147, swamp-format §3.5): is_latest is scoped by
//     step_name. Exactly one row per (namespace, type_normalized, model_id,
//     data_name, step_name) has is_latest = 1, so two workflow steps writing
//     the same data name keep independent latest rows, and data.latest()
//     picks the newest rowid among them (swamp-format §7.2). workflow_name and job_name
//     are not part of that group.
//   - With is_step_latest (newer swamp, swamp-format §11, which wins over swamp-format §3.5):
//     is_latest = 1 marks the highest version of the item, one row per
//     (namespace, type_normalized, model_id, data_name), and is_step_latest =
//     1 marks the highest version of each (…, workflow_name, job_name,
//     step_name) group.
//
// Following the catalog's own generation keeps swampj's rows readable by the
// swamp that created the file: an old swamp would show only one step's
// output as latest if swampj used item-wide is_latest on its catalog.
//
// "Highest version" is the highest version that has a row; the caller only
// gives rows to readable versions (swamp-format §11: "the highest readable version").

// latestGroupColumns are the columns whose equality defines an is_latest group.
func latestGroupColumns(stepLatestColumn bool) []string {
	if stepLatestColumn {
		return []string{"namespace", "type_normalized", "model_id", "data_name"}
	}
	return []string{"namespace", "type_normalized", "model_id", "data_name", "step_name"}
}

// stepGroupColumns define an is_step_latest group (swamp-format §11).
var stepGroupColumns = []string{"namespace", "type_normalized", "model_id", "data_name", "workflow_name", "job_name", "step_name"}

// groupValues returns r's values for the given group columns.
func groupValues(r Row, cols []string) []any {
	out := make([]any, len(cols))
	for i, c := range cols {
		switch c {
		case "namespace":
			out[i] = r.Namespace
		case "type_normalized":
			out[i] = r.TypeNormalized
		case "model_id":
			out[i] = r.ModelID
		case "data_name":
			out[i] = r.DataName
		case "workflow_name":
			out[i] = r.WorkflowName
		case "job_name":
			out[i] = r.JobName
		case "step_name":
			out[i] = r.StepName
		default:
			panic("catalog: no group column " + c)
		}
	}
	return out
}

// latestGroup is a comparable key of r's is_latest group.
type latestGroup struct {
	ItemKey
	StepName string
}

func (r Row) latestGroup(stepLatestColumn bool) latestGroup {
	g := latestGroup{ItemKey: r.Key()}
	if !stepLatestColumn {
		g.StepName = r.StepName
	}
	return g
}

// MarkLatest sets IsLatest and IsStepLatest on rows, in place, by the rule
// of a catalog with (stepLatestColumn=true) or without the swamp-format §11 column: the
// highest version of each group gets the flag, every other row loses it.
// Without the column IsStepLatest is cleared. Use Catalog.MarkLatest to
// follow the open catalog's generation.
func MarkLatest(rows []Row, stepLatestColumn bool) {
	if len(rows) <= markLatestLinear {
		markLatestFew(rows, stepLatestColumn)
		return
	}
	markLatestMaps(rows, stepLatestColumn)
}

// markLatestMaps is MarkLatest for any number of rows.
func markLatestMaps(rows []Row, stepLatestColumn bool) {
	bestLatest := map[latestGroup]int{}
	bestStep := map[stepGroup]int{}
	for i, r := range rows {
		if j, ok := bestLatest[r.latestGroup(stepLatestColumn)]; !ok || r.Version > rows[j].Version {
			bestLatest[r.latestGroup(stepLatestColumn)] = i
		}
		if j, ok := bestStep[r.stepGroup()]; !ok || r.Version > rows[j].Version {
			bestStep[r.stepGroup()] = i
		}
	}
	for i := range rows {
		rows[i].IsLatest = false
		rows[i].IsStepLatest = false
	}
	for _, i := range bestLatest {
		rows[i].IsLatest = true
	}
	if stepLatestColumn {
		for _, i := range bestStep {
			rows[i].IsStepLatest = true
		}
	}
}

// markLatestLinear is how many rows markLatestFew takes: up to it,
// comparing groups pairwise is cheaper than two maps (the doctor marks the
// rows of every item, a handful each).
const markLatestLinear = 32

// markLatestFew is MarkLatest without maps: the same group keys, the same
// winner (the highest version, the first of equal ones).
func markLatestFew(rows []Row, stepLatestColumn bool) {
	var lgBuf [markLatestLinear]latestGroup
	var sgBuf [markLatestLinear]stepGroup
	var lbBuf, sbBuf [markLatestLinear]int
	lgs, sgs, bestL, bestS := lgBuf[:0], sgBuf[:0], lbBuf[:0], sbBuf[:0]
	for i := range rows {
		r := &rows[i]
		lg, sg := r.latestGroup(stepLatestColumn), r.stepGroup()
		if k := slices.Index(lgs, lg); k < 0 {
			lgs, bestL = append(lgs, lg), append(bestL, i)
		} else if r.Version > rows[bestL[k]].Version {
			bestL[k] = i
		}
		if k := slices.Index(sgs, sg); k < 0 {
			sgs, bestS = append(sgs, sg), append(bestS, i)
		} else if r.Version > rows[bestS[k]].Version {
			bestS[k] = i
		}
	}
	for i := range rows {
		rows[i].IsLatest = false
		rows[i].IsStepLatest = false
	}
	for _, i := range bestL {
		rows[i].IsLatest = true
	}
	if stepLatestColumn {
		for _, i := range bestS {
			rows[i].IsStepLatest = true
		}
	}
}

// MarkLatest is the package MarkLatest with this catalog's rule.
func (c *Catalog) MarkLatest(rows []Row) { MarkLatest(rows, c.hasStepLatest) }

// whereEqual renders "a = ? AND b = ?" for the columns.
func whereEqual(cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c + " = ?"
	}
	return strings.Join(parts, " AND ")
}

// clearFlag sets flag = 0 on every row of r's group that has it, as swamp's
// upsertNewVersion does before inserting the new latest row (swamp-format §3.5).
func clearFlag(ctx context.Context, q queryer, flag string, groupCols []string, r Row) error {
	_, err := q.ExecContext(ctx,
		`UPDATE catalog SET `+flag+` = 0 WHERE `+whereEqual(groupCols)+` AND `+flag+` = 1`,
		groupValues(r, groupCols)...)
	return err
}

// ensureFlagged gives the flag to the highest version of r's group when no
// row of the group carries it any more (after a delete or a replace). It is
// an UPDATE in place, so the row keeps its rowid and rowid order keeps
// following write order (swamp-format §9.9). swamp instead re-inserts the new maximum
// (upsertNewVersion after removeVersion, swamp-format §3.6), which moves it to the newest
// rowid; keeping write order is the more faithful answer for data.latest().
func ensureFlagged(ctx context.Context, q queryer, flag string, groupCols []string, r Row) error {
	where := whereEqual(groupCols)
	vals := groupValues(r, groupCols)
	args := append(append([]any{}, vals...), vals...)
	_, err := q.ExecContext(ctx,
		`UPDATE catalog SET `+flag+` = 1 WHERE rowid = (SELECT rowid FROM catalog WHERE `+where+` ORDER BY version DESC LIMIT 1)`+
			` AND NOT EXISTS (SELECT 1 FROM catalog WHERE `+where+` AND `+flag+` = 1)`,
		args...)
	return err
}
