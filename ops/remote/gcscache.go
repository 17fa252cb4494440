package remote

// The GCS extension (@swamp/gcs-datastore) keeps the same local cache as
// the S3 one: the same directory, the same .datastore-index.json, the same
// sidecar, pulled in place by size and pushed by size or SHA-256
// (gcs_cache_sync.ts at swamp-club/swamp-extensions c25ec917). Two things
// differ, and only they are parametrised: the sidecar records the GCS
// generation of the remote index (remoteIndexGeneration) where S3 records
// its ETag (index.go), and the bucket lock is taken by generation
// preconditions (ops/remote/bucket/gcs.go). The doctor and the repair are shared.

import (
	"encoding/json"

	"github.com/swampj/swampj/ops/swampyaml"
)

// GCSType is the datastore type of the GCS extension. swamp remaps no
// legacy name to it.
const GCSType = "@swamp/gcs-datastore"

// GCSConfig is the extension's configuration (gcs.ts gcsConfigSchema);
// the tuning fields (concurrency, timeouts) do not concern the cache.
type GCSConfig struct {
	Bucket    string `json:"bucket"`
	Prefix    string `json:"prefix,omitempty"`
	ProjectID string `json:"projectId,omitempty"`
	// APIEndpoint replaces https://storage.googleapis.com (an emulator);
	// with it set the extension sends no credentials, and neither does
	// swampj.
	APIEndpoint string `json:"apiEndpoint,omitempty"`
}

func gcsFrom(n *swampyaml.Node) *GCSConfig {
	return &GCSConfig{Bucket: str(n, "bucket"), Prefix: str(n, "prefix"), ProjectID: str(n, "projectId"), APIEndpoint: str(n, "apiEndpoint")}
}

// gcsFromEnv is the JSON after the type in SWAMP_DATASTORE.
func gcsFromEnv(val string) (*GCSConfig, error) {
	var g GCSConfig
	if err := json.Unmarshal([]byte(val), &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// Bucket is the bucket the datastore lives in, whatever its kind.
func (c *Cache) Bucket() string {
	if c.GCS != nil {
		return c.GCS.Bucket
	}
	return c.S3.Bucket
}

// Prefix is the key prefix of the datastore in its bucket.
func (c *Cache) Prefix() string {
	if c.GCS != nil {
		return c.GCS.Prefix
	}
	return c.S3.Prefix
}
