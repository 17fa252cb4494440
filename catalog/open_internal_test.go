package catalog

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/swampj/swampj/fsx"
)

// Every pooled connection carries swamp's busy_timeout and synchronous=FULL,
// and a write transaction holds the write lock from BEGIN (IMMEDIATE), before
// its first statement.
func TestConnectionSettings(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "data", "_catalog.db")
	c, err := Open(ctx, fsx.Real(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	conns := make([]*sql.Conn, 3) // force several pooled connections
	for i := range conns {
		if conns[i], err = c.db.Conn(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, conn := range conns {
		var sync, busy int
		var mode string
		if err := conn.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if sync != 2 || busy != 5000 || mode != "wal" {
			t.Fatalf("conn %d: synchronous=%d busy_timeout=%d journal_mode=%s", i, sync, busy, mode)
		}
		conn.Close()
	}

	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	err = c.writeTx(ctx, "probe", "catalog.test.commit", func(tx *sql.Tx) error {
		_, err := other.ExecContext(ctx, `BEGIN IMMEDIATE`)
		if err == nil {
			_, _ = other.ExecContext(ctx, `ROLLBACK`)
			t.Fatal("a second writer got the lock while a write transaction was open")
		}
		if !isBusy(err) {
			t.Fatalf("second writer: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
