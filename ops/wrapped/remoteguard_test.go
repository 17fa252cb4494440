package wrapped_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/swampj/swampj/ops/remote/buckettest"
	"github.com/swampj/swampj/ops/wrapped"
)

// gcsRepo is a repo whose datastore, named in its environment, is a GCS
// bucket behind a closed port.
// needBucketProgram builds swampj-bucket once for the tests that reach a
// bucket (production starts it beside swampj).
func needBucketProgram(t *testing.T) {
	t.Helper()
	bucketOnce.Do(func() {
		dir, err := os.MkdirTemp("", "swampj-bucket-")
		bucketDir = dir
		if err == nil {
			_, err = buckettest.Install(dir)
		}
		bucketErr = err
	})
	if bucketErr != nil {
		t.Fatal(bucketErr)
	}
}

var (
	bucketOnce sync.Once
	bucketErr  error
	bucketDir  string // removed by TestMain
)

func gcsRepo(t *testing.T) (string, func(string) string) {
	t.Helper()
	needBucketProgram(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("repoId: 7d3f2c1e-9a4b-4c2d-8e1f-0a1b2c3d4e5f\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"SWAMP_DATASTORE":       `@swamp/gcs-datastore:{"bucket":"guard"}`,
		"STORAGE_EMULATOR_HOST": "127.0.0.1:1",
		"SWAMP_HOME":            t.TempDir(),
	}
	return dir, func(k string) string { return env[k] }
}

// Only a swamp command that ends runs under the guard: not swamp serve
// (it would hold the run lock for as long as it serves), not another
// program, and nothing on a filesystem datastore.
func TestGuardedOnlySwampCommandsThatEnd(t *testing.T) {
	dir, env := gcsRepo(t)
	rem, err := wrapped.FindRemote(dir, nil, env)
	if err != nil || rem == nil || rem.Bucket() != "guard" || !rem.GCS() {
		t.Fatalf("FindRemote: %v %v", rem, err)
	}
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"swamp", "model", "method", "run", "m1", "execute"}, true},
		{[]string{"/opt/x/bin/swamp-s3", "--json", "data", "get", "m1"}, true},
		{[]string{"swamp", "--verbose", "serve"}, false},
		{[]string{"swampj", "doctor"}, false},
		{[]string{"sh", "-c", "swamp model get m1"}, false},
	} {
		if got := wrapped.Guarded(rem, c.args); got != c.want {
			t.Errorf("Guarded(%q) = %v, want %v", c.args, got, c.want)
		}
	}
	if wrapped.Guarded(nil, []string{"swamp", "model", "get"}) {
		t.Error("a command on a filesystem datastore is guarded")
	}
	plain := t.TempDir()
	if err := os.WriteFile(filepath.Join(plain, ".swamp.yaml"), []byte("repoId: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rem, err := wrapped.FindRemote(plain, nil, func(string) string { return "" }); rem != nil || err != nil {
		t.Errorf("FindRemote of a filesystem datastore: %v %v", rem, err)
	}
}

// Where the bucket cannot be reached, Begin lets the command run without
// the guard and says so; a guard that was never begun ends with nothing
// lost.
func TestBeginWithTheBucketOutOfReachRunsUnguarded(t *testing.T) {
	dir, env := gcsRepo(t)
	rem, err := wrapped.FindRemote(dir, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	var warned strings.Builder
	g, err := wrapped.Begin(context.Background(), rem, dir, []string{"swamp", "model", "get", "m1"},
		wrapped.GuardOptions{Env: env, RunLockTimeout: 1, Logger: slog.New(slog.NewTextHandler(&warned, nil))})
	if g != nil || err != nil || !strings.Contains(warned.String(), "runs without it") {
		t.Fatalf("Begin: guard %v, error %v, warnings %q", g, err, warned.String())
	}
	if lost := g.End(context.Background()); lost != nil {
		t.Errorf("End of no guard: %v", lost)
	}
	g.Release()
}
