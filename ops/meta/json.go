package meta

import (
	"bytes"
	"encoding/json"
	"strings"
)

// JSON renders the metadata as a JSON object with swamp's keys in
// swamp's order (swamp-format §2.4): tags in their own order, absent optional keys left
// out.
func (m *Metadata) JSON() json.RawMessage {
	if m == nil {
		return json.RawMessage("null")
	}
	var b strings.Builder
	b.WriteByte('{')
	field := func(k string, v any) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(jsonValue(k))
		b.WriteByte(':')
		if raw, ok := v.(json.RawMessage); ok {
			b.Write(raw)
			return
		}
		b.Write(jsonValue(v))
	}
	field("id", m.ID)
	field("name", m.Name)
	field("version", m.Version)
	field("contentType", m.ContentType)
	field("lifetime", m.Lifetime)
	if m.GarbageCollection.Duration != "" {
		field("garbageCollection", m.GarbageCollection.Duration)
	} else {
		field("garbageCollection", m.GarbageCollection.N)
	}
	field("streaming", m.Streaming)
	field("tags", json.RawMessage(TagsJSON(m.Tags)))
	var owner strings.Builder
	owner.WriteByte('{')
	for _, kv := range [][2]string{
		{"definitionHash", m.Owner.DefinitionHash}, {"ownerType", m.Owner.OwnerType}, {"ownerRef", m.Owner.OwnerRef},
		{"workflowId", m.Owner.WorkflowID}, {"workflowRunId", m.Owner.WorkflowRunID}, {"workflowName", m.Owner.WorkflowName},
		{"jobName", m.Owner.JobName}, {"stepName", m.Owner.StepName}, {"source", m.Owner.Source},
	} {
		if kv[1] == "" {
			continue
		}
		if owner.Len() > 1 {
			owner.WriteByte(',')
		}
		owner.Write(jsonValue(kv[0]))
		owner.WriteByte(':')
		owner.Write(jsonValue(kv[1]))
	}
	owner.WriteByte('}')
	field("ownerDefinition", json.RawMessage(owner.String()))
	field("createdAt", m.CreatedAt)
	if m.Size != nil {
		field("size", *m.Size)
	}
	for _, kv := range [][2]string{{"checksum", m.Checksum}, {"lifecycle", m.Lifecycle}, {"renamedTo", m.RenamedTo}} {
		if kv[1] != "" {
			field(kv[0], kv[1])
		}
	}
	b.WriteByte('}')
	return json.RawMessage(b.String())
}

// jsonValue encodes v without HTML escaping and without the newline an
// Encoder adds.
func jsonValue(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
