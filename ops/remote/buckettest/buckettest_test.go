package buckettest

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/remote"
)

// The fake answers as GCS does where the lock depends on it: a create
// with ifGenerationMatch=0 once, then 412; a delete only at the held
// generation; a takeover is a new generation.
func TestFakeGCSHoldsItsPreconditions(t *testing.T) {
	f := NewFakeGCS(t, "b")
	do := func(method, path, body string) (int, map[string]string) {
		t.Helper()
		req, err := http.NewRequest(method, f.URL()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]string
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	create := "/upload/storage/v1/b/b/o?uploadType=media&name=.datastore.lock&ifGenerationMatch=0"
	code, first := do(http.MethodPost, create, "mine")
	if code != http.StatusOK || first["generation"] == "" || first["size"] != "4" {
		t.Fatalf("first create: %d %v", code, first)
	}
	if code, _ := do(http.MethodPost, create, "theirs"); code != http.StatusPreconditionFailed {
		t.Fatalf("second create with ifGenerationMatch=0: %d, want 412", code)
	}
	if o := f.Object(".datastore.lock"); o == nil || string(o.Data) != "mine" {
		t.Fatalf("object after the refused create: %+v", o)
	}
	f.Steal(".datastore.lock", time.Now())
	obj := "/storage/v1/b/b/o/.datastore.lock"
	if code, _ := do(http.MethodDelete, obj+"?ifGenerationMatch="+first["generation"], ""); code != http.StatusPreconditionFailed {
		t.Fatalf("delete at the generation taken over: %d, want 412", code)
	}
	code, now := do(http.MethodGet, obj, "")
	if code != http.StatusOK || now["generation"] == first["generation"] {
		t.Fatalf("metadata after the takeover: %d %v", code, now)
	}
	if code, _ := do(http.MethodDelete, obj+"?ifGenerationMatch="+now["generation"], ""); code != http.StatusNoContent {
		t.Fatalf("delete at the held generation: %d, want 204", code)
	}
	if o := f.Object(".datastore.lock"); o != nil {
		t.Fatalf("object after its delete: %+v", o)
	}
	if f.Writes() != 2 {
		t.Fatalf("writes: %d, want 2 (the create and the takeover)", f.Writes())
	}
}

// Install builds the program the code under test starts, and names it in
// the environment the way production finds it.
func TestInstallBuildsTheBucketProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds swampj-bucket")
	}
	t.Setenv(remote.BucketProgramEnv, "")
	p, err := Install(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s: %v %v", p, fi, err)
	}
	if got := os.Getenv(remote.BucketProgramEnv); got != p {
		t.Fatalf("%s=%q, want %q", remote.BucketProgramEnv, got, p)
	}
}
