package meta

import "github.com/swampj/swampj/ops/swampyaml"

// Encode returns metadata.yaml exactly as swamp writes it for m (swamp-format §2.4,
// byte-exact examples in swamp-format §2.4.2): Data.toData's key order — id, name,
// version, contentType, lifetime, garbageCollection, streaming (always),
// tags, ownerDefinition, createdAt, then size, checksum, lifecycle,
// renamedTo when set — with ownerDefinition in schema order, tags in
// JavaScript order, serialised by @std/yaml stringify (StyleMetadata).
//
// m is validated first (Validate), so Encode never produces a file swamp
// would refuse. As Data.create does, a zero-duration lifetime is written as
// workflow. CreatedAt is written as given; use NowISO for swamp's form.
func Encode(m *Metadata) ([]byte, error) {
	if err := Validate(m); err != nil {
		return nil, err
	}
	return swampyaml.Marshal(toNode(m), swampyaml.StyleMetadata)
}

func toNode(m *Metadata) *swampyaml.Node {
	var gc *swampyaml.Node
	if m.GarbageCollection.Duration != "" {
		gc = swampyaml.String(m.GarbageCollection.Duration)
	} else {
		gc = swampyaml.Int(m.GarbageCollection.N)
	}
	doc := swampyaml.Map(
		swampyaml.Pair{Key: "id", Value: swampyaml.String(m.ID)},
		swampyaml.Pair{Key: "name", Value: swampyaml.String(m.Name)},
		swampyaml.Pair{Key: "version", Value: swampyaml.Int(m.Version)},
		swampyaml.Pair{Key: "contentType", Value: swampyaml.String(m.ContentType)},
		swampyaml.Pair{Key: "lifetime", Value: swampyaml.String(NormalizeLifetime(m.Lifetime))},
		swampyaml.Pair{Key: "garbageCollection", Value: gc},
		swampyaml.Pair{Key: "streaming", Value: swampyaml.Bool(m.Streaming)},
		swampyaml.Pair{Key: "tags", Value: tagsNode(m.Tags)},
		swampyaml.Pair{Key: "ownerDefinition", Value: ownerNode(&m.Owner)},
		swampyaml.Pair{Key: "createdAt", Value: swampyaml.String(m.CreatedAt)},
	)
	if m.Size != nil {
		doc.Pairs = append(doc.Pairs, swampyaml.Pair{Key: "size", Value: swampyaml.Int(*m.Size)})
	}
	optional := []struct{ key, value string }{
		{"checksum", m.Checksum},
		{"lifecycle", m.Lifecycle},
		{"renamedTo", m.RenamedTo},
	}
	for _, o := range optional {
		if o.value != "" {
			doc.Pairs = append(doc.Pairs, swampyaml.Pair{Key: o.key, Value: swampyaml.String(o.value)})
		}
	}
	return doc
}

func tagsNode(t Tags) *swampyaml.Node {
	n := swampyaml.Map()
	for _, tag := range t.JSOrder() {
		n.Pairs = append(n.Pairs, swampyaml.Pair{Key: tag.Key, Value: swampyaml.String(tag.Value)})
	}
	return n
}

// ownerFields lists ownerDefinition's keys in zod schema order, which is
// the order swamp writes whatever order its caller used (swamp-format §2.4).
func ownerFields(o *Owner) []struct {
	key   string
	value *string
} {
	return []struct {
		key   string
		value *string
	}{
		{"definitionHash", &o.DefinitionHash},
		{"ownerType", &o.OwnerType},
		{"ownerRef", &o.OwnerRef},
		{"workflowId", &o.WorkflowID},
		{"workflowRunId", &o.WorkflowRunID},
		{"workflowName", &o.WorkflowName},
		{"jobName", &o.JobName},
		{"stepName", &o.StepName},
		{"source", &o.Source},
	}
}

func ownerNode(o *Owner) *swampyaml.Node {
	n := swampyaml.Map()
	for _, f := range ownerFields(o) {
		if *f.value != "" {
			n.Pairs = append(n.Pairs, swampyaml.Pair{Key: f.key, Value: swampyaml.String(*f.value)})
		}
	}
	return n
}
