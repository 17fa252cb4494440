package wrapped

import (
	"context"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/repo"
)

// SettleFirst settles, before a write or a migration changes anything,
// every wrapped run (`swampj run`) whose wrapper died without its final
// barrier: what it was changing is doctored and repaired first, so nothing
// is written on top of a version a power cut left torn. Each one settled is
// said at level Warn on opts.Logger. With none pending it costs one readdir.
func SettleFirst(ctx context.Context, r *repo.Repo, opts SettleOptions) error {
	if !Pending(fsx.OrReal(opts.FS), r.JournalPath) {
		return nil
	}
	settled, err := Settle(ctx, r, opts)
	if opts.Logger != nil {
		for _, s := range settled {
			opts.Logger.Warn(s.Sentence())
		}
	}
	return err
}
