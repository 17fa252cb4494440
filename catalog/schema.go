package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// SchemaVersion is the only catalog_meta.schema_version this package writes
// or changes (swamp-format §3.3, CATALOG_SCHEMA_VERSION).
const SchemaVersion = "4"

// catalog_meta keys (swamp-format §3.3). These are the only keys swamp uses.
const (
	metaSchemaVersion = "schema_version"
	metaPopulated     = "populated"
)

// StepLatestColumn is the optional newer column (swamp-format §11). It is detected, kept
// up to date when present, and never added.
const StepLatestColumn = "is_step_latest"

// The DDL is swamp's, statement by statement, in the order swamp runs it on a
// new file (swamp-format §3.3, catalog_store.ts:138-143,167-209). The column lines keep
// swamp's source indentation (8 spaces, 6 before the closing parenthesis) so
// that sqlite_master holds the same text swamp leaves; nothing compares that
// text, but it makes a swampj-created file indistinguishable from swamp's.
// catalog_meta's indentation is assumed to follow the same source layout.
const ddlCatalogMeta = `CREATE TABLE IF NOT EXISTS catalog_meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
      )`

const ddlCatalog = `CREATE TABLE IF NOT EXISTS catalog (
        namespace       TEXT NOT NULL DEFAULT '',
        type_normalized TEXT NOT NULL,
        model_id        TEXT NOT NULL,
        data_name       TEXT NOT NULL,
        id              TEXT NOT NULL,
        version         INTEGER NOT NULL,
        is_latest       INTEGER NOT NULL DEFAULT 1,
        model_name      TEXT NOT NULL,
        spec_name       TEXT NOT NULL DEFAULT '',
        data_type       TEXT NOT NULL DEFAULT '',
        content_type    TEXT NOT NULL DEFAULT '',
        lifetime        TEXT NOT NULL DEFAULT '',
        owner_type      TEXT NOT NULL DEFAULT '',
        streaming       INTEGER NOT NULL DEFAULT 0,
        size            INTEGER NOT NULL DEFAULT 0,
        created_at      TEXT NOT NULL,
        tags            TEXT NOT NULL DEFAULT '{}',
        owner_ref       TEXT NOT NULL DEFAULT '',
        workflow_run_id TEXT NOT NULL DEFAULT '',
        workflow_name   TEXT NOT NULL DEFAULT '',
        job_name        TEXT NOT NULL DEFAULT '',
        step_name       TEXT NOT NULL DEFAULT '',
        source          TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (namespace, type_normalized, model_id, data_name, version)
      )`

var ddlIndexes = []string{
	`CREATE INDEX IF NOT EXISTS idx_catalog_model_name      ON catalog(model_name)`,
	`CREATE INDEX IF NOT EXISTS idx_catalog_spec_name       ON catalog(spec_name)`,
	`CREATE INDEX IF NOT EXISTS idx_catalog_data_type       ON catalog(data_type)`,
	`CREATE INDEX IF NOT EXISTS idx_catalog_created_at      ON catalog(created_at)`,
	`CREATE INDEX IF NOT EXISTS idx_catalog_workflow_run_id ON catalog(workflow_run_id)`,
	`CREATE INDEX IF NOT EXISTS idx_catalog_step_name       ON catalog(step_name)`,
	`CREATE INDEX IF NOT EXISTS idx_namespace               ON catalog(namespace)`,
	`CREATE INDEX IF NOT EXISTS idx_catalog_is_latest       ON catalog(namespace, type_normalized, model_id, data_name, is_latest)`,
	`CREATE INDEX IF NOT EXISTS idx_catalog_latest_lookup ON catalog(model_name, data_name, is_latest, namespace)`,
}

// Column is one column as PRAGMA table_info reports it.
type Column struct {
	Name    string  `json:"name"`
	Type    string  `json:"type"`
	NotNull bool    `json:"not_null"`
	Default *string `json:"default"` // dflt_value text; nil = no default
	PK      int     `json:"pk"`      // 1-based position in the primary key, 0 = not in it
}

func dflt(s string) *string { return &s }

// swampColumns is swamp-format §3.3's table in order: the shape every schema-"4" catalog
// has. A catalog table is recognised only if it has exactly these columns,
// in this order, plus optionally StepLatestColumn anywhere.
var swampColumns = []Column{
	{"namespace", "TEXT", true, dflt("''"), 1},
	{"type_normalized", "TEXT", true, nil, 2},
	{"model_id", "TEXT", true, nil, 3},
	{"data_name", "TEXT", true, nil, 4},
	{"id", "TEXT", true, nil, 0},
	{"version", "INTEGER", true, nil, 5},
	{"is_latest", "INTEGER", true, dflt("1"), 0},
	{"model_name", "TEXT", true, nil, 0},
	{"spec_name", "TEXT", true, dflt("''"), 0},
	{"data_type", "TEXT", true, dflt("''"), 0},
	{"content_type", "TEXT", true, dflt("''"), 0},
	{"lifetime", "TEXT", true, dflt("''"), 0},
	{"owner_type", "TEXT", true, dflt("''"), 0},
	{"streaming", "INTEGER", true, dflt("0"), 0},
	{"size", "INTEGER", true, dflt("0"), 0},
	{"created_at", "TEXT", true, nil, 0},
	{"tags", "TEXT", true, dflt("'{}'"), 0},
	{"owner_ref", "TEXT", true, dflt("''"), 0},
	{"workflow_run_id", "TEXT", true, dflt("''"), 0},
	{"workflow_name", "TEXT", true, dflt("''"), 0},
	{"job_name", "TEXT", true, dflt("''"), 0},
	{"step_name", "TEXT", true, dflt("''"), 0},
	{"source", "TEXT", true, dflt("''"), 0},
}

// schemaState is what inspectSchema found in an open database.
type schemaState struct {
	hasMetaTable     bool
	schemaVersion    string
	versionPresent   bool
	hasCatalogTable  bool
	catalogColumns   []Column
	catalogEmpty     bool
	hasStepLatest    bool
	shapeProblem     string // "" when catalog and catalog_meta have swamp's shape
	otherObjectNamed string // "catalog" or "catalog_meta" exists but is not a table
}

// queryer is what both *sql.DB and *sql.Tx offer.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// inspectSchema reads, never writes: sqlite_master, table_info and the
// schema_version key.
func inspectSchema(ctx context.Context, q queryer) (schemaState, error) {
	var st schemaState
	rows, err := q.QueryContext(ctx, `SELECT type, name FROM sqlite_master WHERE name IN ('catalog', 'catalog_meta')`)
	if err != nil {
		return st, err
	}
	for rows.Next() {
		var typ, name string
		if err := rows.Scan(&typ, &name); err != nil {
			rows.Close()
			return st, err
		}
		if typ != "table" {
			st.otherObjectNamed = fmt.Sprintf("%s is a %s, not a table", name, typ)
			continue
		}
		switch name {
		case "catalog":
			st.hasCatalogTable = true
		case "catalog_meta":
			st.hasMetaTable = true
		}
	}
	if err := rows.Close(); err != nil {
		return st, err
	}
	if st.otherObjectNamed != "" {
		st.shapeProblem = st.otherObjectNamed
		return st, nil
	}

	if st.hasMetaTable {
		cols, err := tableInfo(ctx, q, "catalog_meta")
		if err != nil {
			return st, err
		}
		if p := metaShapeProblem(cols); p != "" {
			st.shapeProblem = p
			return st, nil
		}
		err = q.QueryRowContext(ctx, `SELECT value FROM catalog_meta WHERE key = ?`, metaSchemaVersion).Scan(&st.schemaVersion)
		switch {
		case err == nil:
			st.versionPresent = true
		case errors.Is(err, sql.ErrNoRows):
		default:
			return st, err
		}
	}

	if st.hasCatalogTable {
		cols, err := tableInfo(ctx, q, "catalog")
		if err != nil {
			return st, err
		}
		st.catalogColumns = cols
		st.hasStepLatest, st.shapeProblem = catalogShape(cols)
		var any int
		err = q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM catalog)`).Scan(&any)
		if err != nil {
			return st, err
		}
		st.catalogEmpty = any == 0
	}
	return st, nil
}

func tableInfo(ctx context.Context, q queryer, table string) ([]Column, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []Column
	for rows.Next() {
		var c Column
		var def sql.NullString
		if err := rows.Scan(&c.Name, &c.Type, &c.NotNull, &def, &c.PK); err != nil {
			return nil, err
		}
		if def.Valid {
			c.Default = &def.String
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// catalogShape compares the catalog table with swamp-format §3.3 and reports whether the
// swamp-format §11 column is present. problem is "" for a recognised shape.
func catalogShape(cols []Column) (hasStepLatest bool, problem string) {
	var core []Column
	for _, c := range cols {
		if c.Name == StepLatestColumn {
			if !strings.EqualFold(c.Type, "INTEGER") || c.PK != 0 {
				return false, fmt.Sprintf("column %s is %s (pk %d), expected a plain INTEGER", c.Name, c.Type, c.PK)
			}
			hasStepLatest = true
			continue
		}
		core = append(core, c)
	}
	if len(core) != len(swampColumns) {
		return hasStepLatest, fmt.Sprintf("catalog table has %d columns (%s), swamp's schema 4 has %d",
			len(core), columnNames(core), len(swampColumns))
	}
	for i, want := range swampColumns {
		got := core[i]
		if got.Name != want.Name || !strings.EqualFold(got.Type, want.Type) || got.NotNull != want.NotNull ||
			got.PK != want.PK || !sameDefault(got.Default, want.Default) {
			return hasStepLatest, fmt.Sprintf("catalog column %d is %s, swamp's schema 4 has %s",
				i+1, describeColumn(got), describeColumn(want))
		}
	}
	return hasStepLatest, ""
}

func metaShapeProblem(cols []Column) string {
	if len(cols) != 2 || cols[0].Name != "key" || cols[1].Name != "value" {
		return fmt.Sprintf("catalog_meta has columns (%s), expected (key, value)", columnNames(cols))
	}
	return ""
}

func sameDefault(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func columnNames(cols []Column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

func describeColumn(c Column) string {
	s := c.Name + " " + c.Type
	if c.NotNull {
		s += " NOT NULL"
	}
	if c.Default != nil {
		s += " DEFAULT " + *c.Default
	}
	if c.PK > 0 {
		s += fmt.Sprintf(" (pk %d)", c.PK)
	}
	return s
}

func (st schemaState) foreignError(path, problem string) *ForeignSchemaError {
	return &ForeignSchemaError{Path: path, SchemaVersion: st.schemaVersion, VersionPresent: st.versionPresent,
		Problem: problem, Columns: st.catalogColumns}
}

// schemaAction is what Open does with a file after inspecting it.
type schemaAction int

const (
	useAsIs        schemaAction = iota // a schema-"4" catalog of swamp's shape
	createSchema                       // no catalog table yet: create it (swamp-format §3.3 statement order)
	finishCreation                     // swamp's shape, empty, schema_version absent: a creation that stopped before its last statements
	foreignSchema                      // anything else: report, never touch
)

// classify decides, from what inspectSchema found, whether the file is ours.
// swamp drops every catalog whose schema_version is not "4" (swamp-format §3.3,
// migrateIfNeeded); swampj only ever adds to a file that holds nothing to lose.
func classify(st schemaState) (schemaAction, string) {
	if st.shapeProblem != "" {
		return foreignSchema, st.shapeProblem
	}
	if st.versionPresent && st.schemaVersion != SchemaVersion {
		return foreignSchema, fmt.Sprintf("schema_version is %q, swampj knows only %q", st.schemaVersion, SchemaVersion)
	}
	if !st.hasCatalogTable {
		// Nothing to lose: a new file, or a file where swamp created
		// catalog_meta and stopped. schema_version "4" without the table
		// would break swamp's queries, so the table is created too.
		return createSchema, ""
	}
	if st.versionPresent {
		return useAsIs, ""
	}
	// swamp creates the catalog table before it stores schema_version, each
	// statement in autocommit (swamp-format §3.3). An empty table of the right shape
	// without schema_version is such an interrupted creation.
	if st.catalogEmpty {
		return finishCreation, ""
	}
	return foreignSchema, "catalog holds rows but catalog_meta has no schema_version"
}

// createStatements is the creation sequence after the journal_mode switch
// (swamp-format §3.3). swamp also runs `DROP TABLE IF EXISTS catalog` before creating the
// table; swampj creates only when there is no catalog table (classify), so
// that DROP would be a no-op, and swampj never issues a DROP.
func createStatements() []string {
	stmts := []string{ddlCatalogMeta, ddlCatalog}
	stmts = append(stmts, ddlIndexes...)
	return append(stmts,
		`INSERT OR REPLACE INTO catalog_meta (key, value) VALUES ('schema_version', '4')`,
		`DELETE FROM catalog_meta WHERE key = 'populated'`,
	)
}
