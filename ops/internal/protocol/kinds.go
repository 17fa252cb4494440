package engine

import (
	"context"

	"github.com/swampj/swampj/journal"
)

// kinds is every step kind the executor runs and recovery replays, by the
// name the journal stores: the one place to read what a journal may hold.
// A kind's observe, apply and undo live in the file named beside it. A
// journal step whose kind is not here is refused (KindOf), never guessed
// at: it was written by a newer swampj.
//
// Derived kinds change only the catalog; Stages kinds write only hidden
// staging content (Kind says what each flag lets the executor do).
var kinds = map[string]Kind{
	// steps.go: the file-system primitives every protocol plans with.
	KindMkdir:   {Observe: observeMkdir, Apply: applyMkdir, Undo: undoMkdir},
	KindRmdir:   {Observe: observeRmdir, Apply: undoMkdir, Undo: applyMkdir},
	KindRename:  {Observe: observeRename, Apply: applyRename, Undo: undoRename},
	KindWrite:   {Observe: observeWrite, Apply: applyWrite, Undo: undoWrite},
	KindDropDup: {Observe: observeDropDup, Apply: applyDropDup, Undo: undoDropDup},
	KindStage:   {Observe: observeStage, Apply: applyStage, Undo: undoStage, Stages: true},
	KindBarrier: {Observe: observeBarrier, Apply: flushDirty, Undo: flushDirty},

	// migratesteps.go: a namespace migration's moves (debris-tolerant).
	KindMove:      {Observe: observeMove, Apply: applyMove, Undo: undoMove},
	KindMoveMkdir: {Observe: observeMkdir, Apply: applyMkdir, Undo: removeDirWithDebris},
	KindMoveRmdir: {Observe: observeRmdir, Apply: removeDirWithDebris, Undo: applyMkdir},
	// removefile.go: a namespace manifest a migration removes.
	KindRemoveFile: {Observe: observeRemoveFile, Apply: applyRemoveFile, Undo: undoRemoveFile},

	// catalogstep.go, catalogpublish.go, repaircatalog.go: the catalog
	// changes of migrations, writes and doctor repairs.
	KindCatalog:        {Observe: observeCatalog, Apply: applyCatalog, Undo: undoCatalog, Derived: true},
	KindCatalogPublish: {Observe: observePublish, Apply: applyPublish, Prepare: preparePublish, Undo: undoPublish, Derived: true},
	KindRepairCatalog:  {Observe: observeRepairCatalog, Apply: applyRepairCatalog, Undo: undoRepairCatalog, Derived: true},

	// quarantinelock.go: a dead swamp lock a doctor repair moves aside.
	KindQuarantineLock: {Observe: observeQuarantineLock, Apply: applyQuarantineLock, Undo: undoQuarantineLock},
}

// applyStage: a stage's content is written ahead of its intent and cannot
// be redone from the journal (a crash before its publish leaves a stage
// recovery can only remove).
func applyStage(context.Context, *Env, *journal.Step, *Dirty) error { return ErrCannotRedo }

// observeBarrier: a barrier is never done in advance; running it again
// only costs the fsyncs of directories that are dirty by then.
func observeBarrier(context.Context, *Env, *journal.Step) (Observation, string, error) {
	return NotDone, "", nil
}

// flushDirty fsyncs every directory dirtied so far (a barrier, either way).
func flushDirty(_ context.Context, _ *Env, _ *journal.Step, d *Dirty) error { return d.Flush() }
