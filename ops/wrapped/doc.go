// Package wrapped runs a command that may never end (swamp serve) so that
// a power cut of it never leaves a name visible ahead of the bytes it
// names, and the next start repairs what the cut left: Start runs the command under the write barrier (a
// seccomp supervisor that makes every rename, unlink and fsync under the
// datastore wait for a syncfs) and keeps the run's change log; a run whose
// wrapper died is settled by the next one (Pending, Settle, SettleFirst):
// the doctor looks at exactly what the log names. On an S3 or GCS
// datastore, Begin and End guard a wrapped swamp command with swampj's run
// lock in the bucket and a full pull first, and name every version the
// command's push lost (FindRemote, Guarded, Begin).
//
// Reading order: run.go (Start, the run and its change log),
// barrier_linux.go (the supervisor; MaybeExec is its re-exec hook),
// settle.go and settlefirst.go (settling a dead run), remoteguard.go (the
// guard of a remote datastore). docs/wrapped-run.md is the design.
package wrapped
