// Package ops is the door to the host's API: recovery, and where each
// protocol lives. Each operation is planned as a journal.Intent: an
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
// Every protocol is a package of its own, named for it: ops/write
// (WriteVersions), ops/read (OpenData, DataVersions, ListData, models),
// ops/migrate (Migrate and the namespace commands), ops/doctor (check,
// preview, repair; ops/doctor/cache for an S3 or GCS datastore's cache),
// ops/catalogsync (verify and rebuild the catalog), with
// ops/report for what they all report in (progress, remedies, problems,
// intent outcomes). Load the repo with repo.Load (or find it first with
// repo.Find), then call the package of the operation. This package holds
// recovery, which every host needs first: Recover, PreviewRecovery and
// InspectRecovery (what recover.Run calls: each opens the journal itself,
// through the journal session), RemoveCrashLeftovers, DescribeStep and
// IsConflict; and Doctor, the doctor of whatever kind of datastore the
// repo has.
//
// Conventions of the whole API: every function takes a context where it can
// wait, returns typed results and typed errors, and never prints or exits.
// What every command shares — the file system, the lock timeouts, the
// command recorded as the lock holder and the Logger — is one value,
// host.Common (package ops/host), embedded in each options struct: no entry
// point but write.WriteVersions takes a file system argument. A nil FS is
// the real disk; a nil getenv is os.Getenv; a nil Logger logs nothing (a Logger gets warnings at level
// Warn and, at level Debug, one record per step the executor runs: intent
// id, step, kind, path, what the observation said, what was done). Errors
// say what happened, never which CLI command or flag to use (cmd/swampj
// adds that); doctor findings and migrate warnings carry the action they
// advise as a report.Remedy, for the front end to name its own command or
// call. errors.Is(err, swampj.ErrBusy) is every "someone else holds it,
// retry later", errors.Is(err, repo.ErrNotARepo) a directory outside every
// repo, swampj.ErrConflict and swampj.ErrStepFailed an operation stopped
// with its intent open.
//
// # Reading order
//
// ops/internal/engine first: kind.go (what a step kind is to the
// executor), exec.go (the executor), recovery.go (recovery's loop). Then
// ops/internal/protocol: kinds.go (every step kind recovery can replay, one
// table), fs.go (the file-system kinds), then a file per protocol's kinds.
// Then ops/internal/session (the journal session every mutating entry point
// runs in) and ops/report (the vocabulary every operation reports in). Then
// one package per protocol, each with its reading order: ops/write,
// ops/migrate, ops/read, ops/doctor, ops/catalogsync. Here, recovery.go
// (Recover, PreviewRecovery); wall_test.go keeps go doc of this package and
// of the protocol packages to the host's API, with no aliases.
package ops
