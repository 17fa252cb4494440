package remote_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/swampj/swampj/ops/remote"
)

// A GCS datastore is found from .swamp.yaml and from SWAMP_DATASTORE, its
// cache where swamp keeps it, its config in Cache.GCS.
func TestDiscoverGCS(t *testing.T) {
	root := t.TempDir()
	repoDir := filepath.Join(root, "repo")
	write(t, filepath.Join(repoDir, ".swamp.yaml"), []byte(`repoId: `+fxRepoID+`
datastore:
  type: "@swamp/gcs-datastore"
  config:
    bucket: "team-bucket"
    prefix: "repoA"
    projectId: "p1"
    apiEndpoint: "http://127.0.0.1:4443"
`))
	env := map[string]string{"HOME": filepath.Join(root, "home")}
	look := func(k string) string { return env[k] }
	c, err := remote.Discover(repoDir, remote.Options{Env: look})
	if err != nil {
		t.Fatal(err)
	}
	want := remote.GCSConfig{Bucket: "team-bucket", Prefix: "repoA", ProjectID: "p1", APIEndpoint: "http://127.0.0.1:4443"}
	if c.Type != remote.GCSType || c.GCS == nil || *c.GCS != want || c.Bucket() != "team-bucket" || c.Prefix() != "repoA" ||
		c.Dir != filepath.Join(root, "home", ".swamp", "repos", fxRepoID) || c.LockKey() != ".datastore.lock" {
		t.Fatalf("from .swamp.yaml: %+v %+v", c, c.GCS)
	}
	env["SWAMP_DATASTORE"] = `@swamp/gcs-datastore:{"bucket":"env-bucket","prefix":"p"}`
	c, err = remote.Discover(repoDir, remote.Options{Env: look})
	if err != nil || c.Source != "SWAMP_DATASTORE" || c.GCS == nil || c.Bucket() != "env-bucket" || c.Prefix() != "p" {
		t.Fatalf("from SWAMP_DATASTORE: %v %+v", err, c)
	}
	env["SWAMP_DATASTORE"] = `@swamp/gcs-datastore:{bucket`
	if _, err := remote.Discover(repoDir, remote.Options{Env: look}); err == nil || errors.Is(err, remote.ErrUnknownType) {
		t.Fatalf("unparsable SWAMP_DATASTORE JSON: %v", err)
	}
}
