package catalog

import (
	"context"
	"database/sql"
	"errors"
	"strings"
)

// Readers. Each is a single statement, so it sees one consistent snapshot
// (WAL readers never block writers). Rows come in rowid order, the order
// swamp's iterate() pages in (swamp-format §3.11).

// readable refuses reads whose columns a foreign catalog may not have.
func (c *Catalog) readable() error {
	if c.foreign != nil {
		return c.foreign
	}
	return nil
}

func (c *Catalog) selectRows() string {
	return `SELECT ` + strings.Join(rowColumns(c.hasStepLatest), ", ") + ` FROM catalog`
}

// Rows returns every row stamped with namespace ns, in rowid order.
func (c *Catalog) Rows(ctx context.Context, ns string) ([]Row, error) {
	if err := c.readable(); err != nil {
		return nil, err
	}
	return c.queryRows(ctx, c.db, "rows", c.selectRows()+` WHERE namespace = ? ORDER BY rowid`, ns)
}

func (c *Catalog) queryRows(ctx context.Context, q queryer, op, query string, args ...any) ([]Row, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, &DBError{Op: op, Path: c.path, Err: err}
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		r, err := scanRow(rows, c.hasStepLatest)
		if err != nil {
			return nil, &DBError{Op: op, Path: c.path, Err: err}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, &DBError{Op: op, Path: c.path, Err: err}
	}
	return out, nil
}

// LatestRow returns the row of key that has is_latest = 1. On a catalog
// without is_step_latest each step keeps its own latest row (swamp-format §3.5); then the
// newest rowid wins, as swamp's findLatestRow decides (swamp-format §3.5, §7.2).
func (c *Catalog) LatestRow(ctx context.Context, key ItemKey) (Row, bool, error) {
	if err := c.readable(); err != nil {
		return Row{}, false, err
	}
	r, err := scanRow(c.db.QueryRowContext(ctx,
		c.selectRows()+` WHERE `+whereEqual(itemColumns)+` AND is_latest = 1 ORDER BY rowid DESC LIMIT 1`,
		key.Namespace, key.TypeNormalized, key.ModelID, key.DataName), c.hasStepLatest)
	if errors.Is(err, sql.ErrNoRows) {
		return Row{}, false, nil
	}
	if err != nil {
		return Row{}, false, &DBError{Op: "latest row", Path: c.path, Err: err}
	}
	return r, true, nil
}

// Namespaces lists the distinct namespace stamps in the catalog, sorted
// ("" is the solo namespace).
func (c *Catalog) Namespaces(ctx context.Context) ([]string, error) {
	if err := c.readable(); err != nil {
		return nil, err
	}
	rows, err := c.db.QueryContext(ctx, `SELECT DISTINCT namespace FROM catalog ORDER BY namespace`)
	if err != nil {
		return nil, &DBError{Op: "namespaces", Path: c.path, Err: err}
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ns string
		if err := rows.Scan(&ns); err != nil {
			return nil, &DBError{Op: "namespaces", Path: c.path, Err: err}
		}
		out = append(out, ns)
	}
	if err := rows.Err(); err != nil {
		return nil, &DBError{Op: "namespaces", Path: c.path, Err: err}
	}
	return out, nil
}

// Meta returns catalog_meta as a map (schema_version, populated,
// foreign_synced:{ns}, swamp-format §3.3). It works on a foreign catalog opened in
// ModeReport too, as long as it has a catalog_meta table of swamp's shape.
func (c *Catalog) Meta(ctx context.Context) (map[string]string, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT key, value FROM catalog_meta`)
	if err != nil {
		return nil, &DBError{Op: "read catalog_meta of", Path: c.path, Err: err}
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, &DBError{Op: "read catalog_meta of", Path: c.path, Err: err}
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, &DBError{Op: "read catalog_meta of", Path: c.path, Err: err}
	}
	return out, nil
}

// Populated reports whether catalog_meta.populated is "true" (swamp-format §3.7).
func (c *Catalog) Populated(ctx context.Context) (bool, error) {
	m, err := c.Meta(ctx)
	if err != nil {
		return false, err
	}
	return m[metaPopulated] == "true", nil
}
