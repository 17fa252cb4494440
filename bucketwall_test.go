package swampj_test

import (
	"os/exec"
	"strings"
	"testing"
)

// bucketOnly are the import paths (prefixes) of the bucket clients and the
// network stack they bring: every linked package's init runs at every
// start of a program, so swampj links none of them and leaves them to
// swampj-bucket (docs/benchmarks.md, start-up).
var bucketOnly = []string{"github.com/aws/", "cloud.google.com/", "google.golang.org/", "golang.org/x/oauth2", "net/http"}

// TestBucketClientsStayOutOfSwampj: swampj's dependencies (the
// production build's tags and a plain build) hold none of bucketOnly;
// swampj-bucket's hold them.
func TestBucketClientsStayOutOfSwampj(t *testing.T) {
	deps := func(tags, pkg string) []string {
		t.Helper()
		args := []string{"list", "-deps"}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		out, err := exec.Command("go", append(args, pkg)...).Output()
		if err != nil {
			t.Fatalf("go %s %s: %v", strings.Join(args, " "), pkg, err)
		}
		return strings.Fields(string(out))
	}
	matches := func(p, prefix string) bool {
		return strings.HasPrefix(p, prefix) && (strings.HasSuffix(prefix, "/") || len(p) == len(prefix) || p[len(prefix)] == '/')
	}
	for _, tags := range []string{"", "urfave_cli_no_docs,netgo,osusergo"} {
		for _, p := range deps(tags, "./cmd/swampj") {
			for _, prefix := range bucketOnly {
				if matches(p, prefix) {
					t.Errorf("swampj (tags %q) links %s: the bucket clients and their network stack belong to swampj-bucket", tags, p)
				}
			}
		}
	}
	have := map[string]bool{}
	for _, p := range deps("", "./cmd/swampj-bucket") {
		for _, prefix := range bucketOnly {
			if matches(p, prefix) {
				have[prefix] = true
			}
		}
	}
	for _, prefix := range []string{"github.com/aws/", "cloud.google.com/", "net/http"} {
		if !have[prefix] {
			t.Errorf("swampj-bucket links nothing under %s: is it still the program with the bucket clients?", prefix)
		}
	}
}
