// Package meta is swamp's metadata.yaml: the typed record, its validation
// (what swamp's zod schema accepts) and its byte-exact encoding (what
// @std/yaml 1.1.0 writes). See swamp-format §2.4.
package meta

// Tag is one entry of the tags map. Tags keep insertion order (as swamp's
// JavaScript objects do, integer-like keys first), so they are a slice.
type Tag struct {
	Key   string
	Value string
}

// Tags is an ordered string map.
type Tags []Tag

// Get returns the value of key and whether it is present.
func (t Tags) Get(key string) (string, bool) {
	for _, kv := range t {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

// Set replaces the value of key in place, or appends it.
func (t *Tags) Set(key, value string) {
	for i, kv := range *t {
		if kv.Key == key {
			(*t)[i].Value = value
			return
		}
	}
	*t = append(*t, Tag{Key: key, Value: value})
}

// Owner is ownerDefinition. Empty strings are absent keys.
type Owner struct {
	DefinitionHash string
	OwnerType      string // model-method | workflow-step | manual
	OwnerRef       string
	WorkflowID     string
	WorkflowRunID  string
	WorkflowName   string
	JobName        string
	StepName       string
	Source         string
}

// GarbageCollection is either a positive count (N > 0) or a duration string
// such as "30d" (Duration != ""). Exactly one is set in a valid record.
type GarbageCollection struct {
	N        int64
	Duration string
}

// Metadata is one version's metadata.yaml.
type Metadata struct {
	ID                string
	Name              string
	Version           int64
	ContentType       string
	Lifetime          string
	GarbageCollection GarbageCollection
	Streaming         bool
	Tags              Tags
	Owner             Owner
	CreatedAt         string // as written; ISO-8601 UTC with Z
	Size              *int64 // nil: absent
	Checksum          string // "": absent; lowercase hex SHA-256 of raw
	Lifecycle         string // "": absent (active); "deleted"
	RenamedTo         string // "": absent
}
