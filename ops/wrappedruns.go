package ops

import (
	"context"
	"log/slog"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/wrapped"
)

// settleWrappedRuns settles, before a write or a migration changes
// anything, every wrapped run (`swampj run`) whose wrapper died without its
// final barrier: what it was changing is doctored and repaired first, so
// nothing is written on top of a version a power cut left torn. Each one
// settled is said at level Warn. With none pending it costs one readdir.
func settleWrappedRuns(ctx context.Context, fsys fsx.FS, r *repo.Repo, journalTO, swampTO time.Duration, command []string, logger *slog.Logger) error {
	if !wrapped.Pending(fsx.OrReal(fsys), r.JournalPath) {
		return nil
	}
	settled, err := wrapped.Settle(ctx, r, wrapped.SettleOptions{JournalLockTimeout: journalTO, SwampLockTimeout: swampTO,
		Command: command, Logger: logger, FS: fsys})
	if logger != nil {
		for _, s := range settled {
			logger.Warn(s.Sentence())
		}
	}
	return err
}
