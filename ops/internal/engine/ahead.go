package engine

// Work done ahead: a step's catalog transaction prepared up to its COMMIT while
// earlier steps wait on fsyncs, and the temps written ahead removed on rollback.

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
)

// aheadWork is one step being prepared in the background.
type aheadWork struct {
	done chan struct{}
	p    Prepared
	ok   bool
	err  error
}

// prepareAhead starts, in the background, every later step that can be
// prepared (kind.Prepare): on the real disk, a versioned write's catalog
// statements then run while its files are fsynced, and its catalog step
// only commits. Under a test file system every operation keeps its place
// in line, so nothing is started.
func prepareAhead(ctx context.Context, env *Env, steps []journal.Step, from int, d *Dirty) {
	if !fsx.Concurrent(env.FS) {
		return
	}
	for j := from + 1; j < len(steps); j++ {
		k, err := KindOf(&steps[j])
		if err != nil || k.Prepare == nil || d.ahead[j] != nil {
			continue
		}
		aw := &aheadWork{done: make(chan struct{})}
		if d.ahead == nil {
			d.ahead = map[int]*aheadWork{}
		}
		d.ahead[j] = aw
		go func(s *journal.Step) {
			defer close(aw.done)
			aw.p, aw.ok, aw.err = k.Prepare(ctx, env, s)
		}(&steps[j])
	}
}

// commitOr returns the apply of a prepared step: commit what was prepared,
// or, if preparing failed or did not apply, the step's own apply.
func (aw *aheadWork) commitOr(apply func(context.Context, *Env, *journal.Step, *Dirty) error) func(context.Context, *Env, *journal.Step, *Dirty) error {
	return func(ctx context.Context, env *Env, s *journal.Step, d *Dirty) error {
		<-aw.done
		if aw.err != nil || !aw.ok {
			return apply(ctx, env, s, d)
		}
		start := time.Now()
		err := aw.p.Commit()
		observeFlush("catalog-commit", 1, start, time.Now())
		return err
	}
}

// prepareTemps writes ahead the temp files of the steps among steps that
// are still to be applied and can be (Kind.WriteAhead), without an fsync,
// so that SyncContent flushes them together with the staged content
// instead of one by one later (a versioned write's `latest` pointer). A
// temp file is invisible to every reader and journaled by name, so
// writing it early changes nothing a crash could expose: recovery removes
// it like any leftover temp. It stops when a flush of earlier content
// failed (the executor's SyncContent reports it).
func prepareTemps(env *Env, steps []journal.Step, d *Dirty) {
	for i := range steps {
		s := &steps[i]
		k, err := KindOf(s)
		if err != nil || k.WriteAhead == nil || s.Temp == "" || d.prepared[s.Temp] {
			continue
		}
		if err := k.WriteAhead(env, s, d); err != nil {
			return
		}
	}
}

// removePreparedTemps removes the temp files of the intent's steps that go
// through one (Kind.Temp; written ahead by prepareTemps) where they exist.
func removePreparedTemps(env *Env, in *journal.Intent) error {
	for i := range in.Steps {
		s := &in.Steps[i]
		if k, err := KindOf(s); err == nil && k.Temp && s.Temp != "" {
			if err := env.FS.Remove(s.Temp); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}
