package ops_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/recover"
)

// cancelAtRename cancels the run's context as its first move into the
// namespace returns: Ctrl-C in the middle of the moves.
type cancelAtRename struct {
	fsx.FS
	cancel func()
	once   sync.Once
}

func (c *cancelAtRename) RenameNoReplace(from, to string) error {
	err := c.FS.RenameNoReplace(from, to)
	if strings.Contains(to, string(filepath.Separator)+migNS+string(filepath.Separator)) {
		c.once.Do(c.cancel)
	}
	return err
}

// TestMigrateInterruptedMidMoves: an interrupt after the first move ends
// the run with a MigrateInterruptedError naming the open intent (not a
// partial-failure report that asks to fix a cause), which matches
// context.Canceled; the same migration run again finishes it.
func TestMigrateInterruptedMidMoves(t *testing.T) {
	dir := migFixture{catalogStamp: "", manifest: true}.build(t)
	ctx, cancel := context.WithCancel(migCtx)
	defer cancel()
	fsys := &cancelAtRename{FS: fsx.Real(), cancel: cancel}
	_, err := migrate.Migrate(ctx, migLoad(t, dir), migrate.MigrateOptions{Common: host.Common{JournalLockTimeout: 2 * time.Second, SwampLockTimeout: 2 * time.Second, FS: fsys}, Confirm: true, Getenv: func(string) string { return "" }})
	var mi *migrate.MigrateInterruptedError
	if !errors.As(err, &mi) || mi.IntentID == 0 || mi.Rerun != report.RemedyMigrate || !errors.Is(err, context.Canceled) {
		t.Fatalf("want an interrupted migration with its intent open, got %#v", err)
	}
	if strings.Contains(err.Error(), "fix the cause") || strings.Contains(err.Error(), "'swampj ") {
		t.Fatalf("the message: %v", err)
	}
	if rep, err := recover.Run(migCtx, dir, recover.Options{DryRun: true}); err != nil || len(rep.Intents) != 1 || rep.Intents[0].ID != mi.IntentID {
		t.Fatalf("the intent must stay open: %+v %v", rep, err)
	}
	done := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true}).Completed
	if len(done.Recovered) != 1 || done.Recovered[0].Status != journal.StatusDone {
		t.Fatalf("the re-run must finish the interrupted intent: %+v", done)
	}
}
