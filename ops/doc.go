// Package ops runs swampj's plans. A plan is a journal.Intent: an ordered
// list of small steps (rename, write, mkdir, stage, barrier, catalog change),
// each able to observe whether it is done, apply itself and undo itself.
//
// The executor (exec.go) journals the plan with one synced commit and then
// applies each step that observation says is not done. Recovery (package
// recover) loads open intents and runs the very same loop, forward to finish
// or backward to undo. Nothing is remembered between runs except the plan:
// every decision is made by looking at the disk, so a crash at any point,
// a partial failure, or a re-run of the command all converge.
//
// Durability is grouped: a rename marks its parent directories dirty, and a
// barrier step (or the end of the run) fsyncs each dirty directory once —
// one fsync per parent directory touched, not one per entry.
//
// Protocols, one file each: migrate.go (namespace migration), write.go
// (versioned data writes), repair.go (quarantine of unreadable versions).
package ops
