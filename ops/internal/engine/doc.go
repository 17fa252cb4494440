// Package engine is swampj's executor: the one loop that runs a plan (a
// journal.Intent, an ordered list of steps) forward to finish it or
// backward to undo it, for every protocol and for recovery alike. It is
// internal to ops: host programs use ops and recover, which call it.
//
// A step kind (steps.go, catalogstep.go, migratesteps.go, and the
// protocols' own kinds registered from ops) observes whether its step is
// done, applies it and undoes it; the loop asks the disk before every
// step, so a crash anywhere, a partial failure or a re-run converge. The
// Dirty set groups fsyncs: one per directory touched, at barriers and at
// the end.
//
// Reading order: exec.go (Execute, Record, Drive, the Dirty set), steps.go
// (the basic kinds: mkdir, rmdir, rename, write, drop-duplicate, stage,
// barrier), recovery.go (RecoverOpen under the swamp locks an intent names,
// ObserveSteps for a dry run), catalogstep.go (catalog steps and the
// catalog opener), migratesteps.go (the migration's debris-tolerant
// kinds), trace.go (the debug records Env.Log receives).
package engine
