// Package ops is the API a host program writes, reads, migrates, repairs
// and rebuilds through. Each operation is planned as a journal.Intent: an
// ordered list of small steps (rename, write, mkdir, stage, barrier,
// catalog change), each able to observe whether it is done, apply itself
// and undo itself.
//
// The executor behind it (ops/internal/engine, not part of the API)
// journals the plan with one synced commit and then applies each step that
// observation says is not done. Recovery (Recover, called by package
// recover) loads open intents and runs the very same loop, forward to
// finish or backward to undo. Nothing is remembered between runs except
// the plan: every decision is made by looking at the disk, so a crash at
// any point, a partial failure, or a re-run of the command all converge.
//
// Durability is grouped: a rename marks its parent directories dirty, and a
// barrier step (or the end of the run) fsyncs each dirty directory once —
// one fsync per parent directory touched, not one per entry.
//
// # Entry points
//
// Load the repo with repo.Load (or find it first with repo.Find), then:
// WriteVersions (one or many versions in one intent), OpenData, DataVersions
// and ListData (reading), SetNamespace, UnsetNamespace (PreviewUnsetNamespace
// says what it would change) and Migrate (preview
// without Confirm, run with it; re-running after any failure finishes the
// job), Doctor (check, preview, repair), VerifyCatalog and RebuildCatalog,
// Recover and PreviewRecovery (what recover.Run calls). example_test.go has
// a runnable example of each.
//
// Conventions of the whole API: every function takes a context where it can
// wait, returns typed results and typed errors, and never prints or exits.
// A nil fsx.FS (argument or options field) is the real disk; a nil getenv is
// os.Getenv; a nil Logger logs nothing (a Logger gets warnings at level
// Warn and, at level Debug, one record per step the executor runs: intent
// id, step, kind, path, what the observation said, what was done). Errors
// say what happened, never which CLI command or flag to use (cmd/swampj
// adds that); doctor findings and migrate warnings carry the action they
// advise as a Remedy, for the front end to name its own command or call.
// errors.Is(err, ErrBusy) is every "someone else holds it,
// retry later", errors.Is(err, ErrNotARepo) a directory outside every
// repo, ErrConflict and ErrStepFailed an operation stopped with its intent
// open. The namespace operations read .swamp.yaml again before they plan,
// so a *repo.Repo loaded before a namespace change is not stale for them;
// the other functions use the Repo as given (repo.Repo).
//
// # Reading order
//
// ops/internal/engine first: kind.go (what a step kind is to the
// executor), exec.go (the executor), recovery.go (recovery's loop). Then
// ops/internal/protocol: kinds.go (every step kind recovery can replay, one
// table), fs.go (the file-system kinds), then a file per protocol's kinds.
// Then ops/internal/session (the
// journal session every mutating entry point runs in) and ops/report (the
// vocabulary every operation reports in). Then here, one protocol per
// group of files: write.go (WriteVersions, its options and errors),
// writeprepare.go (inputs and locks), writeplan.go (the intent);
// migrate.go (Migrate), migrateplan.go, migratecount.go,
// migrateobserve.go; nsmutation.go (the session-bound mutation migration
// and the namespace commands share), namespace.go (set, unset, list);
// read.go; recovery.go (Recover, PreviewRecovery). The doctor is package
// ops/doctor and catalog verify and rebuild are ops/catalogsync, each with
// its own reading order; facade.go re-exports their names here, so a host
// imports ops alone. errors.go holds the shared error classes;
// wall_test.go keeps go doc of this package to the host's API.
package ops
