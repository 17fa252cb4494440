// Package ops runs swampj's plans, and is the API a host program writes,
// reads, migrates, repairs and rebuilds through. A plan is a journal.Intent:
// an ordered list of small steps (rename, write, mkdir, stage, barrier,
// catalog change), each able to observe whether it is done, apply itself and
// undo itself.
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
// # Entry points
//
// Load the repo with repo.Load (or find it first with repo.Find), then:
// WriteVersions (one or many versions in one intent), OpenData, DataVersions
// and ListData (reading), SetNamespace, UnsetNamespace and Migrate (preview
// without Confirm, run with it; re-running after any failure finishes the
// job), Doctor (check, preview, repair), VerifyCatalog and RebuildCatalog.
// example_test.go has a runnable example of each.
//
// Conventions of the whole API: every function takes a context where it can
// wait, returns typed results and typed errors, and never prints or exits.
// A nil fsx.FS (argument or options field) is the real disk; a nil getenv is
// os.Getenv. Errors say what happened, never which CLI command or flag to
// use (cmd/swampj adds that); errors.Is(err, ErrBusy) is every "someone else
// holds it, retry later", errors.Is(err, ErrNotARepo) a directory outside
// every repo. The namespace operations read .swamp.yaml again before they
// plan, so a *repo.Repo loaded before a namespace change is not stale for
// them; the other functions use the Repo as given (repo.Repo).
//
// # Reading order
//
// exec.go and steps.go (the executor and its step kinds), recovery.go
// (RecoverOpen, PreviewOpen), then one file per protocol: write.go
// (versioned data writes), migrate.go with migratesteps.go (namespace
// migration), namespace.go (set, unset, list), catalogstep.go and
// catalogsync.go (catalog steps, verify, rebuild), repair.go with the
// doctor*.go checks (quarantine of unreadable versions), read.go.
// errors.go holds the shared error classes.
package ops
