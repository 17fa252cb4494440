// Command swampj makes every change to a swamp datastore crash-safe.
//
// Each command file parses flags, calls a package (ops, recover, catalog)
// and renders the result as text or, under --json, one JSON document on
// stdout. Errors go to stderr; exitcode.go maps them to exit codes in one
// place.
package main

import (
	"context"
	"os"

	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/wrapped"
)

// main is run on the process; run catches SIGINT and SIGTERM once a
// command is about to run (app.go).
func main() {
	// A process started by `swampj run` to install the write barrier and
	// exec the command becomes that command here (ops/wrapped).
	wrapped.MaybeExec()
	code := run(context.Background(), os.Args, os.Stdin, os.Stdout, os.Stderr)
	ops.CloseBucketClients() // swampj-bucket, if a command started it
	os.Exit(code)
}
