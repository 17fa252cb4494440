// Package bucketwire is the line protocol between swampj and swampj-bucket,
// the program that holds the S3 and GCS clients so that swampj itself links
// neither SDK (their packages' init work would run at every start of every
// local command). One JSON object a line each way: a Request with an id,
// answered by one Response with the same id, in any order; several
// requests may be in flight (a lock waits while a listing runs).
//
// The types here are shared by both ends and import nothing that costs a
// start-up: this package is linked into swampj.
package bucketwire

import "time"

// Operations a Request names.
const (
	OpOpen   = "open"   // Kind, Config, PID → Client
	OpLock   = "lock"   // Client, Key, TimeoutMs → Handle (the heartbeat runs in the agent)
	OpUnlock = "unlock" // Handle: stop the heartbeat, delete the lock if still ours
	OpList   = "list"   // Client, Under → Objects
	OpGet    = "get"    // Client, Rel → Data, Found
	OpCancel = "cancel" // Target: the in-flight request to give up (its caller's context ended)
)

// Datastore kinds an open names.
const (
	KindS3  = "s3"
	KindGCS = "gcs"
)

// Request is one line from swampj to the agent.
type Request struct {
	ID        int64  `json:"id"`
	Op        string `json:"op"`
	Kind      string `json:"kind,omitempty"`
	Config    []byte `json:"config,omitempty"` // the datastore config as JSON (S3Config or GCSConfig of ops/remote)
	PID       int    `json:"pid,omitempty"`    // swampj's pid, written into the lock body
	Client    int64  `json:"client,omitempty"`
	Key       string `json:"key,omitempty"`
	TimeoutMs int64  `json:"timeoutMs,omitempty"`
	Handle    int64  `json:"handle,omitempty"`
	Under     string `json:"under,omitempty"`
	Rel       string `json:"rel,omitempty"`
	Target    int64  `json:"target,omitempty"`
}

// Response is one line from the agent, answering the Request of the same ID.
type Response struct {
	ID      int64             `json:"id"`
	Client  int64             `json:"client,omitempty"`
	Handle  int64             `json:"handle,omitempty"`
	Objects map[string]Object `json:"objects,omitempty"`
	Data    []byte            `json:"data,omitempty"`
	Found   bool              `json:"found,omitempty"`
	Err     *Error            `json:"error,omitempty"`
}

// Object is one object of the bucket as a listing shows it: Hash is the S3
// ETag or the GCS MD5 hash, so a rewrite with the same bytes keeps it.
type Object struct {
	Size int64  `json:"size"`
	Hash string `json:"hash"`
}

// Error kinds: what ops/remote rebuilds from an Error.
const (
	ErrAccess = "access" // the bucket could not be used at all (Access names why)
	ErrBusy   = "busy"   // the lock stayed held for the whole timeout
	ErrFailed = "failed" // anything else
)

// Access kinds: the bucket could not be used at all. They are the error
// codes of the CLI as well.
const (
	AccessNoBucket      = "remote_bucket_not_found"
	AccessUnreachable   = "remote_unreachable"
	AccessCredentials   = "remote_credentials_refused"
	AccessNoCredentials = "remote_no_credentials"
)

// Error is a failed request. Message is the cause alone (for ErrAccess),
// the account of who held the lock (ErrBusy), or the whole message.
type Error struct {
	Kind     string `json:"kind"`
	Access   string `json:"access,omitempty"`
	Bucket   string `json:"bucket,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	Message  string `json:"message"`
}

// LockTTL is the TTL swampj writes into its lock (the extensions' default).
const LockTTL = 30 * time.Second

// LockInfo is the lock object's body (LockInfo in the extensions'
// interfaces.ts).
type LockInfo struct {
	Holder     string `json:"holder"`
	Hostname   string `json:"hostname"`
	PID        int    `json:"pid"`
	AcquiredAt string `json:"acquiredAt"`
	TTLMs      int64  `json:"ttlMs"`
	Nonce      string `json:"nonce"`
}

// NoCredentials is the start of an ErrAccess AccessNoCredentials message
// whose cause is that the S3 SDK's chain found nothing; ops/remote turns
// it back into its ErrNoCredentials.
const NoCredentials = "no S3 credentials found (looked in the AWS_* variables, ~/.aws/credentials and ~/.aws/config " +
	"with AWS_PROFILE, SSO, web identity and the instance role)"
