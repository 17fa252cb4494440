package ops

import "github.com/swampj/swampj/ops/internal/engine"

// Transitional: what packages outside ops (recover, cmd, their tests) used
// of the executor before it moved to ops/internal/engine. The commits after
// the move replace each with a host-facing entry and delete this file.

type (
	Env           = engine.Env
	CatalogOpener = engine.CatalogOpener
	ConflictError = engine.ConflictError
	StepError     = engine.StepError
)

var (
	RepoCatalog   = engine.RepoCatalog
	ReportCatalog = engine.ReportCatalog
	Describe      = engine.Describe
	Execute       = engine.Execute
)

const (
	KindMkdir   = engine.KindMkdir
	KindRmdir   = engine.KindRmdir
	KindRename  = engine.KindRename
	KindWrite   = engine.KindWrite
	KindBarrier = engine.KindBarrier
)
