package catalog

import (
	"context"
)

// flagColumns are the columns FlagRows reads: the item key, the version,
// the model's name and every column MarkLatest groups by, then the flags.
const flagColumns = `type_normalized, model_id, data_name, version, model_name, workflow_name, job_name, step_name, is_latest`

// FlagRows returns every row stamped with namespace ns, in rowid order, with
// only what decides which rows carry the latest flags: Namespace, the item
// key, Version, ModelName, the step group (WorkflowName, JobName, StepName),
// IsLatest and IsStepLatest. Every other field is empty. A check of the
// whole catalog against the disk needs no more, and reading a 100,000-row
// catalog this way costs a fraction of Rows (a third of the columns, and
// none of the long ones: tags, created_at, ids). ItemRows gives the full
// rows of the items a repair is going to change.
func (c *Catalog) FlagRows(ctx context.Context, ns string) ([]Row, error) {
	if err := c.readable(); err != nil {
		return nil, err
	}
	// Counted first: growing a slice of 100,000 rows by doubling copied
	// more bytes than the rows hold.
	var n int
	if err := c.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM catalog WHERE namespace = ?`, ns).Scan(&n); err != nil {
		return nil, &DBError{Op: "flag rows", Path: c.path, Err: err}
	}
	query := `SELECT ` + flagColumns
	if c.hasStepLatest {
		query += `, ` + StepLatestColumn
	}
	rows, err := c.db.QueryContext(ctx, query+` FROM catalog WHERE namespace = ? ORDER BY rowid`, ns)
	if err != nil {
		return nil, &DBError{Op: "flag rows", Path: c.path, Err: err}
	}
	defer rows.Close()
	out := make([]Row, 0, n)
	var isLatest, stepLatest int64
	for rows.Next() {
		r := Row{Namespace: ns}
		dest := []any{&r.TypeNormalized, &r.ModelID, &r.DataName, &r.Version, &r.ModelName,
			&r.WorkflowName, &r.JobName, &r.StepName, &isLatest}
		if c.hasStepLatest {
			dest = append(dest, &stepLatest)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, &DBError{Op: "flag rows", Path: c.path, Err: err}
		}
		// Exactly 1, as swamp's readers test (scanRow).
		r.IsLatest, r.IsStepLatest = isLatest == 1, c.hasStepLatest && stepLatest == 1
		if n := len(out); n > 0 && out[n-1].Key() == r.Key() {
			// Rows of one item share its key strings.
			p := &out[n-1]
			r.TypeNormalized, r.ModelID, r.DataName = p.TypeNormalized, p.ModelID, p.DataName
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, &DBError{Op: "flag rows", Path: c.path, Err: err}
	}
	return out, nil
}

// ItemRows returns every row of one item, in rowid order.
func (c *Catalog) ItemRows(ctx context.Context, key ItemKey) ([]Row, error) {
	if err := c.readable(); err != nil {
		return nil, err
	}
	return c.queryRows(ctx, c.db, "item rows", c.selectRows()+` WHERE `+whereEqual(itemColumns)+` ORDER BY rowid`,
		key.Namespace, key.TypeNormalized, key.ModelID, key.DataName)
}
