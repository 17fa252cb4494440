package main

// `swampj run` on a remote-backed repo, around the command: the guard of
// package ops/wrapped (run lock, pull, the bucket before and after); the
// CLI adds the vendors' restore commands.

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/swampj/swampj/ops/wrapped"
)

// defaultRunLockTimeout bounds the wait for another checkout's wrapped
// command; past it the command is not run (exit 75).
const defaultRunLockTimeout = wrapped.DefaultRunLockTimeout

// beginRunGuard is wrapped.Begin with this CLI's disk, environment and
// logger (cliHint names the flag where the run lock stayed held).
func beginRunGuard(ctx context.Context, e *env, rem *wrapped.Remote, dir string, args []string, timeout time.Duration) (*wrapped.Guard, error) {
	return wrapped.Begin(ctx, rem, dir, args, wrapped.GuardOptions{FS: e.fs, Env: os.Getenv, RunLockTimeout: timeout, Logger: e.out.logger()})
}

// restoreHint is how to get a lost object back with the vendor's CLI.
func restoreHint(rem *wrapped.Remote) string {
	b := rem.Bucket()
	if rem.GCS() {
		return fmt.Sprintf("list a key's earlier generations with 'gcloud storage ls --all-versions gs://%s/KEY' and copy the one with the lost hash back "+
			"('gcloud storage cp gs://%s/KEY#GENERATION gs://%s/KEY'); then 'swamp datastore sync' in every checkout", b, b, b)
	}
	return fmt.Sprintf("list a key's earlier versions with 'aws s3api list-object-versions --bucket %s --prefix KEY' and copy the one with the lost ETag back "+
		"('aws s3api copy-object --bucket %s --key KEY --copy-source %s/KEY?versionId=ID'); then 'swamp datastore sync' in every checkout", b, b, b)
}
