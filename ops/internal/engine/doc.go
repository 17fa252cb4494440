// Package engine is swampj's executor: the one loop that runs a plan (a
// journal.Intent, an ordered list of steps) forward to finish it or
// backward to undo it, for every protocol and for recovery alike. It is
// internal to ops: host programs use ops and recover, which call it.
//
// The engine knows no protocol. A step kind (Kind) observes whether its
// step is done, applies it and undoes it; the kinds themselves — the
// file-system primitives, a write's staging and `latest` pointers, a
// migration's moves, the catalog steps, a repair's quarantine — live in
// ops/internal/protocol, which builds the one closed table of them and
// hands it over when it is initialized (Install, Protocols), together with
// where a repo's catalog lives and the swamp locks recovery takes. The
// engine itself defines only the barrier kind. The loop asks the disk
// before every step, so a crash anywhere, a partial failure or a re-run
// converge. The Dirty set groups fsyncs: one per directory touched, at
// barriers and at the end. The engine imports no domain package (no lock,
// repo, store, meta, catalog): wall_test.go keeps it so.
//
// Reading order: kind.go (Kind, the Protocols table, KindOf, Describe,
// the barrier), exec.go (Execute, Record, Drive, forward and backward),
// dirty.go (the Dirty set), ahead.go (work done ahead: temps written and
// catalog transactions prepared while fsyncs run), recording.go (the
// journal commit in flight beside the staging), recovery.go (RecoverOpen,
// ObserveSteps for a dry run, Stuck), trace.go (the debug records Env.Log
// receives).
package engine
