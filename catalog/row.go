package catalog

import "fmt"

// ItemKey names one data item inside the catalog: every version of it shares
// these four columns (the primary key without version, swamp-format §3.3).
type ItemKey struct {
	Namespace      string `json:"namespace"`
	TypeNormalized string `json:"type_normalized"`
	ModelID        string `json:"model_id"`
	DataName       string `json:"data_name"`
}

// Row is one catalog row: one version of one data item (swamp-format §3.3). Field order
// and JSON names follow the table's columns. IsStepLatest is only meaningful
// on a catalog that has the swamp-format §11 column (Catalog.HasStepLatest); it is
// ignored when writing to or comparing with a catalog without it.
type Row struct {
	Namespace      string `json:"namespace"`
	TypeNormalized string `json:"type_normalized"`
	ModelID        string `json:"model_id"`
	DataName       string `json:"data_name"`
	ID             string `json:"id"`
	Version        int64  `json:"version"`
	IsLatest       bool   `json:"is_latest"`
	ModelName      string `json:"model_name"`
	SpecName       string `json:"spec_name"`
	DataType       string `json:"data_type"`
	ContentType    string `json:"content_type"`
	Lifetime       string `json:"lifetime"`
	OwnerType      string `json:"owner_type"`
	Streaming      bool   `json:"streaming"`
	Size           int64  `json:"size"`
	CreatedAt      string `json:"created_at"` // YYYY-MM-DDTHH:MM:SS.sssZ (swamp-format §3.4)
	Tags           string `json:"tags"`       // compact JSON text, swamp's key order (swamp-format §3.4)
	OwnerRef       string `json:"owner_ref"`
	WorkflowRunID  string `json:"workflow_run_id"`
	WorkflowName   string `json:"workflow_name"`
	JobName        string `json:"job_name"`
	StepName       string `json:"step_name"`
	Source         string `json:"source"`
	IsStepLatest   bool   `json:"is_step_latest"`
}

// Label names the row's version as a reader finds it on disk:
// type/model/data vN.
func (r Row) Label() string {
	return fmt.Sprintf("%s/%s/%s v%d", r.TypeNormalized, r.ModelID, r.DataName, r.Version)
}

// Key returns the item the row belongs to.
func (r Row) Key() ItemKey {
	return ItemKey{r.Namespace, r.TypeNormalized, r.ModelID, r.DataName}
}

// versionKey is the primary key of a row: an item and a version.
type versionKey struct {
	ItemKey
	Version int64
}

func (r Row) versionKey() versionKey { return versionKey{r.Key(), r.Version} }

// stepGroup is the swamp-format §11 (workflow, job, step) group of a row.
type stepGroup struct {
	ItemKey
	WorkflowName, JobName, StepName string
}

func (r Row) stepGroup() stepGroup {
	return stepGroup{r.Key(), r.WorkflowName, r.JobName, r.StepName}
}

// Validate returns an *InvalidRowError, naming op, for a row the primary key
// cannot meaningfully hold (an empty type, model id or data name). Every
// write validates its rows; builders of rows (package ops/catalogrow) call it
// to refuse a row before anything is planned.
func (r Row) Validate(op string) error {
	switch {
	case r.TypeNormalized == "":
		return &InvalidRowError{Op: op, Row: r.Key(), Reason: "type_normalized is empty"}
	case r.ModelID == "":
		return &InvalidRowError{Op: op, Row: r.Key(), Reason: "model_id is empty"}
	case r.DataName == "":
		return &InvalidRowError{Op: op, Row: r.Key(), Reason: "data_name is empty"}
	}
	return nil
}

func (k ItemKey) validate(op string) error {
	return Row{Namespace: k.Namespace, TypeNormalized: k.TypeNormalized, ModelID: k.ModelID, DataName: k.DataName}.Validate(op)
}

// rowColumns are the columns this package reads and writes, in table order;
// the swamp-format §11 column is appended when the catalog has it.
func rowColumns(withStepLatest bool) []string {
	cols := make([]string, 0, len(swampColumns)+1)
	for _, c := range swampColumns {
		cols = append(cols, c.Name)
	}
	if withStepLatest {
		cols = append(cols, StepLatestColumn)
	}
	return cols
}

// values returns the row's column values in rowColumns order. Booleans are
// stored as INTEGER 0/1, as swamp binds JavaScript numbers (swamp-format §3.4).
func (r Row) values(withStepLatest bool) []any {
	v := []any{
		r.Namespace, r.TypeNormalized, r.ModelID, r.DataName, r.ID, r.Version,
		boolInt(r.IsLatest), r.ModelName, r.SpecName, r.DataType, r.ContentType,
		r.Lifetime, r.OwnerType, boolInt(r.Streaming), r.Size, r.CreatedAt, r.Tags,
		r.OwnerRef, r.WorkflowRunID, r.WorkflowName, r.JobName, r.StepName, r.Source,
	}
	if withStepLatest {
		v = append(v, boolInt(r.IsStepLatest))
	}
	return v
}

// scanner is *sql.Rows or *sql.Row.
type scanner interface{ Scan(dest ...any) error }

// scanRow reads the columns of rowColumns. Flags read as true only when they
// are exactly 1, because swamp's readers test `is_latest = 1` and
// `streaming = 1` (swamp-format §7.2).
func scanRow(s scanner, withStepLatest bool, extra ...any) (Row, error) {
	var r Row
	var isLatest, streaming, stepLatest int64
	dest := []any{
		&r.Namespace, &r.TypeNormalized, &r.ModelID, &r.DataName, &r.ID, &r.Version,
		&isLatest, &r.ModelName, &r.SpecName, &r.DataType, &r.ContentType,
		&r.Lifetime, &r.OwnerType, &streaming, &r.Size, &r.CreatedAt, &r.Tags,
		&r.OwnerRef, &r.WorkflowRunID, &r.WorkflowName, &r.JobName, &r.StepName, &r.Source,
	}
	if withStepLatest {
		dest = append(dest, &stepLatest)
	}
	dest = append(dest, extra...)
	if err := s.Scan(dest...); err != nil {
		return Row{}, err
	}
	r.IsLatest, r.Streaming, r.IsStepLatest = isLatest == 1, streaming == 1, stepLatest == 1
	return r, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// columnDiffs lists the columns whose values differ between a and b, in
// table order; the swamp-format §11 column only when withStepLatest.
func columnDiffs(a, b Row, withStepLatest bool) []string {
	cols := rowColumns(withStepLatest)
	va, vb := a.values(withStepLatest), b.values(withStepLatest)
	var out []string
	for i := range cols {
		if va[i] != vb[i] {
			out = append(out, cols[i])
		}
	}
	return out
}
