// Package protocol holds the step kinds of swampj's protocols: what each
// step a plan may journal means on disk, and the helpers that plan them.
// The executor (ops/internal/engine) runs plans without knowing any of
// this; this package builds the one closed table of kinds (kinds.go) and
// installs it in the engine when it is initialized, so every program that
// plans or recovers an intent (ops, recover, the crash suites) runs the
// same list and a journal step of any other kind is refused.
//
// Reading order: kinds.go (the table: every kind a journal may hold, and
// what the engine is handed with it), fs.go (the file-system primitives
// every protocol plans with: mkdir, rmdir, rename, write, drop-duplicate,
// stage), migratesteps.go and removefile.go (a namespace migration's
// debris-tolerant moves and its manifest removal), catalogstep.go,
// catalogpublish.go and repaircatalog.go (the catalog changes of
// migrations, writes and doctor repairs, and the catalog opener),
// quarantinelock.go (a dead swamp lock a repair moves aside), locks.go
// (the swamp locks recovery drives an intent under).
package protocol
