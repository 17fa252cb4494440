// Package journal is swampj's intent log: a bbolt file at
// {repo}/.swamp/_journal.db that records, before anything touches the
// datastore, the whole plan of every migrate, reverse, version write and
// repair. A recovery pass reads the open intents back and runs the same
// executor over them, forward (finish) or backward (undo), deciding each step
// by observing the disk.
//
// What the journal promises:
//   - Begin returns only after one synced bbolt commit holding the complete
//     plan. Nothing in the plan has been done yet.
//   - Completion marks are written lazily (with the next Begin, or at Close):
//     losing one costs only a re-observation at the next recovery.
//   - The direction of an interrupted intent, once chosen, is written before
//     the first step in that direction and never flips by itself.
//   - The bbolt file lock is swampj's process lock for the repo; opening it
//     always has a timeout, and the holder is named in the timeout error.
//
// What it owns: the journal file, its format and its process lock. It knows
// nothing of swamp's layout or of what a step means (package ops does).
//
// Reading order: intent.go (the records: Intent, Step, Status, Direction),
// journal.go (Open, OpenReadOnly, Begin, the lock), stale.go (catalog-stale
// marks), boltcheck.go (a file bbolt would misread is refused as damaged),
// errors.go (typed errors: a lock timeout matches swampj.ErrBusy); then
// package ops (the executor) and package recover.
package journal
