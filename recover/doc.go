// Package recover finishes or rolls back whatever a crashed swampj left
// half done. Other tools call it as a startup hook, from any directory
// inside the repo:
//
//	import swampjrecover "github.com/swampj/swampj/recover" // "recover" shadows the builtin
//
//	rep, err := swampjrecover.Run(ctx, dir, swampjrecover.Options{})
//	switch {
//	case errors.Is(err, swampjrecover.ErrBusy):     // someone holds the repo: retry later (exit 75)
//	case errors.Is(err, swampjrecover.ErrNotARepo): // dir is not inside a swamp repo
//	}
//
// Run finds the repo root as the CLI does (the nearest ancestor holding
// .swamp.yaml). It never prints and never exits, and its errors name no CLI
// command or flag. On the clean path — no journal file, or no open intent —
// it creates nothing and returns quickly.
//
// What it owns: the decision to finish or undo open intents, the dry run,
// and read-only media (*PendingError). The recovery itself is one call,
// ops.Recover: one journal session that opens the journal, steps the open
// intents with the executor every command uses, sweeps what crashed writes
// left and closes; recover maps the phase a failure happened in to its
// errors. It opens no journal itself.
//
// When recovery itself fails, the error says what is true now (errors.As):
// *report.IntentStillOpenError — the intent it stopped at stays open, its
// steps' effects on disk; *OpenError — the journal could not be opened
// for writing, nothing was changed; *MarksLostError — every step is done,
// but the journal could not record it, so the intent stays open there;
// *LeftoversError — every intent was recovered, the look for a crashed
// write's staging failed. In each case running Run again once the cause
// is fixed goes on from there.
//
// Reading order: recover.go (Run, then dryRun and readOnlyRecover),
// catalog.go (the read-only catalog of a dry run); example_test.go shows a
// host's startup hook.
package recover
