package ops

import "github.com/swampj/swampj/ops/remote"

// CloseBucketClients ends the swampj-bucket processes this process started
// to reach a remote datastore's bucket (a doctor of an S3 or GCS repo, the
// run guard of a wrapped swamp command), and waits for them. A host calls
// it once, at exit; with none started it does nothing. Each would end on
// its own when this process exits (its input closes), without releasing a
// bucket lock still held: release those first.
func CloseBucketClients() { remote.CloseBucketAgents() }
