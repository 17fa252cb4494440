// Command swampj-bucket holds the S3 and GCS clients of remote datastores
// for swampj, which starts it when a command needs the bucket and speaks
// to it in JSON lines on its stdin and stdout (ops/remote/bucketwire).
// swampj itself links neither SDK, so local commands never pay their
// start-up.
//
// It exits when its stdin ends, without releasing the locks it holds: that
// is swampj gone, and its locks go stale after their TTL as any dead
// holder's do.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/swampj/swampj/ops/remote/bucket"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "swampj-bucket takes no arguments: swampj starts it and speaks to it on stdin and stdout")
		os.Exit(2)
	}
	if err := bucket.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "swampj-bucket:", err)
		os.Exit(1)
	}
}
