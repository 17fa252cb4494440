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
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
