package protocol

import (
	"context"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/repo"
)

// kinds is every step kind the executor runs and recovery replays, by the
// name the journal stores: the one place to read what a journal may hold.
// A kind's observe, apply and undo live in the file named beside it. A
// journal step whose kind is not here is refused (engine.KindOf), never
// guessed at: it was written by a newer swampj.
//
// Derived kinds change only the catalog; Stages kinds write only hidden
// staging content (engine.Kind says what each flag lets the executor do).
var kinds = map[string]engine.Kind{
	// fs.go: the file-system primitives every protocol plans with.
	KindMkdir:  {Observe: observeMkdir, Apply: applyMkdir, Undo: undoMkdir},
	KindRmdir:  {Observe: observeRmdir, Apply: undoMkdir, Undo: applyMkdir},
	KindRename: {Observe: observeRename, Apply: applyRename, Undo: undoRename, Describe: describeMove},
	KindWrite: {Observe: observeWrite, Apply: applyWrite, Undo: undoWrite,
		Temp: true, WriteAhead: writeAhead, Supersedable: true},
	KindDropDup: {Observe: observeDropDup, Apply: applyDropDup, Undo: undoDropDup, Describe: describeDropDup},
	KindStage:   {Observe: observeStage, Apply: applyStage, Undo: undoStage, Stages: true, Describe: describeStage},
	// The executor's own flush of the directories dirtied so far.
	engine.KindBarrier: engine.Barrier,

	// migratesteps.go: a namespace migration's moves (debris-tolerant).
	KindMove:      {Observe: observeMove, Apply: applyMove, Undo: undoMove, Describe: describeMove},
	KindMoveMkdir: {Observe: observeMkdir, Apply: applyMkdir, Undo: removeDirWithDebris},
	KindMoveRmdir: {Observe: observeRmdir, Apply: removeDirWithDebris, Undo: applyMkdir},
	// removefile.go: a namespace manifest a migration removes.
	KindRemoveFile: {Observe: observeRemoveFile, Apply: applyRemoveFile, Undo: undoRemoveFile},

	// catalogstep.go, catalogpublish.go, repaircatalog.go: the catalog
	// changes of migrations, writes and doctor repairs.
	KindCatalog:        {Observe: observeCatalog, Apply: applyCatalog, Undo: undoCatalog, Derived: true, Describe: describeCatalog},
	KindCatalogPublish: {Observe: observePublish, Apply: applyPublish, ApplyBelow: applyPublishBelow, Prepare: preparePublish, Undo: undoPublish, Derived: true},
	KindRepairCatalog:  {Observe: observeRepairCatalog, Apply: applyRepairCatalog, Undo: undoRepairCatalog, Derived: true},

	// quarantinelock.go: a dead swamp lock a doctor repair moves aside.
	KindQuarantineLock: {Observe: observeQuarantineLock, Apply: applyQuarantineLock, Undo: undoQuarantineLock},
}

// protocols is what the executor is handed: the table, where a repo's
// catalog lives (a run that skipped a catalog step marks it stale), and
// the swamp locks recovery drives an intent under (locks.go).
var protocols = &engine.Protocols{
	Kinds:       kinds,
	CatalogPath: repo.CatalogPathOf,
	LockIntent:  lockIntent,
}

// The executor runs nothing until this package is initialized: every
// program that plans or recovers an intent imports it.
func init() { engine.Install(protocols) }

// applyStage: a stage's content is written ahead of its intent and cannot
// be redone from the journal (a crash before its publish leaves a stage
// recovery can only remove).
func applyStage(context.Context, *engine.Env, *journal.Step, *engine.Dirty) error {
	return engine.ErrCannotRedo
}
